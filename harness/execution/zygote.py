"""The run's fork server ("zygote"): one process imports torch, Inductor and the harness, runs Inductor's
CPU-ISA probes (one thread per ISA) and hashes Triton's and Inductor's code once, without touching CUDA;
every cell process is then a fork of it, so none pays for the imports, the probes or the hashes again (the
probes compile and load one library per ISA under a lock every process shares: with one process per worker
they queued behind each other). The controller starts it before it imports the case modules
(harness/plugin/processes.py, ``EarlyZygote``) and tells the workers its address (xdist's workerinput); a
CellProcess given none starts its own. Before importing the
harness it forks the run's standalone server (harness/cell/standalone.py), which therefore holds torch only.

Each request forks a supervisor, which forks the cell process and, when that exits, sends ``("exit", code)``
on the same connection: the worker learns the signal that killed its cell process as a parent would.

Started as ``python -c BOOT ADDRESS SYS_PATH_JSON`` in the starter's working directory (prints "imported" once
torch is, "ready" once it serves).
"""

from __future__ import annotations

import ctypes
import importlib
import itertools
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path
from typing import Any, NamedTuple

# stdlib only: the standalone server forked from here still holds torch only
from harness.cell import standalone_server
from harness.execution import bytecode, tempdirs
from harness.execution.script_server import NVML_CHECK, fork_is_safe, probe_isas, setting
from harness.spec import RunLocations

# imported once, for every fork: what a cell process uses
PRELOAD = ("torch._inductor.compile_fx", "torch.export", "harness.execution.child")
START_TIMEOUT = 300.0
# a line that says which exception ended a process: ``ImportError: ...``, ``triton.CompilationError: ...``
EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failed)\b(?::.*)?$")
SERVING = "serving from epoch"  # its ready line's end: when it began to serve (the run's start marks)
FAILED_FILE = "failed"  # beside its socket: the exception that ended a zygote before it served, in one line
# the starter's sys.path (absolute) first, so that the harness and the case modules it imported import here
# too, from the starter's working directory (an installed harness as well as a checkout's)
BOOT = (
    "import json, sys; sys.path[:] = json.loads(sys.argv[2]); "
    "from harness.execution.zygote import main; main(*sys.argv[1:3])"
)


class Spawned(NamedTuple):
    """A zygote started by ``spawn``: its process, address, log file, and where its lines begin in that file."""

    process: subprocess.Popen[str]
    address: str
    log_file: Path
    offset: int


def spawn(environment: dict[str, str], log_file: Path | None = None) -> Spawned:
    """Start a zygote with ``environment`` on top of this process's, and this process's ``sys.path``, without
    waiting for it (``printed`` does); it logs to ``log_file``, else to a file in its own temp folder (which
    ``stop`` removes)."""
    folder = tempdirs.make("harness-zygote-")
    address = str(folder / "socket")
    log_file = log_file or folder / "zygote.log"
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "a") as log:
        offset = log.tell()
        process = subprocess.Popen(
            [sys.executable, "-c", BOOT, address, json.dumps(starter_path())],
            env={**os.environ, **environment},
            stdout=subprocess.PIPE,
            stderr=log,
            cwd=os.getcwd(),
        )
    return Spawned(process, address, log_file, offset)


def starter_path() -> list[str]:
    """This process's ``sys.path``, absolute: what a zygote started now imports the harness and the cases from."""
    return [os.path.abspath(entry) for entry in sys.path]


def printed(spawned: Spawned, until: str) -> bool:
    """Whether the zygote printed ``until`` (read up to that line) before it exited or START_TIMEOUT passed."""
    assert spawned.process.stdout is not None
    return until in read_lines(spawned.process.stdout.fileno(), time.monotonic() + START_TIMEOUT)


