"""The upgrade gate: properties of the diff, known failures, flakes, and the CLI's exit codes on real files."""

import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import rerun
from harness.errors import InputError
from harness.records.results import SCHEMA
from harness.report import gate as reading
from harness.report import history
from harness.report.marks import wrong_numbers
from harness.spec import STATUSES, Status
from tests.conftest import harness_main, make_record, typed


class gate:
    CLASSES, KnownFailure = reading.CLASSES, reading.KnownFailure
    failing = staticmethod(reading.failing)
    load_known = staticmethod(reading.load_known)

    @staticmethod
    def diff(before: dict, after: dict, known=None) -> list:
        return reading.diff(typed(before), typed(after), known)

    @staticmethod
    def classify(before: dict | None, after: dict | None) -> str | None:
        cell = {"id": "a-b-c", "case": "a", "style": "b", "path": "c"}  # a bare {"status": ...} as one cell's
        return reading.classify(*(typed({**cell, **r}) if r is not None else None for r in (before, after)))

    @staticmethod
    def outcome(record: dict | None) -> str:
        return reading.outcome(typed(record))

    @staticmethod
    def check_comparable(before: dict, after: dict, before_file: str, after_file: str) -> None:
        reading.check_comparable(typed(before), typed(after), before_file, after_file)


def render_history(runs: list[dict]) -> str:
    return history.render([typed(run) for run in runs])


FLAKY_WRONG_FIELDS = {"status": "wrong", "error_type": "Mismatch", "error": "output: 1 / 9", "stage": "compare"}
CASES, STYLES, PATHS = ["add", "sin"], ["raw_jit", "triton_op"], ["eager", "compile", "aoti_strict"]


@st.composite
def runs(draw: st.DrawFn) -> dict:
    """A results file: a non-empty subset of the cells, each with a status (and an error where failing)."""
    ids = [(c, s, p) for c in CASES for s in STYLES for p in PATHS]
    chosen = draw(st.lists(st.sampled_from(ids), min_size=1, unique=True))
    cells = []
    for case, style, path in chosen:
        status = draw(st.sampled_from(STATUSES))
        failing = status in ("wrong", "error", "crash", "timeout")
        cells.append(
            make_record(
                case,
                style,
                path,
                status=status,
                error_type=draw(st.sampled_from(["RuntimeError", "Mismatch"])) if failing else None,
                stage=draw(st.sampled_from(["trace", "run"])) if failing else None,
            )
        )
    return {"schema": SCHEMA, "environment": {"torch": "2.11.0", "device": "NVIDIA H200"}, "cells": cells}


@given(runs())
@settings(deadline=None)  # the first example reads matrix.toml's goals and imports the paths: seconds
def test_a_run_against_itself_changes_nothing(run: dict):
    assert gate.diff(run, run) == []


@given(runs(), st.data())
def test_one_pass_turned_error_is_exactly_one_regression(run: dict, data: st.DataObject):
    passing = [cell for cell in run["cells"] if cell["status"] == "pass"]
    if not passing:
        run["cells"][0]["status"] = "pass"
        passing = [run["cells"][0]]
    victim = data.draw(st.sampled_from(passing))["id"]
    current = json.loads(json.dumps(run))
    for cell in current["cells"]:
        if cell["id"] == victim:
            cell.update(status="error", error_type="RuntimeError", stage="compile")
    changes = gate.diff(run, current)
    assert [(c.id, c.kind) for c in changes] == [(victim, "regression")]
    assert gate.failing(changes, strict=False) == changes
    known = {victim: gate.KnownFailure(victim, "upstream bug", "https://example.invalid/1")}
    assert [c.kind for c in gate.diff(run, current, known)] == ["known"]
    assert gate.failing(gate.diff(run, current, known), strict=True) == []


