"""The standalone server (harness/cell/standalone.py): a process that imports torch only, never a case, the rest
of the harness or Triton, and forks one fresh child per AOTInductor package, which loads and runs it as a
deployment process would. Started as ``python -c`` with this file's source (``standalone.SERVER_SOURCE``: a
repro script carries it too), or ``serve`` in a fork of the zygote, which holds torch only at that point.
Prints "ready", then for each connection forks a supervisor that forks the fresh child, sends its pid, waits,
and sends its exit code. Imports nothing but the standard library at the top."""

from __future__ import annotations

import ctypes
import faulthandler
import os
import signal
import sys
import traceback
from multiprocessing.connection import Connection, Listener
from typing import Any

NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"  # asking torch.cuda.is_available() here must not poison fork


def load_and_run(package: str, inputs_file: str, output_file: str, device: str) -> None:
    """In the fresh child: load the package and run it on the saved inputs; save what it returns."""
    import torch
    import torch._inductor.package  # aoti_load_package

    inputs = torch.load(inputs_file, map_location=device)  # saved as the cell made them: views keep their strides
    runner = torch._inductor.aoti_load_package(package)
    with torch.no_grad():
        out = runner(*inputs)
    if isinstance(out, tuple | list):  # an op with several outputs
        out = tuple(one.cpu() if isinstance(one, torch.Tensor) else one for one in out)
    torch.save(out.cpu() if isinstance(out, torch.Tensor) else out, output_file)


def supervise(conn: Connection) -> None:
    """In a supervisor: fork the fresh child for the request, send its pid, then its exit code."""
    request: dict[str, Any] = conn.recv()
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


def serve(address: str) -> None:
    """Serve at ``address`` (a Unix socket) until the process that started it dies."""
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: dies with whoever started it
    os.environ[NVML_CHECK] = "1"
    import torch._inductor.package  # noqa: F401  (what every child needs, imported once)
    from torch._inductor.cpu_vec_isa import pick_vec_isa

    pick_vec_isa()  # the CPU-ISA probes a package load runs: here, once
    del os.environ[NVML_CHECK]  # the children ask for CUDA as any process does
    listener = Listener(address, family="AF_UNIX")
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


if __name__ == "__main__":
    serve(sys.argv[1])
