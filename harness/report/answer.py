"""The chart's first section, what a reader came for: per goal, the styles that pass every case on every path of it,
fastest first, with how fast they are and what their host time per call is; then, per case, the fastest style on the
compiled path, by how much, and whether the styles differ there in GPU time or in host time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tabulate import tabulate

from harness.report import goals as chart_goals
from harness.report.marks import escape, wrap
from harness.report.meta import goals
from harness.report.speed import CONTROL, Point, Speed, goal_speed, us

if TYPE_CHECKING:
    from harness.report.chart import Chart

COMPILED = "compile"  # the compiled path the per-case table answers for (else the first timed path but eager)
DETAIL = "#which-style-for-which-goal-in-detail"


def _mark(style: str, found: chart_goals.Answer, speed: Speed | None) -> str:
    """A style's cell under a goal: its GPU time × the fastest answering style (✅ where not timed), ⚠️ where it
    gives wrong numbers elsewhere; ``near`` for a near miss; empty when it misses the goal."""
    if style in found.near:
        return "near"
    if style not in found.passing:
        return ""
    rank = speed.ranks.get(style) if speed else None
    return (f"{rank.relative:.2f}×" if rank else "✅") + (" ⚠️" if style in found.wrong_elsewhere else "")


def _basis(speed: Speed | None) -> str:
    if speed is None or not speed.ranks:
        return "—"
    return f"`{speed.path}` {speed.regime[:6]}."


def goals_table(chart: Chart) -> list[str]:
    """Styles as rows, the goals whose paths ran as columns: whether each style meets each goal, and how fast it is
    against the fastest style that meets it; a last row says what the speed was compared on."""
    cells = list(chart.cells.values())
    controls = [s for wrapper, styles in chart.style_groups if wrapper == "control" for s in styles]
    answered: dict[str, tuple[chart_goals.Answer, Speed | None]] = {}
    for goal, paths in goals(chart.env).items():
        if not all(chart_goals.measured(p, chart.cells) for p in paths) or set(paths) & chart.unrecorded_paths:
            continue
        found = chart_goals.answer(goal, paths, chart.cells, chart.answered_cases, chart.candidates, controls)
        answered[goal] = (found, goal_speed(cells, paths, found.passing))
    note = chart_goals.left_out_note(chart.left_out, chart.answered_cases)
    left = [*wrap(note, ""), ""] if chart.left_out else []
    if not answered or not chart.answered_cases:
        return ["### Which style for which goal", "", *left] if left else []
    rows = [[f"`{style}`", *(_mark(style, *both) for both in answered.values())] for style in chart.candidates]
    rows.append(["*compared on*", *(_basis(speed) for _, speed in answered.values())])
    headers = ["style \\ goal", *(escape(goal, 60) for goal in answered)]
    return [
        "### Which style for which goal",
        "",
        *wrap(
            "A style meets a goal when it passes every case on every path of the goal, on every attempt. The number: "
            "its GPU time over the fastest style that meets the goal, per case, geometric mean (1.00×: the fastest), "
            "on the goal's first timed path, at the bandwidth size where timed (bandw.), else the case's own size "
            f"(launch.); ✅: meets it, not timed there; ⚠️: wrong numbers on another path; [near](#{DETAIL[1:]}): a "
            "near miss (the cells it fails are listed under the detail below).",
            "",
        ),
        "",
        tabulate(rows, headers=headers, tablefmt="github"),
        "",
        *left,
    ]


@dataclass(frozen=True)
class CaseSpeed:
    """One case on the compiled path: its timed kernel styles fastest first, in one regime, and the control."""

    case: str
    regime: str
    styles: list[Point]
    control: Point | None


def compiled_path(points: list[Point]) -> str | None:
    paths = list(dict.fromkeys(p.path for p in points))
    return COMPILED if COMPILED in paths else next((p for p in paths if p != "eager"), None)


def per_case(points: list[Point], path: str) -> list[CaseSpeed]:
    out = []
    for case in dict.fromkeys(p.case for p in points):
        on = [p for p in points if p.case == case and p.path == path]
        kernels = sorted((p for p in on if p.style != CONTROL), key=lambda p: p.gpu_us)
        if kernels:
            out.append(CaseSpeed(case, on[0].regime, kernels, next((p for p in on if p.style == CONTROL), None)))
    return out


def _gap(a: Point, b: Point) -> str:
    change = 100 * (a.gpu_us / b.gpu_us - 1)
    return f"+{change:.0f}%" + ("" if a.slower(b) is not None else " (noise)")


def differs_in(gpu: list[Point], hosts: list[Point]) -> str:
    """What sets the styles apart on this case: the GPU time (slowest over fastest, when beyond the dispersions) or
    the host time per call (most over least)."""
    if len(gpu) == 1:
        return "one style timed"
    fast, slow = gpu[0], gpu[-1]
    gpu_apart = slow.gpu_us / fast.gpu_us if slow.slower(fast) is not None else 1.0
    timed_hosts = [p for p in hosts if p.host_us]
    host_apart = 1.0
    if len(timed_hosts) > 1:
        host_apart = max(p.host_us or 0 for p in timed_hosts) / min(p.host_us or 0 for p in timed_hosts)
    if gpu_apart == 1.0 and host_apart < 1.25:
        return "neither: within the noise"
    what = "host time" if host_apart > gpu_apart else "GPU time"
    return f"**{what}** (GPU {gpu_apart:.2f}×, host {host_apart:.2f}×)"


def case_table(launch: list[Point], bandwidth: list[Point]) -> list[str]:
    """Per case, on the compiled path: the fastest kernel style and its GPU time (bandwidth size where timed, and
    the cell's own size), the runner-up and the slowest against it, the control, the host time per call of the
    quickest and slowest style, and what sets the styles apart."""
    path = compiled_path(bandwidth) or compiled_path(launch)
    if path is None:
        return []
    at_size = {c.case: c for c in per_case(bandwidth, path)}
    small = {c.case: c for c in per_case(launch, path)}
    rows = []
    for case in dict.fromkeys([*at_size, *small]):
        main = at_size.get(case) or small[case]
        best, styles = main.styles[0], main.styles
        runner = _gap(styles[1], best) + f" `{styles[1].style}`" if len(styles) > 1 else "—"
        worst = _gap(styles[-1], best) + f" `{styles[-1].style}`" if len(styles) > 2 else "—"
        control = f"{us(main.control.gpu_us)} ({main.control.gpu_us / best.gpu_us:.2f}×)" if main.control else "—"
        launch_case = small.get(case)
        hosts = [p for p in launch_case.styles if p.host_us] if launch_case else []
        quick = min(hosts, key=lambda p: p.host_us or 0) if hosts else None
        most = max(hosts, key=lambda p: p.host_us or 0) if hosts else None
        host = f"{us(quick.host_us)} `{quick.style}` - {us(most.host_us)} `{most.style}`" if quick and most else "—"
        small_best = f"{us(launch_case.styles[0].gpu_us)} `{launch_case.styles[0].style}`" if launch_case else "—"
        rows.append([
            f"`{case}`", f"{us(best.gpu_us)} `{best.style}`" + (" (own size)" if case not in at_size else ""),
            runner, worst, control, small_best, host, differs_in(styles, hosts or styles),
        ])  # fmt: skip
    headers = [
        "case", "fastest: GPU µs at the bandwidth size", "runner-up", "slowest", "pure PyTorch compiled",
        "fastest at the case's own size", "host µs per call (own size): least - most", "the styles differ in",
    ]  # fmt: skip
    return [
        f"### Fastest on `{path}`, per case",
        "",
        f"Each case's kernel styles on `{path}`: the fastest by GPU time per call, the others against it (noise: "
        "inside both dispersions), pure PyTorch compiled against it; at the case's own, launch-bound size the GPU "
        "time is a few kernels and the host time per call is what bounds a call.",
        "",
        tabulate(rows, headers=headers, tablefmt="github"),
        "",
    ]


def section(chart: Chart, launch: list[Point], bandwidth: list[Point], picture: str | None) -> list[str]:
    """``## The answer``: the goals table, the compiled path per case and its picture."""
    out = ["## The answer", "", *goals_table(chart), *case_table(launch, bandwidth)]
    if picture:
        out += [f"![Each style's GPU and host time per call on the compiled path, every case]({picture})", ""]
    return out if len(out) > 2 else []