@given(runs(), st.data())
def test_a_dropped_cell_is_missing_and_an_added_one_new(run: dict, data: st.DataObject):
    dropped = data.draw(st.sampled_from(run["cells"]))
    smaller = {**run, "cells": [cell for cell in run["cells"] if cell is not dropped]}
    assert [(c.id, c.kind) for c in gate.diff(run, smaller)] == [(dropped["id"], "missing")]
    added = "wrong" if wrong_numbers(typed(dropped)) else "new"  # a new cell with wrong numbers fails the gate
    assert [(c.id, c.kind) for c in gate.diff(smaller, run)] == [(dropped["id"], added)]


@given(runs(), runs())
@settings(max_examples=50)
def test_only_regressions_wrong_flaky_and_missing_cells_fail_unless_strict(before: dict, after: dict):
    changes = gate.diff(before, after)
    assert {c.kind for c in gate.failing(changes, strict=False)} <= {"regression", "missing", "wrong", "flaky"}
    lenient = gate.failing(changes, strict=False, allow_flaky=True)
    assert {c.kind for c in lenient} <= {"regression", "missing", "wrong"}
    assert [c for c in changes if c.kind == "wrong"] == [c for c in lenient if c.kind == "wrong"]
    assert {c.id for c in gate.failing(changes, strict=False)} <= {c.id for c in gate.failing(changes, strict=True)}


@pytest.mark.parametrize(
    ("was", "now", "kind"),
    [
        ({"status": "pass"}, {"status": "wrong"}, "wrong"),
        ({"status": "error", "error_type": "A", "stage": "trace"}, {"status": "wrong"}, "wrong"),  # new wrong numbers
        ({"status": "skip"}, {"status": "wrong"}, "wrong"),
        ({"status": "wrong"}, {"status": "wrong"}, None),
        ({"status": "pass"}, {"status": "error"}, "regression"),
        ({"status": "error"}, {"status": "pass"}, "fix"),
        ({"status": "pass"}, {"status": "skip"}, "skipped_now"),
        (
            {"status": "error", "error_type": "A", "stage": "trace"},
            {"status": "error", "error_type": "B", "stage": "trace"},
            "changed_failure",
        ),
        (
            {"status": "error", "error_type": "A", "stage": "trace"},
            {"status": "error", "error_type": "A", "stage": "run"},
            "changed_failure",
        ),
        (
            {"status": "error", "error_type": "A", "stage": "run"},
            {"status": "error", "error_type": "A", "stage": "run"},
            None,
        ),
        ({"status": "skip"}, {"status": "skip"}, None),
        # right numbers with the kernel outside the graph, then no right numbers: it regressed (it was a changed
        # failure, never failing the gate); a skip that now runs and fails is no failure that changed
        ({"status": "graph_break"}, {"status": "error", "error_type": "A", "stage": "run"}, "regression"),
        ({"status": "graph_break"}, {"status": "crash"}, "regression"),
        ({"status": "graph_break"}, {"status": "pass"}, "fix"),
        ({"status": "graph_break"}, {"status": "graph_break"}, None),
        ({"status": "skip"}, {"status": "crash"}, "runs_now"),
    ],
)
def test_classes(was: dict, now: dict, kind: str | None):
    assert gate.classify(was, now) == kind


def results_file(path: Path, cells: list[dict], device: str = "NVIDIA H200", torch: str = "2.11.0", **env) -> Path:
    environment = {"torch": torch, "triton": "3.6.0", "device": device, "commit": "abc", **env}
    path.write_text(json.dumps({"schema": SCHEMA, "environment": environment, "cells": cells}))
    return path


def run_gate(*args: str) -> subprocess.CompletedProcess:
    return harness_main("gate", *args)


