"""The typed record's pieces, in-process: the cell id, the upgrade of a schema 1 file, records.jsonl."""

import json
import string
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.errors import InputError
from harness.matrix.catalogue import Registries
from harness.records.files import read_results
from harness.records.log import RecordLog, read_log
from harness.records.record import Record
from harness.records.results import SCHEMA, Results
from harness.spec import CellId, Stage, Status
from tests.conftest import make_record, typed

pytestmark = pytest.mark.usefixtures("checkout_goals")  # goals of their own, not matrix.toml's

# the strings [A-Za-z0-9_]+ matches, drawn as text: from_regex took 1.65 s for its first two draws on a loaded CI
# machine and failed Hypothesis's too_slow health check
NAME = st.text(alphabet=string.ascii_letters + string.digits + "_", min_size=1)


@given(NAME, NAME, NAME)
def test_a_cell_id_parses_back_to_its_parts(case: str, style: str, path: str):
    cell = CellId(case, style, path)
    assert CellId.parse(str(cell)) == cell and str(cell).count("-") == 2


@pytest.mark.parametrize("text", ["add-raw_jit", "a-b-c-d", "a--c", ""])
def test_anything_else_is_not_a_cell_id(text: str):
    with pytest.raises(ValueError):
        CellId.parse(text)


def test_a_schema_1_file_is_upgraded_once_when_read(tmp_path: Path):
    """Styles, paths and goals from the live registries and matrix.toml, the older docs shape and the older
    subsystem wording as today's; the typed record reads the same keys."""
    flops = make_record("add", "raw_jit", "flop_counter", status="wrong", error_type="Mismatch", stage="compare",
                        error="flops: FlopCounterMode counted 0 flops, expected 3000")  # fmt: skip
    cells = [make_record("add", "triton_op", "vmap", status="pass"), flops]
    docs = {"source": "the docs", "expect": {"triton_op": {"vmap": False}}}
    file = tmp_path / "old.json"
    file.write_text(json.dumps({"schema": 1, "environment": {"device": "cpu", "docs": docs}, "cells": cells}))
    assert read_results(file).environment["styles"]["triton_op"] == {"decorator": None, "wrapper": "other"}
    results = read_results(file, Registries())  # as the command line reads it: this harness's own registries
    env = results.environment
    assert env["styles"]["triton_op"] == {"decorator": "jit", "wrapper": "triton_op"}
    assert env["paths"]["vmap"]["group"] and env["paths"]["vmap"]["doc"]
    assert any("vmap" in paths for paths in env["goals"].values())  # the drifted built-in list lacked it
    assert env["docs"]["claims"]["triton_op"]["vmap"] == {"supported": False, "source": "docs"}
    assert env["derived"] == ["styles", "paths", "goals"]
    assert results.cells[1].error_type == "SubsystemMismatch" and results.cells[1].stage == Stage.COMPARE


def test_an_unknown_schema_or_status_is_one_input_error(tmp_path: Path):
    file = tmp_path / "r.json"
    file.write_text(json.dumps({"schema": 9, "environment": {}, "cells": []}))
    with pytest.raises(InputError, match="schema"):
        read_results(file)
    bad = {**make_record("add", "raw_jit", "eager", status="pass"), "status": "great"}
    file.write_text(json.dumps({"schema": SCHEMA, "environment": {}, "cells": [bad]}))
    with pytest.raises(InputError, match=r"cells\[0\]\.status"):
        read_results(file)


def test_attempts_rate_and_summary_are_the_record_s():
    record = Record.from_dict(make_record("add", "raw_jit", "compile", status="wrong", stage="compare",
                                          error_type="Mismatch", error="off by 1\nmore",
                                          outcomes=["wrong", "pass", "wrong"]))  # fmt: skip
    assert record.attempts == (Status.WRONG, Status.PASS, Status.WRONG) and record.flaky and record.failed
    assert record.rate() == "2/3" and record.pass_rate == pytest.approx(1 / 3) and not record.reliable_pass
    assert record.summary == "wrong 2/3 at compare: Mismatch: off by 1"


