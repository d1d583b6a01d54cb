"""Confirmation: every failure is run again as its user-shaped repro script, outside the harness. A failure the
script shows is confirmed; one it does not show is a harness suspect: listed first in the chart, named in the
summary, and the run exits 7. A pass must hold on every call of the artifact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.case import load_case
from harness.cell.runner import run_cell
from harness.execution.confirm import TAIL, ScriptRun, Scripts
from harness.execution.prestarted import forkable
from harness.plugin.confirming import early_width
from harness.plugin.processes import CellProcesses
from harness.records.confirmation import confirmation, is_suspect, reproduced
from tests.conftest import REPO, cell_spec, harness_main, make_record, typed
from tests.fakes import FakeCells

SCHEMA = "Could not find schema for ns::op"
WRONG = "AssertionError: wrong numbers: output, call 1: Tensor-likes are not close!"
WRAP = "wrap_triton: the kernel's grid must be a tuple or a callable returning one"
DRIVERS = "0 active drivers ([]). There should only be one."
MUTABLE = "Cannot register autograd formula for a mutable op; add it to the mutates_args"
BARE_ASSERT = 'Traceback (most recent call last):\n  File "r.py", line 9\n    assert x.numel() % 2\nAssertionError\n'
BARE_KEY = BARE_ASSERT.replace("AssertionError", "KeyError")
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 MiB. GPU 0 has a total capacity of 79 GiB"
WORDED = f"OP writes into x: triton_op cannot train it: {MUTABLE}"  # the harness's wording, ending with the error


@pytest.mark.parametrize(
    ("status", "fields", "returncode", "output", "expected"),
    [
        ("wrong", {}, 1, WRONG, True),
        ("wrong", {}, 1, "RuntimeError: boom", False),
        ("wrong", {}, 0, "no failure: x passes here", False),
        ("graph_break", {}, 1, "AssertionError: graph break: the kernel ran outside the compiled graph", True),
        ("blind", {}, 1, "AssertionError: FlopCounterMode counted 0 for the op, the case declares 7", True),
        ("error", {"error_type": "Unsupported"}, 1, "torch._dynamo.exc.Unsupported: Attempted to call", True),
        ("error", {"error_type": "Unsupported"}, 1, "RuntimeError: something else", False),
        ("error", {"error_type": "E", "error": SCHEMA}, 1, f"x.E: {SCHEMA}", True),
        ("error", {"error_type": "E", "error": SCHEMA}, 1, f"x.F: {SCHEMA}", True),  # wrapped: the same message
        ("error", {"error_type": "E", "error": SCHEMA}, 1, f"x.F: warning: E raised\nx.F: {SCHEMA[:9]}", False),
        ("error", {"error_type": "E", "error": "no harness::sin_jit at 0x7f3a"}, 1, "x.F: no mylib::sin at 0x9", True),
        ("error", {"error_type": "RuntimeError", "error": WRAP}, 1, f"RuntimeError: {DRIVERS}", False),  # a builtin
        ("error", {"error_type": "RuntimeError", "error": WORDED}, 1, f"RuntimeError: {MUTABLE}", True),
        ("error", {"error_type": "Unsupported", "error": f"raised: RuntimeError: {DRIVERS}"}, 1, f"E: {DRIVERS}", True),
        ("error", {"error_type": "RuntimeError", "error": "boom"}, 1, "RuntimeError: boom", True),
        ("error", {"error_type": "RuntimeError", "error": "no boom here"}, 1, "RuntimeError: boom", False),  # short
        ("error", {"error_type": "AssertionError", "error": "AssertionError()"}, 1, BARE_ASSERT, True),  # no message
        ("error", {"error_type": "AssertionError", "error": "AssertionError()"}, 1, "AssertionError: x is odd", False),
        ("error", {"error_type": "AssertionError", "error": "x is odd"}, 1, BARE_ASSERT, False),
        ("error", {"error_type": "AssertionError", "error": "AssertionError()"}, 1, BARE_KEY, False),
        ("timeout", {}, None, "", True),
        ("error", {"error_type": "E", "error": SCHEMA}, None, "", None),  # out of time: not confirmed
        ("timeout", {}, 1, "RuntimeError: boom", False),
        ("crash", {}, -11, "", True),
        ("error", {"error_type": "AcceleratorError", "cuda_fault": True}, 1, "CUDA error: an illegal memory", True),
        # the GPU's memory ran out beside the run's other processes: nothing either way, unless the cell's did too
        ("crash", {}, 1, OOM, None),
        ("error", {"error_type": "AcceleratorError", "cuda_fault": True}, 1, OOM, None),
        ("error", {"error_type": "RuntimeError", "error": "boom"}, 1, OOM, None),
        ("error", {"error_type": "OutOfMemoryError", "error": OOM.partition(": ")[2]}, 1, OOM, True),
    ],
)
def test_a_script_reproduces_only_the_failure_its_cell_recorded(status, fields, returncode, output, expected):
    record = typed(make_record("sin", "raw_jit", "eager", status=status, **fields))
    run = ScriptRun.of(returncode, output, 1.0)
    assert reproduced(record, run.returncode, run.output, run.last_line) is expected


FRAMES = "".join(f'  File "/torch/export/x{n}.py", line {n}, in f{n}\n    g{n}()\n' for n in range(200))
CONSTRAINTS = 'Constraints violated (dim)! For more information, run with TORCH_LOGS="+dynamic".'


def export_message(first: str, guards: int) -> str:
    """A multi-line ``torch.export`` ``UserError`` message (its frames longer than the output's tail kept)."""
    guard = "  - Not all values of dim = L['x'].size()[0] in the specified range satisfy the generated guard"
    return (
        f"{first}\n" + f"{guard}\n" * guards + f'\nFramework stack:\n{FRAMES}\nUser stack:\n  File "r.py"\n\n'
        "The error above occurred when calling torch.export.export. If you would like to view some more information "
        "about this error, and get a list of all other errors that may occur in your export call, you can replace "
        "your `export()` call with `draft_export()`."
    )


def printed(message: str) -> str:
    return f"Traceback (most recent call last):\n{FRAMES}torch._dynamo.exc.UserError: {message}\n"


def test_a_multi_line_message_is_compared_by_its_own_first_line():
    """Issue 41: FLCE export_dynamic_strict raised ``UserError: Constraints violated (size)! ...``, so did its
    repro, but the repro's error line came from the message's last line: a false suspect."""
    error = export_message(CONSTRAINTS, 3)
    record = typed(make_record("sin", "raw_jit", "eager", status="error", error_type="UserError", error=error))
    output = printed(export_message(CONSTRAINTS, 1))
    assert len(output) > TAIL  # the exception line is not in the tail kept
    run = ScriptRun.of(1, output, 4.0)
    assert run.last_line == f"torch._dynamo.exc.UserError: {CONSTRAINTS}"
    assert reproduced(record, run.returncode, run.output, run.last_line) is True
    other = printed(export_message(CONSTRAINTS, 1)).replace("UserError: Constraints", "Unsupported: Guards")
    different = ScriptRun.of(1, other.replace("x0.py", "UserError: x0.py"), 4.0)  # the type elsewhere in its output
    assert reproduced(record, different.returncode, different.output, different.last_line) is False


def test_a_script_the_run_stopped_confirms_nothing():
    record = typed(make_record("sin", "raw_jit", "eager", status="crash"))
    run = ScriptRun.of(None, "", 2.0, stopped=True)
    found = confirmation(record, "repros/x.py", run.returncode, run.output, run.last_line, run.stopped)
    assert found == {
        "script": "repros/x.py",
        "cell": "sin-raw_jit-eager",
        "reproduced": None,
        "line": "not confirmed: the run was stopped before the script ended",
    }
    assert not is_suspect(record.replace(confirmation=found)) and is_suspect(
        record.replace(confirmation={**found, "reproduced": False})
    )


def test_a_pass_holds_on_every_call(tmp_path: Path):
    """A CPU kernel right on its first call and wrong on its second (within one cell): never a pass."""
    case = load_case("tests.fixtures.wrong_second_call", "wrong_second_call")
    outcome = run_cell(case, cell_spec("tests.fixtures.wrong_second_call", "triton_op"), tmp_path, {}, "cpu")
    assert (outcome.status, outcome.stage) == ("wrong", "compare"), outcome.error
    assert outcome.error.startswith("output, call 2: ")
    control = run_cell(case, cell_spec("tests.fixtures.wrong_second_call", "control"), tmp_path, {}, "cpu")
    assert control.status == "pass" and control.measurements.calls == 2


def test_no_confirm_runs_no_script(write_matrix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(CellProcesses, "make_process", FakeCells(statuses={"good-control-cpu_fallback": ["error"]}))
    monkeypatch.setattr("harness.execution.confirm.Scripts.run", pytest.fail)
    matrix = write_matrix(["tests.fixtures.good"], ["control"], {"cpu_fallback": ("cpu", 120)})
    out = tmp_path / "out"
    done = harness_main("run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "--no-confirm")
    assert done.returncode == 0, done.stdout[-2000:]
    assert "confirmation" not in json.loads((out / "results.json").read_text())["cells"][0]


def test_a_scripts_error_line_is_its_exception_even_when_the_traceback_header_was_cut():
    tail = "    check()\ntorch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
    tail += "RuntimeError: in-place\n\n"
    tail += "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace"
    assert ScriptRun.of(1, tail, 1.0).last_line == "RuntimeError: in-place"
    whole = "Traceback (most recent call last):\n  File 'x.py', line 3\n" + tail
    compiler = "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:"
    assert ScriptRun.of(1, whole, 1.0).last_line == compiler
    assert ScriptRun.of(0, "warning: x\nno failure: c passes here", 1.0).last_line == "no failure: c passes here"


def test_a_script_out_of_its_paths_time_is_not_confirmed_nor_a_suspect(
    write_matrix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Issue 41: a repro still running at its limit was charted a suspect, and the run exited 7. Its limit is its
    path's timeout (77 s here); the failure is "not confirmed", counted apart, and the run exits 0."""
    limits: list[float] = []

    def out_of_time(scripts, script: Path, timeout: float, gpu: str | None = None) -> ScriptRun:
        limits.append(timeout)
        return ScriptRun.of(None, "", timeout)

    monkeypatch.setattr(CellProcesses, "make_process", FakeCells(statuses={"good-control-cpu_fallback": ["error"]}))
    monkeypatch.setattr("harness.execution.confirm.Scripts.run", out_of_time)
    matrix = write_matrix(["tests.fixtures.good"], ["control"], {"cpu_fallback": ("cpu", 77)})
    out = tmp_path / "out"
    done = harness_main("run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0")
    assert done.returncode == 0, done.stdout[-2000:]
    assert limits == [77]
    record = json.loads((out / "results.json").read_text())["cells"][0]
    assert record["confirmation"]["reproduced"] is None
    assert record["confirmation"]["line"] == "still running after 77 s, its path's timeout (killed)"
    assert "failures reproduced by their repro script: 0 of 1" in done.stdout
    assert "not confirmed, their repro script stopped or out of time (1): good-control-cpu_fallback" in done.stdout
    assert "HARNESS SUSPECTS" not in done.stdout
    chart = (out / "matrix.md").read_text()
    assert "Harness suspects" not in chart and "Not confirmed (1)" in chart
    script = "repros/error-control-cpu-fallback-none-runtimeerror-x.py"  # named for its failure, style and path
    assert f"— not confirmed: '{script}' still running after 77 s" in chart


def test_a_script_out_of_gpu_memory_runs_again_alone_once_the_others_have_ended(
    write_matrix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """An 80 GB H100 at 3277a00: 110 of 681 scripts ran out of GPU memory beside the cell processes and the other
    scripts, and were charted harness suspects. An early script so queues once more beside the others; out of memory
    again, it runs alone after every other has ended."""
    runs: list[str] = []

    def crowded_first(scripts, script: Path, timeout: float, gpu: str | None = None) -> ScriptRun:
        runs.append(script.parent.name)
        return ScriptRun.of(1, OOM if len(runs) <= 2 else "RuntimeError: x", 1.0)

    monkeypatch.setattr(CellProcesses, "make_process", FakeCells(statuses={"good-control-cpu_fallback": ["error"]}))
    monkeypatch.setattr("harness.execution.confirm.Scripts.run", crowded_first)
    matrix = write_matrix(["tests.fixtures.good"], ["control"], {"cpu_fallback": ("cpu", 77)})
    out = tmp_path / "out"
    done = harness_main("run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "--no-timing")
    assert done.returncode == 0, done.stdout[-2000:]
    assert runs == [".confirming", ".confirming", "repros"]  # the early script twice, then its final script alone
    record = json.loads((out / "results.json").read_text())["cells"][0]
    assert record["confirmation"]["reproduced"] is True


def confirmed_in(write_matrix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, environment: str = "") -> list[dict]:
    """Run a matrix (``environment``: its [environment] table's lines) whose one cell fails, and return what each
    repro script was started with: its environment, and what its cache folder held as it started."""
    started: list[dict] = []

    def start(scripts, script: Path, timeout: float, env: dict[str, str]) -> ScriptRun:
        caches = Path(env["TORCHINDUCTOR_CACHE_DIR"]).parent
        started.append({"env": env, "caches": sorted(path.name for path in caches.rglob("*"))})
        return ScriptRun.of(1, "RuntimeError: x", 1.0)

    monkeypatch.setattr(CellProcesses, "make_process", FakeCells(statuses={"good-control-cpu_fallback": ["error"]}))
    monkeypatch.setattr("harness.execution.confirm.Scripts._run", start)
    matrix = write_matrix(["tests.fixtures.good"], ["control"], {"cpu_fallback": ("cpu", 77)})
    matrix.write_text(matrix.read_text() + f"[environment]\n{environment}\n")
    out = tmp_path / "out"
    done = harness_main("run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "--no-timing")
    assert done.returncode == 0, done.stdout[-2000:]
    assert json.loads((out / "results.json").read_text())["cells"][0]["confirmation"]["reproduced"] is True
    return started


def test_a_script_runs_in_the_environment_a_user_runs_it_in_not_the_cells(
    write_matrix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """matrix.toml's [environment] is the cell processes': a script run to confirm a failure gets the environment
    the run was started in (and sets what it needs itself), so "reproduced outside the harness" holds for a user
    who runs it. Nor does it get the harness's bytecode cache or CPU-thread bound."""
    monkeypatch.setenv("HARNESS_TEST_USERS_OWN", "kept")
    for name in ("OMP_NUM_THREADS", "PYTHONPYCACHEPREFIX"):
        monkeypatch.delenv(name, raising=False)
    (script,) = confirmed_in(write_matrix, tmp_path, monkeypatch, 'HARNESS_TEST_CELLS_ONLY = "1"')
    env = script["env"]
    assert "HARNESS_TEST_CELLS_ONLY" not in env and env["HARNESS_TEST_USERS_OWN"] == "kept"
    assert "OMP_NUM_THREADS" not in env and "PYTHONPYCACHEPREFIX" not in env


def test_a_script_starts_with_inductors_cache_empty_and_shares_tritons_compiled_kernels(
    write_matrix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """As a user's first run has it: nothing in Inductor's cache folder (a stored autotuning result would hide an
    in-place kernel's wrong numbers; torch keeps AOTInductor's precompiled headers outside it). Triton's compiled
    kernels are the run's, under --cache-dir, unless the run was started with a Triton cache of its own."""
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    (script,) = confirmed_in(write_matrix, tmp_path, monkeypatch)
    assert script["caches"] == []
    assert script["env"]["TRITON_CACHE_DIR"] == str(REPO / ".cache" / "triton")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "users"))
    (script,) = confirmed_in(write_matrix, tmp_path / "again", monkeypatch, 'TRITON_CACHE_DIR = "/cells/own"')
    assert script["env"]["TRITON_CACHE_DIR"] == str(tmp_path / "users")


@pytest.mark.parametrize(
    ("workers", "cores", "width"),
    [(14, 16, 3), (28, 32, 7), (56, 64, 14), (14, 64, 48), (1, 2, 1), (1, 1, 1)],
)
def test_scripts_run_beside_the_cells_one_per_four_workers_or_on_the_cores_no_worker_has(
    workers: int, cores: int, width: int
):
    assert early_width(workers, cores) == width


@pytest.mark.parametrize(
    ("source", "forked"),
    [
        ("import torch\nimport os\nos.environ['X'] = '1'\n", True),
        ("from torch.utils.flop_counter import FlopCounterMode\n", True),
        ('import os\nos.environ["TRITON_INTERPRET"] = "1"  # before any kernel\nimport torch\n', False),
        ("import os\nos.environ.setdefault('CUDA_VISIBLE_DEVICES', '1')\n", False),
        ("print('no torch at all')\n", True),
        ("import users_package  # may set what torch reads at import\nimport torch\n", False),
        ("from __future__ import annotations\nimport os, json as js\nfrom torch import nn\n", True),
    ],
)
def test_a_script_that_sets_the_environment_before_importing_torch_is_not_forked(source: str, forked: bool):
    """torch and triton read some variables as they are imported: a script that sets them first, or imports a
    package of its own first, runs as a fresh Python, since the fork server imported both before its first line."""
    assert forkable(source) is forked


def test_a_script_given_one_gpu_of_several_sees_that_gpu_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    seen: list[str | None] = []

    def start(scripts, script: Path, timeout: float, env: dict[str, str]) -> ScriptRun:
        seen.append(env.get("CUDA_VISIBLE_DEVICES"))
        return ScriptRun.of(0, "no failure", 0.1)

    monkeypatch.setattr("harness.execution.confirm.Scripts._run", start)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,5")
    Scripts().run(tmp_path / "s.py", 1.0, gpu="5")
    Scripts().run(tmp_path / "s.py", 1.0)
    assert seen == ["5", "2,5"]


CASE_BUG = (
    "the case's make_inputs failed at size 1501, seed 0 on cpu (its load check runs its first size on CPU only): "
)


@pytest.mark.parametrize(
    ("cause", "output", "expected"),
    [
        ("ValueError: size 1501 too big", "ValueError: size 1501 too big", True),  # a short message
        ("AssertionError: AssertionError()", BARE_ASSERT, True),  # a bare assert in make_inputs
        ("KeyError: 'n'", "KeyError: 'n'", True),
        ("ValueError: size 1501 too big", "ValueError: something else", False),
        ("AssertionError: AssertionError()", BARE_KEY, False),
    ],
)
def test_a_case_bug_is_reproduced_by_the_exception_it_wraps(cause: str, output: str, expected: bool):
    """A case's make_inputs or reference that raises at a drawn size is a ``CaseBug`` naming the exception; its script
    raises that exception bare (``ValueError: size 1501 too big``), which is the failure: it was a harness suspect
    (exit 7) wherever the message was shorter than 20 characters, or a bare ``assert``."""
    record = typed(make_record("sin", "raw_jit", "eager", status="error", error_type="CaseBug", error=CASE_BUG + cause))
    run = ScriptRun.of(1, output, 1.0)
    assert reproduced(record, run.returncode, run.output, run.last_line) is expected


class FakeServer:
    """A fork server that starts no process: what it was started with, and the order of what it was asked."""

    def __init__(self, environment: dict[str, str], probe_isas: bool = False, serves: bool = True) -> None:
        self.environment, self.serves, self.asked = environment, serves, ["started"]
        MADE.append(self)

    def ready(self) -> None:
        self.asked.append("ready")
        if not self.serves:
            from harness.execution.prestarted import ServerFailed

            raise ServerFailed("it exited while starting")

    def run(self, script, environment, outputs, timeout, started) -> int:
        self.asked.append("run")
        started(1)
        outputs[0].write_text("no failure: here\n")
        return 0

    def stop(self) -> None:
        self.asked.append("stopped")


MADE: list[FakeServer] = []  # the fake servers started, in order


@pytest.fixture
def fake_servers(monkeypatch: pytest.MonkeyPatch) -> list[FakeServer]:
    MADE.clear()
    monkeypatch.setattr("harness.execution.confirm.ScriptServer", FakeServer)
    monkeypatch.setattr("harness.execution.confirm.kill_group", lambda pid: None)
    return MADE


def test_a_prestarted_fork_server_serves_the_first_script_and_is_started_once(
    fake_servers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """``prestart`` starts the server at once (the run's start), in the scripts' environment without a script's
    own caches or GPU; the first script waits until it serves, and no second server starts."""
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    scripts = Scripts(str(tmp_path / "triton"))
    scripts.prestart()
    assert [server.asked for server in fake_servers] == [["started"]]
    (environment,) = [server.environment for server in fake_servers]
    assert "TORCHINDUCTOR_CACHE_DIR" not in environment and environment["TRITON_CACHE_DIR"] == str(tmp_path / "triton")
    script = tmp_path / "s.py"
    script.write_text("import torch\n")
    runs = [scripts.run(script, 5.0, gpu="1"), scripts.run(script, 5.0)]
    assert [run.returncode for run in runs] == [0, 0] and len(fake_servers) == 1
    assert fake_servers[0].asked == ["started", "ready", "run", "ready", "run"]
    scripts.stop()
    assert fake_servers[0].asked[-1] == "stopped"


def test_a_prestarted_server_that_does_not_serve_leaves_the_scripts_to_fresh_pythons(
    fake_servers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr("harness.execution.confirm.ScriptServer", lambda env, probe: FakeServer(env, probe, False))
    fresh: list[list[str]] = []

    def run_fresh(self, command: list[str], timeout: float, env: dict[str, str]) -> ScriptRun:
        fresh.append(command)
        return ScriptRun.of(0, "ok", 0.1)

    monkeypatch.setattr(Scripts, "_run_fresh", run_fresh)
    scripts = Scripts()
    scripts.prestart()
    script = tmp_path / "s.py"
    script.write_text("import torch\n")
    scripts.run(script, 5.0)
    scripts.run(script, 5.0)
    assert len(fresh) == 2 and [server.asked for server in fake_servers] == [["started", "ready", "stopped"]]


def test_a_run_stopped_before_its_prestarted_server_serves_runs_no_script(fake_servers, tmp_path: Path):
    scripts = Scripts()
    scripts.prestart()
    scripts.stop()
    script = tmp_path / "s.py"
    script.write_text("import torch\n")
    assert scripts.run(script, 5.0).stopped
    assert [server.asked for server in fake_servers] == [["started", "stopped"]]
    scripts.prestart()  # nothing starts after the run stopped
    assert len(fake_servers) == 1


@pytest.mark.parametrize(
    ("gpus", "confirm", "prestarted"), [(("0",), [], True), ((), [], False), (("0",), ["--no-confirm"], False)]
)
def test_a_run_with_a_gpu_starts_the_scripts_fork_server_before_its_first_cell(
    write_matrix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpus: tuple, confirm: list, prestarted: bool
):
    """What the server costs to start (torch imported, the CPU-ISA probes asked on a GPU) overlaps the run's start,
    from before the case modules import, rather than delaying the first failure's script; on the CPU, or with
    --no-confirm, it starts at the first script, if any."""
    order: list[str] = []
    monkeypatch.setattr("harness.plugin.confirming.visible_gpus", lambda: gpus)
    monkeypatch.setattr(Scripts, "prestart", lambda self: order.append("prestart"))
    cells = FakeCells(statuses={"good-control-cpu_fallback": ["error"]})

    def make_process(*args, **kwargs):
        order.append("cell process")
        return cells(*args, **kwargs)

    monkeypatch.setattr(CellProcesses, "make_process", staticmethod(make_process))
    monkeypatch.setattr("harness.execution.confirm.Scripts._run", lambda *args: ScriptRun.of(1, "RuntimeError: x", 1.0))
    matrix = write_matrix(["tests.fixtures.good"], ["control"], {"cpu_fallback": ("cpu", 77)})
    out = tmp_path / "out"
    done = harness_main("run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "--no-timing", *confirm)
    assert done.returncode == 0, done.stdout[-2000:]
    assert order[:2] == (["prestart", "cell process"] if prestarted else ["cell process"] * min(2, len(order)))


def test_bad_input_stops_the_scripts_fork_server_started_before_it_was_read(
    write_matrix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The server starts before the case modules import: a case that does not import ends the run (exit 2) with the
    server stopped, as the early zygote is."""
    asked: list[str] = []
    monkeypatch.setattr("harness.plugin.confirming.visible_gpus", lambda: ("0",))
    monkeypatch.setattr(Scripts, "prestart", lambda self: asked.append("prestart"))
    monkeypatch.setattr(Scripts, "stop", lambda self: asked.append("stop"))
    (tmp_path / "broken_case.py").write_text("import no_such_module_anywhere\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    matrix = write_matrix(["broken_case"], ["control"], {"cpu_fallback": ("cpu", 77)})
    done = harness_main("run", "--matrix", str(matrix), "--report-dir", str(tmp_path / "out"), "-n", "0")
    assert done.returncode == 2, done.stdout[-2000:]
    assert asked[:1] == ["prestart"] and "stop" in asked
