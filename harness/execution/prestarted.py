"""The client of the repro scripts' fork server (harness/execution/script_server.py): started on first use in the
environment the scripts run in, it runs each script in a child forked from a Python that has imported torch and
triton only. A script that sets the environment, or imports a package of its own, before importing torch (Triton's
interpreter: ``TRITON_INTERPRET`` is read at import) is no script for it: ``forkable`` says which are."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Client
from pathlib import Path

from harness.execution import script_server, tempdirs
from harness.execution.zygote import read_lines

START_TIMEOUT = 300.0  # seconds the server may take to import torch
ANSWER_TIMEOUT = 60.0  # seconds a running server may take to fork a script
DRAIN = 5.0  # seconds a killed script's supervisor may take to say so
SOURCE = Path(script_server.__file__).read_text()
FIRST_IMPORT = re.compile(r"^\s*(import|from)\s+(torch|triton)\b", re.MULTILINE)
IMPORT_LINE = re.compile(r"^\s*(?:from\s+(\S+)\s+import\b|import\s+(.+))", re.MULTILINE)


class ServerFailed(Exception):
    pass


def forkable(source: str) -> bool:
    """Whether a script runs the same forked from a Python that imported torch and triton: before its first import
    of either it sets nothing in the environment and imports nothing but the standard library (a package of the
    user's may set variables torch reads as it is imported)."""
    first = FIRST_IMPORT.search(source)
    before = source[: first.start() if first else len(source)]
    return "os.environ" not in before and _top_modules(before) <= set(sys.stdlib_module_names) | {"__future__"}


def _top_modules(code: str) -> set[str]:
    """The top-level modules the import statements of ``code`` name (``import a.b as c, d``: a and d)."""
    names = set()
    for package, listed in IMPORT_LINE.findall(code):
        for name in [package] if package else listed.split("#")[0].split(","):
            words = name.split()
            if words:
                names.add(words[0].split(".")[0])
    return names


class ScriptServer:
    """A fork server: started at once (``probe_isas``: it asks Inductor's CPU-ISA probes before serving,
    script_server.py), serving once ``ready`` has seen it say so; ``run`` one script in a forked child, ``stop`` the
    server."""

    def __init__(self, environment: dict[str, str], probe_isas: bool = False) -> None:
        self.folder = tempdirs.make("harness-scripts-")
        self.address = str(self.folder / "socket")
        with open(self.folder / "log", "w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-c", SOURCE, self.address, str(os.getpid()), *(["probe"] if probe_isas else [])],
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
            )
        self.serving = False

    def ready(self) -> None:
        """Wait until the server serves (at most ``START_TIMEOUT``); ``ServerFailed`` (the server stopped) if it
        exits first."""
        if self.serving:
            return
        assert self.process.stdout is not None
        try:
            ready = "ready" in read_lines(self.process.stdout.fileno(), time.monotonic() + START_TIMEOUT)
        except BaseException:
            self.stop()
            raise
        if not ready:
            said = (self.folder / "log").read_text(errors="replace").strip().splitlines()[-1:]
            self.stop()
            raise ServerFailed(said[0] if said else "the scripts' fork server exited while starting")
        self.serving = True

    def run(
        self, script: Path, environment: dict[str, str], outputs: tuple[Path, Path], timeout: float,
        started: Callable[[int], None],
    ) -> int | None:
        """Run ``script`` (stdout and stderr into ``outputs``); its exit status, or None where it ran past ``timeout``
        (killed with its group). ``started`` gets the child's pid once it runs."""
        with Client(self.address, family="AF_UNIX") as conn:
            conn.send({
                "script": str(script), "cwd": os.getcwd(), "environment": environment,
                "stdout": str(outputs[0]), "stderr": str(outputs[1]),
            })
            if not conn.poll(ANSWER_TIMEOUT):
                raise ServerFailed("the scripts' fork server did not answer")
            kind, pid = conn.recv()
            if kind != "pid":
                raise ServerFailed(pid)
            started(pid)
            if conn.poll(timeout):
                return conn.recv()[1]
            kill_group(pid)
            if conn.poll(DRAIN):
                conn.recv()
            return None

    def stop(self) -> None:
        """The server killed (the scripts it started are killed by their runner) and its folder removed."""
        self.process.kill()
        self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def kill_group(pid: int) -> None:
    """A script's process group (it leads one): the script and the processes it started."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