def test_cli_exit_codes_and_readable_diff(tmp_path: Path):
    good = [
        make_record("sin", "triton_op", "aoti_strict", status="pass"),
        make_record("sin", "raw_jit", "export_nonstrict", status="error", error_type="RuntimeError", stage="trace"),
    ]
    bad = [make_record("sin", "triton_op", "aoti_strict", status="crash", error_type="SIGSEGV"), good[1]]
    old, new = results_file(tmp_path / "old.json", good), results_file(tmp_path / "new.json", bad, torch="2.13.0")
    out = tmp_path / "gate.md"

    same = run_gate("--baseline", str(old), "--current", str(old), "--out", str(out))
    assert same.returncode == 0 and "# Upgrade gate: PASS" in out.read_text()

    broke = run_gate("--baseline", str(old), "--current", str(new), "--out", str(out))
    assert broke.returncode == 1
    text = out.read_text()
    assert "# Upgrade gate: FAIL" in text and "## Regressions" in text
    row = next(line for line in text.splitlines() if line.startswith("| sin-triton_op-aoti_strict"))
    assert [part.strip() for part in row.strip("|").split("|")] == [
        "sin-triton_op-aoti_strict",
        "✅ pass",
        "💥 crash (SIGSEGV)",
    ]
    assert "torch 2.11.0" in text and "torch 2.13.0" in text
    assert "not re-running regressions" in broke.stderr  # measured on another machine than this one

    known = tmp_path / "known.toml"
    known.write_text(
        '[[known]]\nid = "sin-triton_op-aoti_strict"\nreason = "AOTI load segfault"\n'
        'link = "https://github.com/pytorch/pytorch/issues/1"\n'
    )
    assert (
        run_gate("--baseline", str(old), "--current", str(new), "--known", str(known), "--out", str(out)).returncode
        == 0
    )
    assert "## Known failures" in out.read_text() and "AOTI load segfault" in out.read_text()

    fixed = run_gate("--baseline", str(new), "--current", str(old), "--out", str(out), "--strict")
    assert fixed.returncode == 1 and "## Fixes" in out.read_text()
    assert run_gate("--baseline", str(new), "--current", str(old), "--out", str(out)).returncode == 0


@pytest.mark.parametrize(
    ("current", "message"),
    [
        ('{"schema": 1, "environment": {}, "cells": [{"id": "a-b', "(json): not valid JSON"),
        ('{"schema": 4, "environment": {}, "cells": []}', "schema: expected 1, 2 or 3"),
        ('{"schema": 1, "environment": {}, "cells": []}', "cells: no cell ran"),
    ],
)
def test_cli_unusable_input_is_exit_2(tmp_path: Path, current: str, message: str):
    old = results_file(tmp_path / "old.json", [make_record("sin", "raw_jit", "eager", status="pass")])
    bad = tmp_path / "new.json"
    bad.write_text(current)
    done = run_gate("--baseline", str(old), "--current", str(bad), "--out", str(tmp_path / "g.md"))
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr


def test_all_skip_and_foreign_case_sets_are_errors(tmp_path: Path):
    old = {"cells": [make_record("sin", "raw_jit", "eager", status="pass")]}
    with pytest.raises(InputError, match="no cell ran"):
        gate.check_comparable(old, {"cells": [make_record("sin", "raw_jit", "eager", status="skip")]}, "o", "n")
    with pytest.raises(InputError, match="another case set"):
        gate.check_comparable(old, {"cells": [make_record("add", "raw_jit", "eager", status="pass")]}, "o", "n")


def test_known_file_entries_must_match_cells(tmp_path: Path):
    known = tmp_path / "known.toml"
    known.write_text('[[known]]\nid = "nope-raw_jit-eager"\nreason = "r"\nlink = "l"\n')
    with pytest.raises(InputError, match=r"known\[0\]\.id: matches no cell"):
        gate.load_known(known, {"sin-raw_jit-eager"})
    known.write_text('[[known]]\nid = "sin-raw_jit-eager"\nreason = "r"\n')
    with pytest.raises(InputError, match=r"known\[0\]: expected exactly the keys"):
        gate.load_known(known, {"sin-raw_jit-eager"})


def test_history_shows_each_cell_across_versions():
    def run(torch: str, status: str) -> dict:
        return {
            "environment": {"torch": torch, "triton": "3", "device": "cpu"},
            "cells": [
                make_record("sin", "triton_op", "cpu_compile", status=status),
                make_record("sin", "control", "cpu_compile", status="pass"),
            ],
        }

    text = render_history([run("2.13.0+cpu", "error"), run("2.15.0", "pass")])
    assert "| sin-triton_op-cpu_compile | 2.13.0 ❌ → 2.15.0 ✅ |" in text
    assert "## Cells whose status changed (1)" in text


