"""This run's findings, the chart's second section: what a reader would otherwise dig out of the tables. Wrong
numbers and kernels run outside the compiled graph, by style; where compiling makes a style's call slower (or much
faster) on the GPU than the same style eagerly, beyond both dispersions, with the GPU work a path adds; where one
style's host time per call is several times another's; where pure PyTorch (the control) beats or matches every
kernel style. Drawn from the records alone."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from harness.records.record import Record
from harness.report.casebugs import BrokenCase, FailingKernel
from harness.report.marks import GRAPH_BREAK, SYMBOLS, wrap, wrong_numbers
from harness.report.mismatch import WrongKernel
from harness.report.speed import BANDWIDTH, CONTROL, EAGER, LAUNCH, Point, geomean, us
from harness.spec import Status

HOST_APART = 2.0  # a style's host time per call this many times another's (same path, geometric mean) is a finding
MUCH_FASTER = 1.5  # a compiled call this many times faster than its eager one is a finding
SLOWER_BY = 0.05  # ... and one slower by this much at least, beyond both dispersions
CONTROL_APART = 1.5  # pure PyTorch eagerly this many times the fastest kernel style's GPU time is a finding
SHOWN = 6  # names listed per finding, at most


@dataclass(frozen=True)
class Change:
    """A path's GPU time against the same style's eager on the same case, in one regime."""

    point: Point
    eager: Point

    @property
    def ratio(self) -> float:
        return self.point.gpu_us / self.eager.gpu_us if self.eager.gpu_us else float("inf")

    @property
    def added(self) -> list[str]:
        """The GPU work this path's call runs that the eager call does not (by name)."""
        return [name for name in self.point.kernel_names if name not in self.eager.kernel_names]


def eager_of(path: str, paths: set[str]) -> str | None:
    """The eager path a path's calls compare with: ``X_eager`` for ``X_compile`` (a training step with a training
    step), none for an eager path itself (``eager``, ``X_eager``), else ``eager``."""
    if path == EAGER or path.endswith("_eager"):
        return None
    if path.endswith("_compile"):
        own = path.removesuffix("_compile") + "_eager"
        return own if own in paths else None
    return EAGER


def against_eager(points: Iterable[Point]) -> list[Change]:
    """Every timed cell of a compiled path with its style's eager cell (``eager_of``) on the same case, in the same
    regime."""
    listed = list(points)
    at = {(p.case, p.style, p.path): p for p in listed}
    paths = {p.path for p in listed}
    changes = []
    for p in listed:
        base = eager_of(p.path, paths)
        if base is not None and (p.case, p.style, base) in at:
            changes.append(Change(p, at[p.case, p.style, base]))
    return changes


def slower_than_eager(changes: list[Change]) -> list[Change]:
    """The changes slower than eager by ``SLOWER_BY`` at least and beyond both timings' dispersions."""
    return [c for c in changes if c.point.slower(c.eager, SLOWER_BY) is not None]


def faster_than_eager(changes: list[Change]) -> list[Change]:
    """The changes at least ``MUCH_FASTER`` times faster than eager, beyond both dispersions."""
    return [c for c in changes if c.ratio * MUCH_FASTER <= 1 and c.eager.slower(c.point)]


def _names(values: Iterable[str]) -> str:
    listed = list(dict.fromkeys(values))
    more = f" (+{len(listed) - SHOWN} more)" if len(listed) > SHOWN else ""
    return ", ".join(f"`{v}`" for v in listed[:SHOWN]) + more


def _by_path(changes: list[Change], total: Counter[str], regime: str, word: str) -> list[str]:
    out = []
    for path in dict.fromkeys(c.point.path for c in changes):
        on = [c for c in changes if c.point.path == path]
        low, high = min(c.ratio for c in on), max(c.ratio for c in on)
        spread = f"{low:.2f}×" if abs(high - low) < 0.005 else f"{low:.2f}-{high:.2f}×"
        added = Counter(name for c in on for name in c.added)
        adds = f"; its call adds {_names(n for n, _ in added.most_common())}" if added and word == "slower" else ""
        styles = _names(c.point.style for c in on)
        base = on[0].eager.path
        line = (
            f"`{path}` ({regime}-bound): {len(on)} of {total[path]} cells {word} ({spread} `{base}`'s GPU time){adds}"
        )
        out.append(f"  - {line}: {styles}")
    return out


