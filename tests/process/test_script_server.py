"""The repro scripts' fork server (harness/execution/script_server.py): a script forked from a Python that has
imported torch and triton sees what ``python script.py`` gives it, ends with the same status and prints the same
traceback; a script past its limit or stopped with the run is killed with what it started."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.execution.confirm import Scripts

WHAT_A_SCRIPT_SEES = '''
import json, os, signal, sys, threading
import torch
print(json.dumps({
    "name": __name__, "file": __file__, "argv": sys.argv, "orig_argv": sys.orig_argv[1:], "path0": sys.path[0],
    "cwd": os.getcwd(), "session_leader": os.getsid(0) == os.getpid(), "pythonpath": os.environ["PYTHONPATH"],
    "caches": [os.environ["TORCHINDUCTOR_CACHE_DIR"] != "", os.environ["TRITON_CACHE_DIR"] != ""],
    "threads": threading.active_count(), "stdin": os.read(0, 10).decode(),
    "signals": [str(signal.getsignal(number)) for number in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE)],
    "main": sorted(vars(sys.modules["__main__"])), "is_main": sys.modules["__main__"].__dict__ is globals(),
    "spec": repr(__spec__), "loader": type(__loader__).__name__, "package": __package__, "doc": __doc__,
    "cuda_started": torch.cuda.is_initialized(), "harness": sorted(m for m in sys.modules if m.startswith("harness")),
}))
import atexit
atexit.register(lambda: print("atexit ran"))
def fail():
    raise ValueError("boom")
fail()
'''


@pytest.fixture(scope="module")
def both() -> Iterator[tuple[Scripts, Scripts]]:
    """Scripts run as fresh Pythons, and forked from one fork server for the module's tests, started before the
    first script as a run with a GPU starts it (``prestart``)."""
    fresh, forked = Scripts(forked=False), Scripts()
    forked.prestart()
    yield fresh, forked
    fresh.stop()
    forked.stop()


def run_both(scripts: tuple[Scripts, Scripts], tmp_path: Path, source: str, timeout: float = 120.0) -> list:
    """The script run as a fresh Python and forked from the server: both runs, the forked one checked to be so."""
    script = tmp_path / "script.py"
    script.write_text(source)
    runs = [scripts[0].run(script, timeout), scripts[1].run(script, timeout)]
    assert scripts[0].server is None and scripts[1].server is not None
    return runs


def same_output(text: str) -> str:
    return re.sub(r"harness-scripts-\w+", "HIDDEN", re.sub(r"harness-confirm-\w+", "CACHES", text))


def test_a_forked_script_sees_what_a_fresh_python_gives_it(both, tmp_path: Path):
    fresh, forked = run_both(both, tmp_path, WHAT_A_SCRIPT_SEES)
    assert fresh.returncode == forked.returncode == 1
    assert fresh.raised == forked.raised == "ValueError: boom"
    assert same_output(forked.output) == same_output(fresh.output)
    assert '"is_main": true' in forked.output and '"harness": []' in forked.output
    assert forked.output.index('in <module>') < forked.output.index("in fail") < forked.output.index("atexit")
    assert "<string>" not in forked.output  # the traceback starts at the script, not in the server


def test_a_forked_script_finds_inductors_cpu_isa_already_probed_and_the_same(
    both, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The fork server asked the probes once for all (each a g++ build and a fresh Python in torch 2.11): a forked
    script's AOTInductor compile reads their answer, the one a fresh Python finds by probing (for real: not as
    nox -s tests takes them, passed)."""
    monkeypatch.delenv("TORCHINDUCTOR_VEC_ISA_OK", raising=False)
    source = (
        "import torch\nfrom torch._inductor import cpu_vec_isa\nbuilds = []\nbuild = cpu_vec_isa.VecISA.check_build\n"
        "cpu_vec_isa.VecISA.check_build = lambda *args: builds.append(1) or build(*args)\n"
        "print(repr(str(cpu_vec_isa.pick_vec_isa())), len(builds))\n"
    )
    fresh, unprobed = run_both(both, tmp_path, source)  # a server that did not probe: the script probes itself
    scripts = Scripts(probe_isas=True)  # as a run with a GPU starts it
    try:
        probed = scripts.run(tmp_path / "script.py", 120.0)
    finally:
        scripts.stop()
    assert fresh.returncode == unprobed.returncode == probed.returncode == 0, fresh.output + probed.output
    isa, probes = fresh.output.split()[-2:]
    assert int(probes) > 0 and unprobed.output.split()[-2:] == [isa, probes]
    assert probed.output.split()[-2:] == [isa, "0"]