@pytest.mark.parametrize(
    ("before", "after", "kind"),
    [
        (["pass"], ["wrong", "pass", "wrong"], "wrong"),  # wrong numbers on any attempt: never flaky
        (["pass"], ["pass", "wrong", "pass"], "wrong"),
        (["pass"], ["error", "pass", "error"], "flaky"),
        (["wrong", "pass", "pass", "pass"], ["wrong", "wrong", "wrong"], "regression"),
        (["wrong", "wrong", "pass"], ["wrong", "wrong", "wrong"], "changed_failure"),
        (["wrong", "pass", "wrong"], ["wrong", "wrong", "pass"], None),
        (["wrong", "pass"], ["pass"], "fix"),
        (["wrong", "wrong"], ["wrong", "wrong", "wrong"], None),
    ],
)
def test_cells_are_gated_by_their_measured_rate(before: list[str], after: list[str], kind: str | None):
    def measured(outcomes: list[str]) -> dict:
        fields = {"outcomes": outcomes} if len(outcomes) > 1 else {}
        return make_record("add", "autotune_heuristics", "compile", status=outcomes[0], **fields)

    assert gate.classify(measured(before), measured(after)) == kind
    assert gate.outcome(measured(["wrong", "pass", "wrong", "pass", "pass"])) == "wrong 2/5"


def test_a_cell_wrong_on_one_attempt_fails_the_gate_even_with_allow_flaky(tmp_path: Path):
    passed = make_record("sin", "triton_op", "aoti_strict", status="pass")
    wrong = make_record(
        "sin", "triton_op", "aoti_strict", **FLAKY_WRONG_FIELDS, outcomes=["wrong", "pass", "pass", "pass", "pass"]
    )
    old, new = results_file(tmp_path / "old.json", [passed]), results_file(tmp_path / "new.json", [wrong])
    out = tmp_path / "gate.md"
    for flags in ([], ["--allow-flaky"]):
        done = run_gate("--baseline", str(old), "--current", str(new), "--out", str(out), *flags)
        assert done.returncode == 1, done.stdout
        text = out.read_text()
        assert "# Upgrade gate: FAIL" in text and "- 1 wrong cell" in text
        assert "## Wrong numbers (none before, now wrong on some attempt: never excused by a re-run) — fails" in text


def test_flaky_errors_fail_unless_allowed(tmp_path: Path):
    passed = make_record("sin", "triton_op", "aoti_strict", status="pass")
    flaky = make_record(
        "sin", "triton_op", "aoti_strict", status="error", error_type="RuntimeError", outcomes=["error", "pass"]
    )
    old, new = results_file(tmp_path / "old.json", [passed]), results_file(tmp_path / "new.json", [flaky])
    out = tmp_path / "gate.md"
    assert run_gate("--baseline", str(old), "--current", str(new), "--out", str(out)).returncode == 1
    assert "## Flaky (was pass, now errs, crashes or times out on some attempts only) — fails the gate" in (
        out.read_text()
    )
    allowed = run_gate("--baseline", str(old), "--current", str(new), "--out", str(out), "--allow-flaky")
    assert allowed.returncode == 0 and "— allowed by --allow-flaky" in out.read_text()


