"""The repro scripts' fork server: a Python that has imported torch and triton, and nothing of the harness, forks
one child per script, which runs it as ``python script.py`` does: a session of its own, the request's working
directory and environment, ``sys.argv``, ``sys.path[0]``, ``__main__``, ``__file__``, standard streams, uncaught
exception printed from the script's first frame, ``atexit`` and exit status. A fresh Python spends 3-4 s of a 6-25 s
script importing torch (one H200 host); a forked one starts at the script's first line. It has also asked Inductor's
CPU-ISA probes, which every AOTInductor compile asks (in torch 2.11 each probe a g++ build and a fresh Python
importing torch: most of a ``custom_op`` x ``aoti_standalone`` script's 150 s), as the cells' zygote does, where
its starter asks (a run with a GPU: 13 CPU-seconds at each start, which a CPU run's few compiling scripts would not
win back): with CUDA's availability read from NVML, so that nothing starts CUDA here, and it serves only where a
forked child could start CUDA (``fork_is_safe``). A script that sets the environment before it imports torch runs
as a fresh Python (harness/execution/confirm.py).

Started as ``python -c`` with this file's source, a socket address and its starter's pid; prints "ready", then for
each connection forks a supervisor that prepares and forks the child, sends its pid, waits, and sends its exit
status. Imports nothing but the standard library at the top."""

from __future__ import annotations

import atexit
import builtins
import contextlib
import ctypes
import importlib.machinery
import os
import signal
import sys
import tempfile
import threading
import types
from collections.abc import Iterator
from multiprocessing.connection import Connection, Listener
from typing import Any, NoReturn

PRELOAD = ("torch", "triton")  # what every script imports first
BACKLOG = 64  # scripts asked for at once
NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"  # torch.cuda.is_available() by NVML: asking does not poison fork


@contextlib.contextmanager
def setting(name: str, value: str) -> Iterator[None]:
    """The environment variable ``name`` set to ``value`` inside, as it was after."""
    given = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if given is None:
            del os.environ[name]
        else:
            os.environ[name] = given


def probe_isas() -> None:
    """Inductor's CPU-ISA probes, one thread per ISA the CPU reports (x86; ``pick_vec_isa`` asks them in turn, and
    in torch 2.11 every probe is a fresh Python importing torch): they take as long as the longest chain rather than
    their sum. Each ISA caches its own answer, which ``pick_vec_isa`` then reads, as every process forked after."""
    import platform
    from concurrent.futures import ThreadPoolExecutor

    from torch._inductor import cpu_vec_isa

    if platform.machine() in ("x86_64", "AMD64"):
        flags = cpu_vec_isa.x86_isa_checker()
        isas = [isa for isa in cpu_vec_isa.supported_vec_isa_list if all(flag in flags for flag in str(isa).split())]
        with ThreadPoolExecutor(max(1, len(isas))) as pool:
            list(pool.map(bool, isas))
    cpu_vec_isa.pick_vec_isa()


def fork_is_safe() -> bool:
    """Whether a child forked now could start CUDA: a child asks whether CUDA would refuse to start in it
    (something touched CUDA before the fork). Without a GPU there is nothing to refuse: a CUDA build of torch on a
    machine without one (2.6 and 2.8) marks CUDA started in Inductor's CPU-ISA probe, and runs on the CPU all the
    same."""
    import torch

    pid = os.fork()
    if pid == 0:
        bad = getattr(torch._C, "_cuda_isInBadFork", lambda: False)()
        os._exit(1 if bad else 0)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0 or not torch.cuda.is_available()


def prepare(request: dict[str, Any]) -> None:
    """In the supervisor, before it forks the script's child: what the child inherits (working directory,
    environment, standard streams, ``sys.argv`` and ``sys.path[0]`` as ``python script`` sets them)."""
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["environment"])
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
    sys.argv = [request["script"]]
    sys.orig_argv = [sys.executable, request["script"]]
    sys.path[0] = os.path.dirname(os.path.abspath(request["script"]))


