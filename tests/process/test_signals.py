"""Issue 61: SIGINT or SIGTERM at any stage of any command exits 130, saying at most one line, with nothing of the
command left running. The signal goes to the command alone, as a supervisor sends it, at several stages: as the
command starts (its modules importing), as a run's session starts, while the gate re-runs a cell."""

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from harness.execution.zygote import _alive
from tests.conftest import REPO, make_record
from tests.fast.test_gate import results_file

STOP_S = 60  # how long a command may take to stop


def start(*args: str) -> subprocess.Popen[str]:
    """``python -m harness ARGS`` from the repository root, in a session of its own (its processes found by it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "harness", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def catches_sigterm(process: subprocess.Popen[str]) -> bool:
    """Whether the process has ended or set a handler for SIGTERM (the command line's first step)."""
    if process.poll() is not None:
        return True
    status = Path(f"/proc/{process.pid}/status").read_text()
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught & (1 << (signal.SIGTERM - 1)))


def wait_for(what: Callable[[], bool], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, f"timed out waiting for {what.__doc__}"
        time.sleep(0.005)


def processes() -> list[tuple[int, int, int, str]]:
    """Every process: its pid, its parent's, its session's and its command line."""
    ps = subprocess.run(["ps", "-ww", "-eo", "pid=,ppid=,sid=,args="], capture_output=True, text=True).stdout
    return [
        (int(pid), int(ppid), int(sid), args)
        for pid, ppid, sid, args in (line.split(None, 3) for line in ps.splitlines())
    ]


def running(session: int) -> list[str]:
    """The processes of a session still running (not zombies)."""
    return [args for pid, _, sid, args in processes() if sid == session and _alive(pid)]


def descendants(parent: int) -> dict[int, str]:
    """The processes ``parent`` started, and theirs: pid -> command line."""
    found: dict[int, str] = {}
    table = processes()
    for _ in table:  # generation by generation
        found |= {pid: args for pid, ppid, _, args in table if ppid == parent or ppid in found}
    return found


def as_from_a_terminal() -> None:
    """A child's SIGINT and SIGTERM as a terminal gives them: default, not blocked. A blocked signal stays blocked
    across exec, and in a whole tests session this xdist worker had SIGINT blocked by the time this test ran (after
    earlier tests' in-process compiles): a plain pytest run signalled with SIGINT was still in its slow case import's
    sleep 20 s after the signal; with SIGINT blocked before it starts, the same test fails alone too."""
    for each in (signal.SIGINT, signal.SIGTERM):
        signal.signal(each, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


def stopped(command: subprocess.Popen[str], signum: int) -> tuple[int, list[str]]:
    """Send ``signum`` to ``command``: its exit status and the lines it printed from then on."""
    command.send_signal(signum)
    out, err = command.communicate(timeout=STOP_S)
    return command.returncode, (out + err).splitlines()


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return results_file(tmp_path / "results.json", [make_record("sin", "triton_op", "eager", status="pass")])


COMMANDS = [
    ("list", "--matrix", "{matrix}"),
    ("report", "--results", "{results}", "--out", "{tmp}/chart.md"),
    ("which", "--goals", "compile", "--results", "{results}"),
    ("repro", "--results", "{results}", "--out", "{tmp}/repros"),
    ("gate", "--baseline", "{results}", "--current", "{results}", "--out", "{tmp}/gate.md"),
    ("history", "{results}", "--out", "{tmp}/history.md"),
    ("merge", "{results}", "--out", "{tmp}/merged.json"),
    ("run", "--matrix", "{matrix}", "--report-dir", "{tmp}/out", "-n", "0"),
]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_every_command_exits_130_on_a_signal_as_it_starts(signum: int, matrix: Path, results: Path, tmp_path: Path):
    """Signalled as soon as it catches SIGTERM, while its modules import: SIGTERM killed it (-15) where its pytest
    session was not yet set up, which was any command but a run's session; SIGINT printed a traceback."""
    for command in COMMANDS:
        args = [arg.format(matrix=matrix, results=results, tmp=tmp_path) for arg in command]
        process = start(*args)
        wait_for(partial(catches_sigterm, process), timeout=60)
        code, lines = stopped(process, signum)
        assert (code, lines) == (130, []), command
        assert running(process.pid) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_run_signalled_as_its_session_starts_exits_130_with_its_matrix_line_only(signum: int, matrix: Path, tmp_path):
    """Just after the ``matrix:`` line (its zygote starting): it exited 2 with pytest's report of the interrupt."""
    process = start("run", "--matrix", str(matrix), "--report-dir", str(tmp_path / "out"), "-n", "0")
    assert process.stderr is not None
    line = process.stderr.readline()
    while line.startswith("harness: checking case "):  # a loaded machine's slow case check says so first
        line = process.stderr.readline()
    assert line == f"matrix: {matrix} (--matrix)\n"
    code, lines = stopped(process, signum)
    assert (code, lines) == (130, [])
    assert running(process.pid) == []


def test_a_gate_signalled_while_it_re_runs_a_cell_exits_130_leaving_nothing(write_matrix, tmp_path: Path):
    """SIGTERM killed the gate (-15), and in about half the tries its re-run and that run's zygote were left."""
    import torch
    import triton

    matrix = write_matrix(["tests.fixtures.slow"], ["triton_op"], {"cpu_fallback": ("cpu", 120)})
    passed = make_record("slow", "triton_op", "cpu_fallback", status="pass")
    failed = {**passed, "status": "error", "error_type": "RuntimeError", "stage": "run"}
    here = {"device": "cpu", "torch": torch.__version__, "triton": triton.__version__}  # re-run only where measured
    old = results_file(tmp_path / "old.json", [passed], **here)
    new = results_file(tmp_path / "new.json", [failed], **here)
    gate = start("gate", "--baseline", str(old), "--current", str(new), "--matrix", str(matrix), "--rerun", "2",
                 "--out", str(tmp_path / "gate.md"))  # fmt: skip
    started: dict[int, str] = {}

    def zygote_of_the_rerun() -> bool:
        """the re-run's zygote"""
        assert gate.poll() is None, gate.communicate()
        started.update(descendants(gate.pid))
        return any("harness.execution.zygote" in args for args in started.values())

    wait_for(zygote_of_the_rerun)
    code, lines = stopped(gate, signal.SIGTERM)
    assert (code, lines) == (130, [])
    assert [args for pid, args in started.items() if _alive(pid)] == []


def test_the_command_line_sets_its_handlers_before_it_imports_pytest_or_a_stage():
    """``python -m harness`` imports harness/__main__.py before it can set SIGINT and SIGTERM: what that module
    imports is the window where a signal still kills the command or prints a traceback (pytest and the stages it
    imported took 0.5 s)."""
    heavy = ("pytest", "torch", "harness.plugin", "harness.report", "harness.records", "harness.matrix")
    code = f"import sys, harness.__main__; print(sorted(m for m in sys.modules if m.startswith({heavy!r})))"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr


def test_python_m_ends_with_the_exit_status_after_an_interrupt_left_code_run_from_a_string():
    """CPython remembers an interrupt that left code run from a string, caught or not, and ``python -m`` ended by
    SIGINT instead of exit 130: a run signalled while a dataclass was made (about 1 in 5 tries in its first 0.3 s)."""
    done = subprocess.run([sys.executable, "-m", "tests.fixtures.interrupt_in_exec"], cwd=REPO, capture_output=True)
    assert (done.returncode, done.stdout, done.stderr) == (130, b"", b"")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_plain_pytest_signalled_while_a_case_module_imports_exits_130_leaving_nothing(
    signum: int, write_matrix, tmp_path: Path
):
    """Under plain pytest the case modules import before pytest's session starts (and its own handling of an
    interrupt): SIGTERM killed it there (-15), SIGINT ended it with a traceback."""
    matrix = write_matrix(["tests.fixtures.slow_import"], ["control"], {"cpu_fallback": ("cpu", 120)})
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", str(matrix), "-p", "no:cacheprovider", "--report-dir", str(tmp_path / "out")],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=as_from_a_terminal,
    )  # fmt: skip
    assert process.stderr is not None
    assert process.stderr.readline() == "slow_import: importing\n"
    code, lines = stopped(process, signum)
    assert code == 130, lines
    assert not [line for line in lines if "Traceback" in line or "KeyboardInterrupt" in line], lines
    assert running(process.pid) == []
