"""The instrument held to its own repro on case shapes nobody wrote (tests/drawn.py): hypothesis draws cases over
the Case API's axes, the harness runs them under Triton's interpreter on the paths that run on a CPU, and

- every failure is reproduced by its script in a fresh process (no harness suspect), and a sample of cells of every
  status, passing ones included, gives the same verdict through ``repro CELL`` run on its own;
- a case correct by construction is never ``wrong``;
- a planted bug (a mask off by one, a wrong scale in the backward) is ``wrong`` in every style that runs it.

``HARNESS_DRAWN_EXAMPLES`` (default 1: the same 4 cases each run, 320 cells, and the 2 kept examples beside them in
the eager paths' run of each list) sets how many lists of cases are drawn, ``HARNESS_DRAWN_CASES`` (default 4) how
many cases a list holds, and the planted bugs run on half as many; ``HARNESS_DRAWN_RANDOM=1`` draws new ones and
``HARNESS_DRAWN_SHRINK=1`` shrinks a failure to a minimal list, each step a whole harness run (``nox -s selftest``
sets all of them: 25 lists of 8). The fast tier checks 300 more drawn shapes at load (tests/fast/test_drawn_shapes.py).
"""

import contextlib
import dataclasses
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from harness.execution.confirm import Scripts
from harness.records.files import read_results
from harness.records.record import Record
from harness.spec import Status
from tests.conftest import REPO, TOLERANCES
from tests.drawn import FOUND, Shape, case_lists, module_source, shapes

EXAMPLES = int(os.environ.get("HARNESS_DRAWN_EXAMPLES", "1"))
CASES_PER_EXAMPLE = int(os.environ.get("HARNESS_DRAWN_CASES", "4"))
STYLES = [
    "raw_jit",
    "autotune_heuristics",
    "triton_op",
    "triton_op_autotune",
    "custom_op",
    "custom_op_heuristics_autotune",
    "control",
    "as_shipped",
]
PATHS = {  # in two runs, which pytest-xdist deals to two workers (the compiled training step costs most)
    "train_compile": {"train_compile": 1},
    "other-paths": {
        "eager": 2, "train_eager": 2, "cpu_fallback": 1, "vmap": 1, "flop_counter": 1, "subclass_eager": 1,
        "opcheck": 1, "fullgraph": 1, "export_nonstrict": 1,
    },
}  # fmt: skip
SAMPLED_STATUSES = (Status.PASS, Status.ERROR, Status.WRONG, Status.BLIND)
SHRINK = os.environ.get("HARNESS_DRAWN_SHRINK") == "1"  # each shrinking step is a whole harness run: opt-in
DRAWN = settings(
    max_examples=EXAMPLES,
    derandomize=os.environ.get("HARNESS_DRAWN_RANDOM") != "1",
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=list(HealthCheck),
    phases=(Phase.explicit, Phase.generate, *((Phase.shrink,) if SHRINK else ())),
)


