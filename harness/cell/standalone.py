"""The standalone server behind the aoti_standalone path: a process that imports torch only (never a case, and
no op of the harness registered) and forks one fresh child per AOTInductor package, which loads and runs it
as a deployment process would. The run's zygote starts one for the whole run before it imports the harness
(each cell process gets its address in its request); anywhere else (a repro, a bare cell) the first load starts one with
``python -c``. This module imports nothing heavy: the zygote imports it before forking the server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from multiprocessing.connection import Client
from pathlib import Path
from typing import Any

STANDALONE_TIMEOUT = 600.0

# The server's code (harness/cell/standalone_server.py), run as ``python -c SERVER_SOURCE ADDRESS``: a process
# that imports torch only. Kept as text so that a repro script, which has no harness, carries it too.
SERVER_SOURCE = (Path(__file__).parent / "standalone_server.py").read_text()
_own_server: list[tuple[subprocess.Popen[str], str]] = []  # (process, address) when this process started one


def standalone_address(given: str | None) -> str:
    """The run's standalone server (``given``), or one this process starts (once) when there is none."""
    if given:
        return given
    if _own_server and _own_server[0][0].poll() is None:
        return _own_server[0][1]
    address = str(Path(tempfile.mkdtemp(prefix="harness-standalone-")) / "socket")
    server = subprocess.Popen([sys.executable, "-c", SERVER_SOURCE, address], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    if server.stdout.readline() != "ready\n":
        server.kill()
        raise RuntimeError(f"standalone server exited {server.wait()} while starting (its stderr is in the cell log)")
    _own_server[:] = [(server, address)]
    return address


def run_standalone(request: dict[str, Any], server: str | None) -> int:
    """Run one package in a fresh child of the standalone ``server`` (None: one this process starts); the child's
    exit code (negative: signal). The child sees this process's CUDA_VISIBLE_DEVICES (the cell's GPU)."""
    gpu = {"CUDA_VISIBLE_DEVICES": os.environ["CUDA_VISIBLE_DEVICES"]} if "CUDA_VISIBLE_DEVICES" in os.environ else {}
    with Client(standalone_address(server), family="AF_UNIX") as conn:
        conn.send({**request, "environment": gpu})
        pid = conn.recv()
        if not conn.poll(STANDALONE_TIMEOUT):
            os.kill(pid, signal.SIGKILL)
            raise TimeoutError(f"standalone process gave no answer in {STANDALONE_TIMEOUT:g} s")
        return conn.recv()