def test_re_runs_that_see_wrong_numbers_make_a_regression_wrong_never_flaky():
    def record(cell: str, status: str):
        return typed(make_record(*cell.split("-"), status=status))

    cells = ("a-b-c", "d-e-f", "g-h-i")
    changes = [reading.Change(cell, "regression", record(cell, "pass"), record(cell, "error")) for cell in cells]
    seen = {"a-b-c": ["pass", "wrong", "error"], "d-e-f": ["error", "pass"]}
    after = rerun.apply_reruns(changes, {k: [Status(s) for s in v] for k, v in seen.items()})
    assert [(c.kind, c.reruns, c.shown()) for c in after] == [
        ("wrong", (Status.PASS, Status.WRONG), ("pass", "error; wrong on re-run 2")),
        ("flaky", (Status.ERROR, Status.PASS), ("pass", "error; pass on re-run 2")),
        ("regression", (), ("pass", "error")),
    ]
    assert after[0].after is changes[0].after  # the gate keeps the measured record; a re-run adds to it
    assert [c.id for c in reading.failing(after, strict=False, allow_flaky=True)] == ["a-b-c", "g-h-i"]


def test_header_counts_in_plural_and_says_commit_unknown(tmp_path: Path):
    cells = [make_record("sin", style, "eager", status="pass") for style in ("raw_jit", "triton_op", "custom_op")]
    broke = [{**cell, "status": "error", "error_type": "E"} for cell in cells[:2]] + [cells[2]]
    old = results_file(tmp_path / "old.json", cells)
    data = json.loads(results_file(tmp_path / "new.json", broke).read_text())
    data["environment"]["commit"] = None  # an installed harness: no git checkout
    (tmp_path / "new.json").write_text(json.dumps(data))
    out = tmp_path / "gate.md"
    run_gate("--baseline", str(old), "--current", str(tmp_path / "new.json"), "--out", str(out))
    text = out.read_text()
    assert "- 2 regressions" in text and "commit None" not in text
    assert "· commit abc" in text and "· commit unknown" in text


@pytest.mark.parametrize(
    ("was", "now"),
    [
        ({"status": "error", "error_type": "A", "stage": "trace"}, ["pass", "wrong", "pass"]),  # a listed failure
        ({"status": "pass"}, ["pass", "wrong"]),  # a listed cell that passed in the baseline
    ],
)
def test_a_known_failure_never_excuses_wrong_numbers_on_a_later_attempt(was: dict, now: list[str]):
    """A cell in the known-failures file whose first attempt passes and a later one gives wrong numbers is wrong,
    not a stale known failure (which fails only with --strict): its status is its first attempt's."""
    cell = "sin-raw_jit-eager"
    before = {"cells": [make_record("sin", "raw_jit", "eager", **was)]}
    after = {"cells": [make_record("sin", "raw_jit", "eager", status=now[0], outcomes=now)]}
    known = {cell: gate.KnownFailure(cell, "upstream bug", "https://example.invalid/1")}
    changes = gate.diff(before, after, known)
    assert [(c.id, c.kind) for c in changes] == [(cell, "wrong")]
    assert gate.failing(changes, strict=False, allow_flaky=True) == changes


def test_a_known_failure_is_stale_only_when_it_passes_on_every_attempt():
    cell = "sin-raw_jit-eager"
    before = {"cells": [make_record("sin", "raw_jit", "eager", status="error", error_type="A", stage="run")]}
    known = {cell: gate.KnownFailure(cell, "upstream bug", "https://example.invalid/1")}
    passing = {"cells": [make_record("sin", "raw_jit", "eager", status="pass", outcomes=["pass", "pass"])]}
    assert [c.kind for c in gate.diff(before, passing, known)] == ["stale_known"]
    first = {"cells": [make_record("sin", "raw_jit", "eager", status="pass", outcomes=["pass", "error"])]}
    last = {"cells": [make_record("sin", "raw_jit", "eager", status="error", outcomes=["error", "pass"])]}
    assert [c.kind for c in gate.diff(before, first, known)] == [c.kind for c in gate.diff(before, last, known)]