def run_drawn(folder: Path, cases: list[Shape], paths: dict[str, int], bug: str | None = None) -> list[Record]:
    """Write the cases as a module and a matrix of STYLES x ``paths`` beside it, run the harness on them under the
    interpreter (confirming every failure), and return the records."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "drawn_cases.py").write_text(module_source(cases, bug))
    lines = ['cases = ["drawn_cases"]', f"styles = {STYLES!r}", "[paths]"]
    lines += [
        f'{path} = {{ device = "{"cpu" if path.startswith("cpu") else "cuda"}", timeout = 240, examples = {examples} }}'
        for path, examples in paths.items()
    ]
    (folder / "m.toml").write_text("\n".join(lines) + "\n" + TOLERANCES)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "run",
            "--matrix",
            "m.toml",
            "--interpret",
            "--report-dir",
            "out",
            "-n",
            "2",
            "-q",
            "-p",
            "no:benchmark",
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=1500,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(REPO)])},
    )
    assert done.returncode == 0, (done.returncode, done.stdout[-3000:], done.stderr[-2000:])
    return list(read_results(folder / "out" / "results.json").cells)


def sample(records: list[Record]) -> list[Record]:
    """One cell of each status of each case (the first in the chart's order): what ``repro CELL`` is checked on."""
    chosen: dict[tuple[str, Status], Record] = {}
    for record in records:
        if record.status in SAMPLED_STATUSES:
            chosen.setdefault((record.case, record.status), record)
    return list(chosen.values())


def same_verdict(record: Record, returncode: int | None, output: str) -> bool:
    """Whether a cell's script, run on its own, said what the cell's record says."""
    if record.status == Status.PASS:
        return returncode == 0 and f"no failure: {record.id}" in output
    if returncode in (0, None):
        return False
    said = {Status.WRONG: "wrong numbers:", Status.BLIND: "FlopCounterMode counted"}.get(record.status)
    return (said or f"{record.error_type}:") in output


# the shapes a drawn run found once (tests/drawn.py), named apart from the drawn list they run beside
KEPT = [dataclasses.replace(shape, id=f"found{index}") for index, shape in enumerate(FOUND)]


@pytest.mark.parametrize("paths", PATHS.values(), ids=PATHS.keys())
@given(cases=case_lists(CASES_PER_EXAMPLE))
@DRAWN
def test_drawn_cases_give_the_verdicts_their_scripts_give(paths: dict[str, int], cases: list[Shape], tmp_path_factory):
    """The eager paths' run holds the shapes found once (KEPT) beside the drawn list: what they broke (a case the
    harness rejected as broken; a module's parameter handed to the reference in the wrong place) shows on every
    path, and one run of the harness takes them all (a run of their own cost CI 127 s, most of it the run's own
    start and end; the drawn list runs train_compile too)."""
    if paths is PATHS["other-paths"]:
        cases = [*cases, *KEPT]
    else:  # the compiled training step: half the list (its 32 cells were a fifth of CI's worker time)
        cases = cases[: max(1, len(cases) // 2)]
    check_drawn(cases, paths, tmp_path_factory.mktemp("drawn"))


def check_drawn(cases: list[Shape], paths: dict[str, int], folder: Path) -> None:
    """The run of ``cases`` on ``paths`` finds no suspect and no ``wrong``, and a sample of its cells' scripts, run
    on their own, give the cells' verdicts."""
    records = run_drawn(folder, cases, paths)
    assert len(records) == len(cases) * len(STYLES) * len(paths)
    suspects = [r.id for r in records if r.confirmation is not None and not r.confirmation.get("reproduced")]
    assert not suspects, suspects  # every failure its script showed
    wrong = [f"{r.id}: {r.error}" for r in records if r.status == Status.WRONG]
    assert not wrong, wrong  # every case is right by construction
    sampled = sample(records)
    made = subprocess.run(  # one ``repro CELL ...`` for the sample: a process of its own, as a user runs it
        [sys.executable, "-m", "harness", "repro", *(r.id for r in sampled), "--results", "out/results.json",
         "--out", "one"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    scripts = {folder / "one" / f"{record.id}.py": record for record in sampled}
    with contextlib.chdir(folder), ThreadPoolExecutor(2) as pool:  # run where the drawn module imports
        runs = dict(zip(scripts, pool.map(lambda script: Scripts().run(script, 300.0), scripts), strict=True))
    differ = [
        f"{r.id} ({r.status.value}): {runs[s].last_line}"
        for s, r in scripts.items()
        if not same_verdict(r, runs[s].returncode, runs[s].output)
    ]
    assert not differ, differ


@pytest.mark.parametrize(("bug", "path"), [("mask", "eager"), ("backward", "train_eager")])
@given(cases=st.tuples(*(shapes(index) for index in range(max(1, CASES_PER_EXAMPLE // 2)))).map(list))
@settings(DRAWN, max_examples=1)
def test_a_planted_bug_is_wrong_in_every_style_that_runs_it(bug: str, path: str, cases: list[Shape], tmp_path_factory):
    if bug == "backward":  # a Triton backward kernel to plant it in (a library's own backward is not the styles')
        cases = [
            Shape(**{**vars(shape), "backward": "kernel", "bias": None, "inplace": False, "shipped": None})
            for shape in cases
        ]
    records = run_drawn(tmp_path_factory.mktemp(bug), cases, {path: 1}, bug)
    ran = [r for r in records if r.style != "control" and r.status not in (Status.ERROR, Status.SKIP)]
    assert ran and all(r.status == Status.WRONG for r in ran), [(r.id, r.status.value) for r in ran]
    assert {r.status for r in records if r.style == "control"} == {Status.PASS}
