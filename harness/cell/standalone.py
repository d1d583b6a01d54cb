"""The standalone server behind the aoti_standalone path: a process that imports torch only (never a case, and
no op of the harness registered) and forks one fresh child per AOTInductor package, which loads and runs it
as a deployment process would. The run's zygote starts one for the whole run before it imports the harness
(``HARNESS_STANDALONE`` names it); anywhere else (a repro, a bare cell) the first load starts one with
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

STANDALONE_ENV = "HARNESS_STANDALONE"
# the run's folder of AOTInductor packages that aoti_strict and aoti_standalone share (paths/export.py); the
# zygote makes one per run, so cell processes forked from it see the same folder
PACKAGES_ENV = "HARNESS_PACKAGES"
STANDALONE_TIMEOUT = 600.0

# Run as `python -c STANDALONE_SERVER ADDRESS` (or exec'd in a fork of the zygote, which already imported torch
# and ran the probes): prints "ready", then for each connection forks a supervisor that forks the fresh child,
# sends its pid, waits, and sends its exit code. The CPU-ISA probes a package load runs happen here, once.
STANDALONE_SERVER = r"""
import ctypes, faulthandler, os, signal, sys, traceback
from multiprocessing.connection import Listener

ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: dies with whoever started it
os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"  # asking torch.cuda.is_available() here must not poison fork
import torch
import torch._inductor.package
from torch._inductor.cpu_vec_isa import pick_vec_isa


def load_and_run(package, inputs_file, output_file, device):
    inputs = torch.load(inputs_file, map_location=device)  # saved as the cell made them: views keep their strides
    runner = torch._inductor.aoti_load_package(package)
    with torch.no_grad():
        out = runner(*inputs)
    if isinstance(out, (tuple, list)):  # an op with several outputs
        out = tuple(one.cpu() if isinstance(one, torch.Tensor) else one for one in out)
    torch.save(out.cpu() if isinstance(out, torch.Tensor) else out, output_file)


def supervise(conn):
    request = conn.recv()
    pid = os.fork()
    if pid == 0:
        os.environ.update(request.pop("environment"))
        log = os.open(request.pop("log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.chdir(request.pop("cwd"))
        faulthandler.enable()
        code = 0
        try:
            load_and_run(**request)
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    conn.send(pid)
    conn.send(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))


pick_vec_isa()
del os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"]  # the children ask for CUDA as any process does
listener = Listener(sys.argv[1], family="AF_UNIX")
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # supervisors are reaped by the kernel
print("ready", flush=True)
while True:
    conn = listener.accept()
    if os.fork() == 0:
        listener.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        supervise(conn)
        os._exit(0)
    conn.close()
"""
_own_server: list[tuple[subprocess.Popen[str], str]] = []  # (process, address) when this process started one


def standalone_address() -> str:
    """The run's standalone server, or one this process starts (once) when there is none."""
    if os.environ.get(STANDALONE_ENV):
        return os.environ[STANDALONE_ENV]
    if _own_server and _own_server[0][0].poll() is None:
        return _own_server[0][1]
    address = str(Path(tempfile.mkdtemp(prefix="harness-standalone-")) / "socket")
    server = subprocess.Popen([sys.executable, "-c", STANDALONE_SERVER, address], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    if server.stdout.readline() != "ready\n":
        server.kill()
        raise RuntimeError(f"standalone server exited {server.wait()} while starting (its stderr is in the cell log)")
    _own_server[:] = [(server, address)]
    return address


def run_standalone(request: dict[str, Any]) -> int:
    """Run one package in a fresh child of the standalone server; the child's exit code (negative: signal).
    The child sees this process's CUDA_VISIBLE_DEVICES (the cell's GPU)."""
    gpu = {"CUDA_VISIBLE_DEVICES": os.environ["CUDA_VISIBLE_DEVICES"]} if "CUDA_VISIBLE_DEVICES" in os.environ else {}
    with Client(standalone_address(), family="AF_UNIX") as conn:
        conn.send({**request, "environment": gpu})
        pid = conn.recv()
        if not conn.poll(STANDALONE_TIMEOUT):
            os.kill(pid, signal.SIGKILL)
            raise TimeoutError(f"standalone process gave no answer in {STANDALONE_TIMEOUT:g} s")
        return conn.recv()
