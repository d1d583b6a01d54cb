"""The fast tier runs in this process: a test here that starts the harness in a Python of its own (``python -m
harness``, the zygote and its cell processes, a repro or example script, the scripts' fork server) fails, and
belongs in tests/process.
PyTorch's own helper processes (Inductor's compile workers and library probes, the standalone server that an
AOTInductor path loads its package in) are part of the paths measured and are let through."""

import subprocess
import sys

import pytest

from harness.cell import timing as cell_timing
from harness.execution import prestarted
from harness.kernel import casecheck
from harness.plugin import session
from tests.fakes import FakeTimer


def starts_the_harness(argv: list[str]) -> bool:
    if len(argv) < 2 or argv[0] != sys.executable:
        return False
    if argv[1] == "-c":  # the zygote's boot, or the repro scripts' fork server (which runs scripts)
        return "from harness" in argv[2] or "import harness" in argv[2] or argv[2] == prestarted.SOURCE
    return argv[1] == "-m" or argv[1].endswith(".py")


@pytest.fixture(autouse=True)
def no_harness_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    start = subprocess.Popen.__init__

    def refuse_the_harness(self: subprocess.Popen, args: object, *rest: object, **kwargs: object) -> None:
        argv = [str(arg) for arg in ([args] if isinstance(args, str | bytes) else args)]
        if starts_the_harness(argv):
            raise AssertionError(f"a fast-tier test started {' '.join(argv)[:160]!r}: it belongs in tests/process")
        start(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse_the_harness)


@pytest.fixture(autouse=True)
def no_early_zygote(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run here with real cell processes is one of bad input, which stops before its first cell: the zygote the
    controller starts before importing the case modules would be a harness process (tests/fast/test_early_zygote.py
    tests it with a fake ``spawn``; tests/process/test_early_zygote.py, that bad input leaves none running)."""
    monkeypatch.setattr(session, "start_early", lambda config: None)


@pytest.fixture(autouse=True)
def no_slow_check_notice(monkeypatch: pytest.MonkeyPatch) -> None:
    """A case check slowed by a loaded machine prints its notice (NOTICE_SECONDS) beside a command's one-line
    error: here the notice waits until the check's limit, so a test reads the command's own output (the notice's
    own test sets it back)."""
    monkeypatch.setattr(casecheck, "NOTICE_SECONDS", casecheck.CHECK_SECONDS)


@pytest.fixture
def fake_timer(monkeypatch: pytest.MonkeyPatch) -> FakeTimer:
    """A timer on CPU: cells keep their artifacts, and the timing phase times them with it (every artifact gets
    ``SAMPLES`` samples, however long a CPU call takes on a busy machine)."""
    timer = FakeTimer([10e-6, 10.5e-6, 11e-6])
    monkeypatch.setattr(cell_timing, "SAMPLING_BUDGET_S", 1e6)
    monkeypatch.setattr(cell_timing, "timer_for", lambda device: timer)
    monkeypatch.setattr(cell_timing, "KEPT", {})
    return timer