def failed(spawned: Spawned, shown_log: Path | None = None) -> ZygoteFailed:
    """Why ``spawned`` did not start, from its log (named as ``shown_log``, where it is kept, if given)."""
    said = cause(spawned.log_file, spawned.offset)
    if shown_log is not None:
        said = said.replace(str(spawned.log_file), str(shown_log))
    code = spawned.process.poll()
    return ZygoteFailed(f"the cell processes' fork server exited {code} while starting: {said}")


def start(environment: dict[str, str], log_file: Path, until: str = "ready") -> tuple[subprocess.Popen[str], str]:
    """Start a zygote with ``environment`` on top of this process's; its address once it has printed ``until``:
    "ready" (it serves) or "imported" (torch is imported: its probes and preloads then overlap the workers'
    start, and ``connect`` waits for it; the workers' own imports of torch no longer slow its import)."""
    spawned = spawn(environment, log_file)
    try:
        started = printed(spawned, until)
    except BaseException:  # interrupted (Ctrl-C, SIGTERM): the caller never gets the process to stop
        stop(spawned.process, spawned.address)
        raise
    if not started:
        stop(spawned.process, spawned.address)
        raise failed(spawned)
    return spawned.process, spawned.address


def cause(log_file: Path, offset: int = 0) -> str:
    """Why a process that logs to ``log_file`` failed, in one line: the last exception line written there after
    ``offset`` (``ImportError: cannot import name ...``), else its last line; and where to read more."""
    try:
        with open(log_file, errors="replace") as log:
            log.seek(offset)
            lines = [line.strip() for line in log if line.strip()]
    except OSError:
        lines = []
    errors = [line for line in lines if EXCEPTION_LINE.match(line)]
    said = (errors or lines or ["(nothing on stderr)"])[-1]
    return f"{said[:400]} (see {log_file})"


def read_lines(fd: int, deadline: float) -> Iterator[str]:
    """The lines written to ``fd`` (unbuffered: nothing read beyond a line's end) until EOF or ``deadline``."""
    line = b""
    while select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
        byte = os.read(fd, 1)
        if not byte:
            return
        if byte == b"\n":
            yield line.decode(errors="replace")
            line = b""
        else:
            line += byte


def stop(process: subprocess.Popen[str], address: str) -> None:
    """Kill a zygote ``start`` returned and remove its folder: its socket and the run's shared packages."""
    process.kill()
    process.wait()
    shutil.rmtree(Path(address).parent, ignore_errors=True)