def log_of(tmp_path: Path, n: int) -> tuple[RecordLog, list[Record]]:
    records = [Record.from_dict(make_record(f"c{i}", "raw_jit", "eager", status="pass")) for i in range(n)]
    log = RecordLog(tmp_path / "records.jsonl")
    log.start({"device": "cpu", "expected_cells": [r.id for r in records]}, records[:1])
    for record in records[1:]:
        log.append(record)
    return log, records


def test_results_json_is_derived_from_the_lines(tmp_path: Path):
    log, records = log_of(tmp_path, 3)
    unfinished = read_log(log.file)
    assert unfinished.cells == records and unfinished.environment["complete"] is False
    log.end({"wall_seconds": 1.5, "complete": True})
    done = read_results(tmp_path / "results.json")  # no results.json yet: the log beside it is read
    assert done.cells == records and done.environment["complete"] is True and done.environment["wall_seconds"] == 1.5


def test_a_results_file_named_otherwise_is_read_as_named_whatever_log_lies_beside_it(tmp_path: Path):
    """A baseline copied beside a later run's records.jsonl (``mv results.json baseline.json``, then a new run into
    the folder): the later run's log was read for it, and the gate compared that run with itself (PASS)."""
    import os

    from harness.records.results import Results, write_results

    baseline = [Record.from_dict(make_record("old", "raw_jit", "eager", status="pass"))]
    write_results(tmp_path / "baseline.json", Results({"device": "cpu", "complete": True}, baseline))
    os.utime(tmp_path / "baseline.json", (1, 1))  # older than the log
    _, records = log_of(tmp_path, 2)
    assert [r.id for r in read_results(tmp_path / "baseline.json").cells] == ["old-raw_jit-eager"]
    assert read_results(tmp_path / "results.json").cells == records  # the run's own: its log
    (tmp_path / "cut.json").write_text(json.dumps({"schema": 3})[:-3])
    with pytest.raises(InputError, match=r"cut.json: \(json\): not valid JSON"):
        read_results(tmp_path / "cut.json")
    with pytest.raises(InputError, match=r"nope\.json"):
        read_results(tmp_path / "nope.json")


def test_a_line_cut_short_by_a_kill_is_left_out_with_one_warning(tmp_path: Path, capsys):
    log, records = log_of(tmp_path, 3)
    log.stream.write('{"record": {"id": "c9-raw')  # the run was killed mid-write
    log.stream.flush()
    assert read_log(log.file).cells == records
    assert capsys.readouterr().err.count("\n") == 1
    lines = log.file.read_text().splitlines()
    log.file.write_text("\n".join([lines[0], "{broken", *lines[1:]]) + "\n")
    with pytest.raises(InputError, match="line 2"):
        read_log(log.file)


def test_a_failed_write_stops_the_run_with_one_line(tmp_path: Path):
    from harness.plugin.reportdir import ReportDir
    from harness.plugin.writer import STOPPED, write_or_stop

    (tmp_path / "records.jsonl").mkdir()  # the log cannot be made: a folder is in its place
    log = RecordLog(tmp_path / "records.jsonl")
    so_far = Results({"device": "cpu"}, [typed(make_record("a", "b", "c", status="pass"))])
    folder = ReportDir(tmp_path)
    with pytest.raises(pytest.exit.Exception) as stopped:
        write_or_stop(log.file, lambda: log.start({}, []), lambda: so_far, folder)
    assert stopped.value.returncode == 6 and str(stopped.value) == STOPPED  # the line is the session's to say
    line = folder.failed
    assert line is not None and line.count("\n") == 0
    assert line.startswith(f"{log.file}: (write): ") and "the run stops" in line
    saved = Path(line.rpartition(" are in ")[2])
    assert read_results(saved).to_data() == so_far.to_data()  # every record so far, where the line says


def test_no_plugin_object_is_registered_when_the_matrix_does_not_run(pytestconfig: pytest.Config):
    """This session runs the harness's own tests with the harness plugin loaded (conftest.py), not the matrix:
    as pytest's junitxml and stepwise, its objects are registered only when they have work."""
    from harness.plugin import PLUGINS

    assert pytestconfig.pluginmanager.has_plugin("harness.plugin")
    assert not any(pytestconfig.pluginmanager.has_plugin(name) for name in PLUGINS)
