"""The run's bytecode cache (``PYTHONPYCACHEPREFIX``, under --cache-dir) filled before the run's processes import
torch. In a fresh cache each process that imports torch compiles every module it imports, one after the other
(the H200 image ships torch without ``.pyc`` files): the zygote's imports took 15 s there, against 3.5 s for
compiling the standard library and IMPORTED_PACKAGES on 16 cores, one process per core, and 6.5 s for the imports
then. The controller starts this file as a program (``start``) while it imports the case modules, and the zygote
starts once it has ended (``finish``). The files written are the ones the imports would write there themselves;
nothing else changes. Stdlib only: the program imports nothing of the harness."""

from __future__ import annotations

import compileall
import ctypes
import importlib.util
import multiprocessing
import os
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor

# what the zygote, Inductor's probes (fresh processes importing torch) and the cell processes import
IMPORTED_PACKAGES = ("torch", "triton", "sympy", "networkx", "mpmath", "numpy", "jinja2")
SKIPPED = frozenset("test tests idlelib tkinter turtledemo lib2to3 ensurepip site-packages dist-packages".split())
MIN_CORES = 8  # on fewer, compiling all of them costs about what the imports save (2 cores: 9 s against 8 s)


def start(prefix: str, cores: int, packages: Iterable[str] = IMPORTED_PACKAGES) -> subprocess.Popen[bytes] | None:
    """Compile the standard library and ``packages`` into ``prefix`` on ``cores`` processes, in the background (a
    session of its own: ``stop`` ends it and its pool); None, nothing started, on fewer than MIN_CORES."""
    if cores < MIN_CORES:
        return None
    return subprocess.Popen(
        [sys.executable, "-P", __file__, str(cores), *packages],  # -P: nothing imported from this file's folder
        env={**os.environ, "PYTHONPYCACHEPREFIX": prefix},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def finish(process: subprocess.Popen[bytes] | None, timeout: float) -> None:
    """Wait up to ``timeout`` seconds for ``process`` to end, then ``stop`` it: the imports compile what it has not."""
    if process is not None:
        deadline = time.monotonic() + timeout
        while process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        stop(process)


def stop(process: subprocess.Popen[bytes] | None) -> None:
    """End ``process`` and its pool (its session), if it is still running."""
    if process is not None and process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


def sources(packages: Iterable[str] = IMPORTED_PACKAGES) -> Iterator[str]:
    """The ``.py`` files of the standard library and of ``packages``, without the folders SKIPPED names."""
    folders = [sysconfig.get_paths()["stdlib"]]
    for name in packages:
        spec = importlib.util.find_spec(name)  # a top-level name: found, not imported
        if spec is not None:
            folders.extend(spec.submodule_search_locations or [])
    for folder in folders:
        for root, dirs, files in os.walk(folder):
            dirs[:] = [name for name in dirs if name not in SKIPPED and name != "__pycache__"]
            yield from (os.path.join(root, name) for name in files if name.endswith(".py"))


def compile_all(files: Iterable[str], cores: int) -> None:
    """Compile ``files`` into ``sys.pycache_prefix`` (left as they are where already compiled), on ``cores``
    processes that end with this one."""
    fork = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(cores, mp_context=fork, initializer=_die_with_parent) as pool:
        list(pool.map(_compile, files, chunksize=64))


def _compile(source: str) -> None:
    compileall.compile_file(source, quiet=2)


def _die_with_parent() -> None:
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


if __name__ == "__main__":
    _die_with_parent()
    compile_all(sources(sys.argv[2:]), int(sys.argv[1]))