@pytest.mark.parametrize(
    ("ending", "status", "said"),
    [
        ("print('no failure: fixed')", 0, "no failure: fixed"),
        ("sys.exit(3)", 3, None),
        ("sys.exit('stopped here')", 1, "stopped here"),
        ("os.kill(os.getpid(), signal.SIGABRT)", -6, None),
        ("threading.Thread(target=lambda: (time.sleep(1), print('thread ended'))).start()", 0, "thread ended"),
    ],
)
def test_a_forked_script_ends_as_a_fresh_one(both, tmp_path: Path, ending: str, status: int, said: str | None):
    source = f"import os, signal, sys, threading, time\nimport torch\n{ending}\n"
    fresh, forked = run_both(both, tmp_path, source)
    assert fresh.returncode == forked.returncode == status
    assert forked.output.strip() == fresh.output.strip()
    if said:
        assert forked.last_line == said


def test_a_script_that_sets_the_environment_first_runs_as_a_fresh_python(tmp_path: Path):
    script = tmp_path / "interpreted.py"
    script.write_text('import os\nos.environ["TRITON_INTERPRET"] = "1"\nimport torch\nprint(torch.__name__)\n')
    scripts = Scripts()
    try:
        run = scripts.run(script, 120.0)
        assert run.returncode == 0 and scripts.server is None
    finally:
        scripts.stop()


def test_a_forked_script_past_its_limit_is_killed_with_its_children(tmp_path: Path):
    pid_file = tmp_path / "child"
    source = (
        "import subprocess, sys, time\nimport torch\n"
        f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\ntime.sleep(600)\n"
    )
    script = tmp_path / "slow.py"
    script.write_text(source)
    scripts = Scripts()
    try:
        run = scripts.run(script, 8.0)
        assert scripts.server is not None
    finally:
        scripts.stop()
    assert run.returncode is None and 8 <= run.seconds < 30
    assert not Path(f"/proc/{pid_file.read_text()}").exists() or "Z" in _state(int(pid_file.read_text()))


def test_a_forked_script_stopped_with_the_run_is_not_confirmed(tmp_path: Path):
    script = tmp_path / "slow.py"
    script.write_text("import time\nimport torch\ntime.sleep(600)\n")
    scripts = Scripts()
    runs = []
    thread = threading.Thread(target=lambda: runs.append(scripts.run(script, 300.0)))
    thread.start()
    deadline = time.monotonic() + 120
    while not scripts.running and time.monotonic() < deadline:
        time.sleep(0.1)
    scripts.stop()
    thread.join(30)
    assert runs and runs[0].stopped and runs[0].last_line.startswith("not confirmed")


def test_a_forked_script_leads_its_group_once_its_pid_is_known(both, tmp_path: Path):
    """A stop right after the pid came back reaches the script: its group exists by then (killing a group the
    child had not made yet reached nothing, and the script slept on)."""
    forked = both[1]
    script = tmp_path / "script.py"
    script.write_text("print('ran')\n")
    forked.run(script, 120.0)
    server = forked.server
    assert server is not None
    leads = []
    for attempt in range(20):
        outputs = (tmp_path / f"out{attempt}", tmp_path / f"err{attempt}")
        environment = forked.environment(str(tmp_path))
        assert server.run(script, environment, outputs, 60.0, lambda pid: leads.append(_leads(pid))) == 0
    assert leads == [True] * 20


def _leads(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except ProcessLookupError:
        return False


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rpartition(")")[2].split()[0]


def test_a_script_that_needs_the_harness_fails_as_it_would_where_its_bug_is_filed(both, tmp_path: Path):
    """The harness is installed where the run is, not where a maintainer runs the script: a script importing it,
    or a module of the user's that imports it, is not standalone and does not reproduce its cell."""
    (tmp_path / "helper.py").write_text("from harness.case import Case\n")
    for source in ("import torch\nimport harness\n", "import torch\nimport helper  # beside the script: sys.path[0]\n"):
        for run in run_both(both, tmp_path, source):
            assert run.returncode == 1 and run.raised.startswith("ImportError: a repro script runs without the harness")