def run_script(script: str) -> NoReturn:
    """In the child, in a session of its own: the script run as ``python script`` runs it; exits with its status."""
    try:
        _run_as_main(script)
    except SystemExit as exit:
        _finish(_status(exit.code))
    except KeyboardInterrupt as error:
        _print_uncaught(error, script)
        _finish(1, signal.SIGINT)
    except BaseException as error:
        _print_uncaught(error, script)
        _finish(1)
    _finish(0)


def _run_as_main(script: str) -> None:
    """Execute the script as the ``__main__`` module Python makes of it."""
    main = types.ModuleType("__main__")
    main.__file__ = script
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", script)
    main.__builtins__ = builtins
    main.__cached__ = None
    if sys.version_info < (3, 14):  # the interpreter's own __main__ holds an empty one
        main.__annotations__ = {}
    sys.modules["__main__"] = main
    with open(script, "rb") as source:
        code = compile(source.read(), script, "exec")
    exec(code, main.__dict__)


def _status(code: object) -> int:
    """The exit status ``sys.exit(code)`` gives: None is 0, an int itself, anything else printed and 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _print_uncaught(error: BaseException, script: str) -> None:
    """The traceback Python prints for an uncaught exception: from the script's own first frame (not the server's)."""
    frames = error.__traceback__
    while frames is not None and frames.tb_frame.f_code.co_filename != script:
        frames = frames.tb_next
    if frames is not None:
        error.with_traceback(frames)
    sys.excepthook(type(error), error, error.__traceback__)


def _finish(status: int, killed_by: int | None = None) -> NoReturn:
    """What the interpreter does at exit: wait for the script's threads, run its ``atexit`` functions, flush."""
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    if killed_by is not None:  # an uncaught Ctrl-C ends Python by the signal itself
        signal.signal(killed_by, signal.SIG_DFL)
        os.kill(os.getpid(), killed_by)
    os._exit(status & 0xFF)


def supervise(conn: Connection) -> None:
    """In a supervisor: prepare and fork the script's child; send ``("pid", pid)`` then ``("exit", status)``, or
    ``("failed", why)`` where it could not prepare (the runner then runs the script as a fresh Python)."""
    request: dict[str, Any] = conn.recv()
    try:
        prepare(request)
    except Exception as error:
        conn.send(("failed", f"{type(error).__name__}: {error}"))
        return
    session_made, session_said = os.pipe()
    pid = os.fork()
    if pid == 0:
        conn.close()
        os.close(session_made)
        os.setsid()
        os.close(session_said)
        run_script(os.path.abspath(request["script"]))
    os.close(session_said)
    os.read(session_made, 1)  # the child's session exists (or it died): a kill of its group now reaches it
    os.close(session_made)
    conn.send(("pid", pid))
    conn.send(("exit", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])))


def serve(address: str, starter: int, probe: bool = False) -> None:
    """Import what scripts import first (and, with ``probe``, ask the CPU-ISA probes), then serve at ``address`` (a
    Unix socket) until ``starter`` dies."""
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: dies with whoever started it
    if os.getppid() != starter:  # it died before that was asked
        raise SystemExit("the run that started the scripts' fork server has ended")
    with setting(NVML_CHECK, "1"):
        for module in PRELOAD:
            __import__(module)
        if probe:  # what the probes build goes into a folder of their own, not the user's cache
            with tempfile.TemporaryDirectory(prefix="harness-probes-") as folder:
                with setting("TORCHINDUCTOR_CACHE_DIR", folder):
                    probe_isas()
    if sys.modules["torch"].cuda.is_initialized() or not fork_is_safe():
        raise SystemExit("importing torch or Inductor's CPU-ISA probes started CUDA: a forked script could not use it")
    listener = Listener(address, family="AF_UNIX", backlog=BACKLOG)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # supervisors are reaped by the kernel
    print("ready", flush=True)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    while True:
        conn = listener.accept()
        if os.fork() == 0:
            try:
                listener.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                supervise(conn)
            finally:  # the script's runner gone (the run stopped): nobody to tell
                os._exit(0)
        conn.close()


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), sys.argv[3:] == ["probe"])