def connect(address: str, request: dict[str, Any], starting_pid: int | None = None) -> Connection:
    """Ask the zygote at ``address`` for a new cell process; the connection then talks to it. With
    ``starting_pid``, wait (up to START_TIMEOUT) while that zygote is alive but not serving yet."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            conn = Client(address, family="AF_UNIX")
            break
        except (FileNotFoundError, ConnectionRefusedError):
            failed = Path(address).parent / FAILED_FILE
            if failed.exists():  # it died before it served: another start would die the same way
                said = failed.read_text()[:400]
                raise ZygoteFailed(f"the cell processes' fork server failed while starting: {said}") from None
            if starting_pid is None or not _alive(starting_pid) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    conn.send(request)
    return conn


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (a dead zygote its starter has not reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


class ZygoteFailed(Exception):
    pass


def _die_with_parent() -> None:
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _supervise(conn: Connection, request: dict[str, Any], locations: RunLocations) -> None:
    """In the supervisor: fork the cell process, wait for it, send its exit code."""
    from harness.execution.child import serve

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    pid = os.fork()
    if pid == 0:
        if request.get("gpu") is not None:
            os.environ["CUDA_VISIBLE_DEVICES"] = request["gpu"]
        conn.send(os.getpid())
        serve(conn, request["workdir"], request["log_file"], locations)
        os._exit(0)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    try:
        conn.send(("exit", code))
    except OSError:
        pass  # the worker has gone: nobody to tell


def _hash_sources() -> None:
    """Compute, once for every fork, what each fresh process that compiles or launches a kernel would compute
    again: Triton's and Inductor's hashes of their own code (pure, cached per process; ``triton_key`` reads
    all of libtriton, about 0.5 s)."""
    from torch._inductor.codecache import torch_key

    from harness.kernel.compat import triton_key

    hashed = triton_key()
    if hashed is not None:
        hashed()
    torch_key()


def _start_standalone_server(address: str) -> None:
    """Fork the run's standalone server (harness/cell/standalone.py) from this process while it holds torch only,
    and wait until it serves; each cell process gets its address in its request (``RunLocations``)."""
    ready_read, ready_write = os.pipe()
    if os.fork() == 0:
        os.close(ready_read)
        os.dup2(ready_write, 1)  # its "ready" line
        standalone_server.serve(address)
        os._exit(0)
    os.close(ready_write)
    with os.fdopen(ready_read) as ready:
        if ready.readline() != "ready\n":
            raise ZygoteFailed("the standalone server exited while starting")


def served_at(log: str, since: float) -> float | None:
    """When (epoch) the first zygote of ``log`` (a log file's text, which earlier runs' zygotes may have written
    into) to start serving at ``since`` or later did; None where none did."""
    found = [float(when) for when in re.findall(rf"{SERVING} (\d+\.\d+)", log)]
    return min((when for when in found if when >= since), default=None)


def main(address: str, sys_path: str) -> None:
    sys.path[:] = json.loads(sys_path)  # the starting process's: the same case modules import
    _die_with_parent()
    zygote = os.getpid()
    try:
        locations = _prepare(address)
    except BaseException as error:  # its starter and every worker read why, rather than start another to see
        if os.getpid() == zygote:  # not a child forked while starting (the standalone server's)
            (Path(address).parent / FAILED_FILE).write_text(" ".join(f"{type(error).__name__}: {error}".split()))
        raise
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # supervisors are reaped by the kernel
    _serve(address, locations)


def _prepare(address: str) -> RunLocations:
    """Everything before serving: the run's bytecode cache compiled (harness/execution/bytecode.py), torch
    imported, the probes, the standalone server, the preloads, the hashes and the check that forking is safe
    (prints "imported" once torch is); what the cell processes share."""
    times = [("start", time.perf_counter())]
    if bytecode.compile_cache():
        times.append(("bytecode", time.perf_counter()))
    with setting(NVML_CHECK, "1"):  # as the user set it (or not) again after: the cell processes inherit it
        import torch._inductor.package  # noqa: F401  (what the standalone server holds: torch only)

        times.append(("import torch", time.perf_counter()))
        print("imported", flush=True)
        probe_isas()
        times.append(("CPU-ISA probes", time.perf_counter()))
        locations = RunLocations(standalone=address + ".standalone", packages=str(Path(address).parent / "packages"))
        _start_standalone_server(locations.standalone)
        Path(locations.packages).mkdir()
        times.append(("standalone server", time.perf_counter()))
        for module in PRELOAD:
            importlib.import_module(module)
        times.append(("import harness, Inductor", time.perf_counter()))
        _hash_sources()
        times.append(("Triton's and Inductor's source hashes", time.perf_counter()))
    if not fork_is_safe():
        raise ZygoteFailed("CUDA was initialised before forking: cell processes could not use the GPU")
    steps = ", ".join(f"{name} {end - begin:.1f} s" for (_, begin), (name, end) in itertools.pairwise(times))
    print(f"zygote {os.getpid()} ready: {steps}; {SERVING} {time.time():.3f}", file=sys.stderr, flush=True)
    return locations


def _serve(address: str, locations: RunLocations) -> None:
    listener = Listener(address, family="AF_UNIX")
    print("ready", flush=True)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # nobody need read the pipe after this line
    while True:
        conn = listener.accept()
        try:
            request = conn.recv()
        except (EOFError, OSError):
            conn.close()
            continue
        if os.fork() == 0:
            listener.close()
            _supervise(conn, request, locations)
            os._exit(0)
        conn.close()
