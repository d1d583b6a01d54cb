"""Issue 26, faults and small things of a run: Ctrl-C and SIGTERM exit 130 and clean up, dead runs' temp folders go,
a failed write stops the run at once keeping every record, ``--co`` is not a failed run, the kept-records line."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.__main__ import main
from tests.conftest import REPO


def test_a_failed_write_after_the_last_record_exits_6_with_every_record(matrix, tmp_path, capsys):
    """results.json cannot be derived at the end (a non-empty folder in its place): exit 6, one line, the
    records kept in records.jsonl and in the file the line names."""
    out = tmp_path / "out"
    (out / "results.json" / "blocker").mkdir(parents=True)  # os.replace cannot put a file over a non-empty folder
    code = main(["run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "-q"])
    captured = capsys.readouterr()
    err = [line for line in captured.err.splitlines() if line.startswith("error:")]
    assert code == 6 and len(err) == 1, err
    assert err[0].startswith(f"error: {out / 'results.json'}: (write): ") and "the run stops" in err[0]
    rescued = json.loads(Path(err[0].rpartition(" are in ")[2]).read_text())
    assert [cell["id"] for cell in rescued["cells"]] == ["good-control-cpu_fallback"]
    assert '"good-control-cpu_fallback"' in (out / "records.jsonl").read_text()
    assert (captured.out + captured.err).count(err[0].removeprefix("error: ")) == 1  # said once (issue 36)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--max-rss-mb", "-5"], "--max-rss-mb: expected a number of MiB >= 0"),
        ([], "--report-dir: another run (pid 4242) writes there"),
        (["--cache-dir", "{matrix}"], "--cache-dir: a file, not a folder"),
    ],
)
def test_pytest_itself_refuses_a_locked_report_dir_and_a_negative_max_rss(args, words, matrix, tmp_path):
    import fcntl

    out = tmp_path / "out"
    out.mkdir()
    with open(out / ".lock", "w") as other_run:
        other_run.write("4242\n")
        other_run.flush()
        fcntl.flock(other_run, fcntl.LOCK_EX)
        command = [sys.executable, "-m", "pytest", "-p", "harness.plugin", "-p", "no:benchmark", str(matrix)]
        done = subprocess.run(
            [
                *command,
                "--matrix",
                str(matrix),
                "--report-dir",
                str(out),
                "-n",
                "0",
                *(a.format(matrix=matrix) for a in args),
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode in (2, 4) and words in done.stderr, done.stderr[-2000:]
    assert not (out / "results.json").exists()


@pytest.mark.parametrize("route", ["harness", "pytest"])
def test_a_case_module_thread_that_never_ends_does_not_hold_the_run(route: str, tmp_path):
    """Issue 44: a case module started a thread, not a daemon, that never ends: the run finished its cells and
    then waited on it forever at exit. It ends now, its records written, the thread named in one warning."""
    from tests.conftest import TOLERANCES, run_harness

    package = tmp_path / "issue44_threads"  # plain pytest: the same (it had waited forever after its last line)
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "lingering.py").write_text(
        "import threading, time\nfrom tests.fixtures.cases import make_case\n"
        "threading.Thread(target=time.sleep, args=(3600,), name='lingering-44').start()\n"
        "CASE = make_case('good')\n"
    )
    matrix, out = tmp_path / "m.toml", tmp_path / "out"
    matrix.write_text(
        'cases = ["issue44_threads.lingering"]\nstyles = ["control"]\n[paths]\n'
        'cpu_fallback = { device = "cpu", timeout = 60 }\n' + TOLERANCES
    )
    args = ["--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "-q", "-p", "no:cacheprovider"]
    try:
        if route == "harness":
            done = run_harness("run", *args, timeout=120, env={"PYTHONPATH": str(tmp_path)})
        else:  # plain pytest, given the matrix file
            command = [sys.executable, "-m", "pytest", str(matrix), *args, "-p", "no:benchmark"]
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
            done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("the run waited on the case module's thread at exit")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "warning: 1 thread(s) still running at exit (lingering-44): not waited for" in done.stderr
    cells = json.loads((out / "results.json").read_text())["cells"]
    assert [(cell["id"], cell["status"]) for cell in cells] == [("good-control-cpu_fallback", "pass")]


def test_a_run_whose_fork_server_cannot_start_stops_at_once_under_xdist(tmp_path):
    """The run's fork server cannot start (here: its Python finds no standard library): the xdist worker records
    its first cell so, the session stops there, and the controller exits 6 (a run that broke, not one
    interrupted) with one line naming the cause; no other cell starts a fork server to fail the same way."""
    from tests.conftest import matrix_text, run_harness

    matrix, out = tmp_path / "m.toml", tmp_path / "out"
    text = matrix_text(["tests.fixtures.good", "tests.fixtures.wrong"], ["triton_op", "custom_op", "control"],
                       {"cpu_fallback": ("cpu", 60), "cpu_compile": ("cpu", 60)})
    matrix.write_text(text + f'[environment]\nPYTHONHOME = "{tmp_path / "no-python-here"}"\n')
    done = run_harness("run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "1", timeout=300)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 6 and len(errors) == 1, done.stderr[-3000:]
    assert "ModuleNotFoundError: No module named 'encodings'" in errors[0]
    assert "the run stopped there: 11 selected cell(s) not run" in errors[0]
    (cell,) = json.loads((out / "results.json").read_text())["cells"]
    assert cell["error_type"] == "CellProcessFailed" and "encodings" in cell["error"]