def speed_findings(launch: list[Point], bandwidth: list[Point]) -> list[str]:
    """Compiling slower or much faster than eager, per regime and path; the host time apart; the control."""
    out: list[str] = []
    for regime, listed in ((BANDWIDTH, bandwidth), (LAUNCH, launch)):
        changes = against_eager(listed)
        total = Counter(c.point.path for c in changes)
        slow, fast = slower_than_eager(changes), faster_than_eager(changes)
        if slow:
            head = f"the same style's GPU time per call {100 * SLOWER_BY:.0f}% or more over eager's and beyond both "
            head += "dispersions"
            out.append(f"- **Compiled slower than eager**: {head}, {regime}-bound:")
            out += _by_path(slow, total, regime, "slower")
        if fast:
            out.append(f"- **Compiled at least {MUCH_FASTER}× faster than eager** on the GPU, {regime}-bound:")
            out += _by_path(fast, total, regime, "faster")
    out += host_findings(launch)
    out += control_findings(bandwidth or launch)
    return out


def host_findings(launch: list[Point]) -> list[str]:
    """Per path, the styles whose host time per call (geometric mean over the cases) is ``HOST_APART`` times the
    quickest style's, among the kernel styles."""
    lines = []
    for path in dict.fromkeys(p.path for p in launch):
        hosts: dict[str, list[float]] = {}
        for p in launch:
            if p.path == path and p.style != CONTROL and p.host_us:
                hosts.setdefault(p.style, []).append(p.host_us)
        means = {style: geomean(values) for style, values in hosts.items()}
        if len(means) < 2:
            continue
        quick = min(means, key=means.__getitem__)
        apart = {s: m for s, m in means.items() if m >= HOST_APART * means[quick]}
        if apart:
            named = _names(sorted(apart, key=apart.__getitem__, reverse=True))
            least, most = min(apart.values()), max(apart.values())
            spread = us(most) if us(least) == us(most) else f"{us(least)}-{us(most)}"
            times = f"{most / means[quick]:.1f}×" if len(apart) == 1 else f"up to {most / means[quick]:.1f}×"
            lines.append(f"  - `{path}`: {named} {spread} µs against `{quick}`'s {us(means[quick])} µs ({times})")
    if not lines:
        return []
    head = f"- **Host time per call** at least {HOST_APART:.0f}× the quickest kernel style's (launch-bound size):"
    return [head, *lines]


def control_findings(listed: list[Point]) -> list[str]:
    """Per case: pure PyTorch eagerly ``CONTROL_APART`` times the fastest kernel style's GPU time (the kernel pays
    off), and, compiled, the control at or under every kernel style's (compiling PyTorch is as good)."""
    regime = listed[0].regime if listed else BANDWIDTH
    pay, matched = [], []
    for case in dict.fromkeys(p.case for p in listed):
        for path, into in ((EAGER, pay), ("compile", matched)):
            on = [p for p in listed if p.case == case and p.path == path]
            control = next((p for p in on if p.style == CONTROL), None)
            kernels = [p for p in on if p.style != CONTROL]
            if control is None or not kernels:
                continue
            best = min(kernels, key=lambda p: p.gpu_us)
            if path == EAGER and control.gpu_us >= CONTROL_APART * best.gpu_us:
                into.append(f"`{case}` {us(control.gpu_us)} µs against `{best.style}`'s {us(best.gpu_us)} µs")
            if path != EAGER and control.slower(best) is None:
                into.append(f"`{case}` {us(control.gpu_us)} µs against `{best.style}`'s {us(best.gpu_us)} µs")
    out = []
    if pay:
        times = f"pure PyTorch takes {CONTROL_APART}× or more the fastest kernel style's GPU time"
        out.append(f"- **The kernels pay off eagerly** ({regime}-bound): {times}: {'; '.join(pay)}")
    if matched:
        head = "**Compiled PyTorch matches or beats every kernel style** on `compile`"
        out.append(f"- {head} ({regime}-bound; within the dispersions or faster): {'; '.join(matched)}")
    return out