def test_a_run_without_a_gpu_against_a_gpu_baseline_is_an_error():
    """A new torch that sees no GPU (a CPU wheel, a driver it cannot use) turns every GPU cell into a skip, which is
    no failure: gated against a GPU baseline, only the CPU paths were compared and the gate passed."""
    cells = [make_record("sin", "raw_jit", path, status="pass") for path in ("eager", "cpu_fallback")]
    skipped = [make_record("sin", "raw_jit", "eager", status="skip", reason="no CUDA device"), cells[1]]
    gpu = {"environment": {"device": "NVIDIA H200"}, "cells": cells}
    cpu = {"environment": {"device": "cpu"}, "cells": skipped}
    with pytest.raises(InputError, match=r"environment\.device: cpu, the baseline's NVIDIA H200"):
        gate.check_comparable(gpu, cpu, "old.json", "new.json")
    gate.check_comparable(gpu, {**gpu, "environment": {"device": "NVIDIA H100 80GB HBM3"}}, "o", "n")  # GPU to GPU
    gate.check_comparable(cpu, cpu, "o", "n")
    gate.check_comparable(cpu, gpu, "o", "n")  # more measured than before: its fixes and new cells say so


def test_each_failing_cell_names_its_repro_script(tmp_path: Path):
    """A regression's row names the script its run wrote and ran outside the harness (beside the current results
    file); a failing cell without one, the command that writes it: the gate said which cell failed and how, never
    where to reproduce it."""
    script = "repros/crash-triton-op-aoti-strict.py"
    (tmp_path / "new" / "repros").mkdir(parents=True)
    (tmp_path / "new" / script).write_text("print('repro')\n")
    confirmed = {"script": script, "cell": "sin-triton_op-aoti_strict", "reproduced": True, "line": "SIGSEGV"}
    good = [make_record("sin", "triton_op", "aoti_strict", status="pass"), make_record("sin", "raw_jit", "eager")]
    crashed = {**make_record("sin", "triton_op", "aoti_strict", status="crash", error_type="SIGSEGV")}
    wrong = make_record("sin", "raw_jit", "eager", **FLAKY_WRONG_FIELDS)
    old = results_file(tmp_path / "old.json", good)
    new = results_file(tmp_path / "new" / "results.json", [{**crashed, "confirmation": confirmed}, wrong])
    done = run_gate("--baseline", str(old), "--current", str(new), "--out", str(tmp_path / "gate.md"))
    assert done.returncode == 1, done.stderr
    text = (tmp_path / "gate.md").read_text()
    assert f"- sin-triton_op-aoti_strict: `{tmp_path / 'new' / script}` (reproduced outside the harness)" in text
    assert f"- sin-raw_jit-eager: `python -m harness repro sin-raw_jit-eager --results {new}`" in text


def test_wrong_numbers_on_one_attempt_are_wrong_whatever_another_attempt_says():
    """A flop_counter cell wrong on its first attempt and blind (right numbers, FlopCounterMode counted 0) on its
    re-run gave wrong numbers: read as a subsystem's blindness, it was a regression, which a passing re-run of the
    gate made flaky and --allow-flaky passed."""
    was = {"status": "pass"}
    now = {**FLAKY_WRONG_FIELDS, "outcomes": ["wrong", "blind"]}
    assert gate.classify(was, now) == "wrong"
    assert gate.classify(was, {"status": "blind", "error_type": "SubsystemMismatch"}) == "regression"


@pytest.mark.parametrize(
    ("before", "after", "refused"),
    [("1/2", None, True), ("1/2", "2/2", True), ("1/2", "1/2", False), (None, None, False)],
)
def test_a_baseline_of_one_share_gates_only_the_same_share(tmp_path: Path, before, after, refused: bool):
    """A probe's: one share's results as the baseline of a whole run passed, the other shares' cells listed as new
    cells (which never fail), their regressions with them."""
    pairs = (("eager", "pass"), ("compile", "error"))
    cells = [make_record("sin", "raw_jit", path, status=status) for path, status in pairs]
    old = results_file(tmp_path / "old.json", cells[:1], **({"shard": before} if before else {}))
    new = results_file(tmp_path / "new.json", cells, **({"shard": after} if after else {}))
    done = run_gate("--baseline", str(old), "--current", str(new), "--rerun", "0")
    if refused:
        assert done.returncode == 2 and f"{old}: environment.shard: {before}: the baseline is one share" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    else:
        assert done.returncode == 0, done.stderr
