"""The run's bytecode cache (``PYTHONPYCACHEPREFIX``, under --cache-dir) compiled by the zygote before it imports
torch, one process per core. In a fresh cache each process that imports torch compiles every module it imports,
one after the other (the H200 image ships torch without ``.pyc`` files): the zygote's imports took 15-16 s there,
against 3.4-3.9 s for compiling the standard library and IMPORTED_PACKAGES on 16 cores and 6.5-7.3 s for the
imports then (``bench/gpu/probe_bytecode.py``). The files written are the ones the imports would write there
themselves; nothing else changes. Stdlib only: the zygote runs it before it imports anything else."""

from __future__ import annotations

import compileall
import ctypes
import importlib.util
import multiprocessing
import os
import signal
import sys
import sysconfig
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor

# what the zygote, Inductor's probes (fresh processes importing torch) and the cell processes import
IMPORTED_PACKAGES = ("torch", "triton", "sympy", "networkx", "mpmath", "numpy", "jinja2", "setuptools")
SKIPPED = frozenset("test tests idlelib tkinter turtledemo lib2to3 ensurepip site-packages dist-packages".split())
MIN_CORES = 8  # on fewer, compiling all of them costs about what the imports save (2 cores: 9 s against 8 s)


def compile_cache(cores: int | None = None) -> bool:
    """Compile the standard library and IMPORTED_PACKAGES into this process's bytecode cache on ``cores`` (this
    process's cores) processes; whether it did: not without a cache of the run's (``sys.pycache_prefix``), nor on
    fewer than MIN_CORES cores."""
    cores = cores or len(os.sched_getaffinity(0))
    if sys.pycache_prefix is None or cores < MIN_CORES:
        return False
    compile_all(sources(), cores)
    return True


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
    processes forked from this one, which end with it."""
    fork = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(cores, mp_context=fork, initializer=_die_with_parent) as pool:
        list(pool.map(_compile, files, chunksize=64))


def _compile(source: str) -> None:
    compileall.compile_file(source, quiet=2)


def _die_with_parent() -> None:
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