def verdict_findings(
    cells: Iterable[Record], left: Sequence[WrongKernel | BrokenCase | FailingKernel] = ()
) -> list[str]:
    """Wrong numbers by case and style (a kernel wrong in itself: that one bug, in a line); the kernels failing as
    written; the cases broken in their own code; kernels run outside the compiled graph by style."""
    records = list(cells)
    return _wrong(records, left) + _left_out(left, FailingKernel) + _left_out(left, BrokenCase) + _outside(records)


def _wrong(records: list[Record], left: Sequence[WrongKernel | BrokenCase | FailingKernel]) -> list[str]:
    kernels = {one.case: one for one in left if isinstance(one, WrongKernel)}
    wrong: dict[str, dict[str, list[str]]] = {}
    for r in records:
        if wrong_numbers(r):
            wrong.setdefault(r.case, {}).setdefault(r.style, []).append(r.path)
    if not wrong:
        return []
    count = sum(len(paths) for by_style in wrong.values() for paths in by_style.values())
    out = [f"- {SYMBOLS['wrong']} **Silently wrong numbers** in {count} cells:"]
    for case, by_style in wrong.items():
        styles = "; ".join(f"`{style}` on {_names(paths)}" for style, paths in by_style.items())
        kernel = kernels.get(case)
        out.append(f"  - `{case}`: " + (f"{kernel.line()}; its wrong cells are that one bug" if kernel else styles))
    return out


LEFT_OUT_HEADS = {  # the findings' line over each kind of case the goals leave out, but the wrong kernels
    FailingKernel: "**Kernels that fail as written**, alike in every style (their cells are left out):",
    BrokenCase: "**Cases broken in their own code**, not in the styles (their cells are left out):",
}


def _left_out(left: Sequence[WrongKernel | BrokenCase | FailingKernel], kind: type) -> list[str]:
    """The cases of ``left`` of ``kind``, each in its line, under ``LEFT_OUT_HEADS``' line for it."""
    found = [one for one in left if isinstance(one, kind)]
    if not found:
        return []
    return [f"- {SYMBOLS['error']} {LEFT_OUT_HEADS[kind]}", *(f"  - `{one.case}`: {one.line()}" for one in found)]


def _outside(records: list[Record]) -> list[str]:
    broke: dict[str, list[str]] = {}
    for r in records:
        if Status.GRAPH_BREAK in r.attempts:
            broke.setdefault(r.style, []).append(f"{r.case}/{r.path}")
    if not broke:
        return []
    count = sum(map(len, broke.values()))
    head = f"- {GRAPH_BREAK} **The kernel ran outside the compiled graph** in {count} cells (right numbers):"
    return [head, *(f"  - `{style}`: {_names(where)}" for style, where in broke.items())]


def section(
    cells: list[Record],
    launch: list[Point],
    bandwidth: list[Point],
    contradicting: int,
    left: Sequence[WrongKernel | BrokenCase | FailingKernel] = (),
) -> list[str]:
    """``## Findings``: verdicts first (``left``: the cases whose cells measure nothing of the styles), then speed;
    the docs' contradicted claims counted."""
    found = verdict_findings(cells, left) + speed_findings(launch, bandwidth)
    if contradicting:
        found.append(
            f"- **{contradicting} cells contradict the docs**: [Contradicts the docs](#contradicts-the-docs) lists the "
            "claims."
        )
    if not found:
        return []
    return ["## Findings", "", *(line for item in found for line in wrap(item, "    ")), ""]
