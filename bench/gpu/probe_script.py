"""Where a repro script's seconds go (no harness code): runs SCRIPT as __main__ with a clock around torch.export.export,
torch._inductor.aoti_compile_and_package and every subprocess.run/check_output it makes, and this process's and its
children's CPU seconds at each step. With --profile-children, a `python -c CODE ARGS` child runs under cProfile and
its 40 costliest calls (cumulative) are printed.
    python3 bench/gpu/probe_script.py [--profile-children] SCRIPT"""

import functools
import os
import resource
import runpy
import subprocess
import sys
import tempfile
import time

START = time.time()
PROFILE_CHILDREN = "--profile-children" in sys.argv
SCRIPT = next(arg for arg in sys.argv[1:] if arg != "--profile-children")


def say(line: str) -> None:
    print(f"[probe] {time.time() - START:7.1f} s  {line}", file=sys.stderr, flush=True)


def cpu() -> str:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return f"cpu self {own.ru_utime + own.ru_stime:6.1f} s, children {kids.ru_utime + kids.ru_stime:6.1f} s"


def profiled(command: list[str]) -> list[str]:
    """``python -c CODE ARGS`` as ``python -m cProfile -s cumulative FILE ARGS``."""
    if not PROFILE_CHILDREN or len(command) < 3 or command[1] != "-c":
        return command
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as code:
        code.write(command[2])
    return [command[0], "-m", "cProfile", "-s", "cumulative", code.name, *command[3:]]


def clocked(name, call):
    @functools.wraps(call)
    def wrapper(*args, **kwargs):
        began = time.time()
        if name == "subprocess" and args and isinstance(args[0], list):
            args = (profiled(args[0]), *args[1:])
        say(f"{name} begins; {cpu()}")
        result = None
        try:
            result = call(*args, **kwargs)
            return result
        finally:
            what = args[0] if name == "subprocess" and args else ""
            what = " ".join(map(str, what))[:140] if isinstance(what, list | tuple) else str(what)[:140]
            say(f"{name} took {time.time() - began:6.1f} s; {cpu()} {what}")
            if PROFILE_CHILDREN and "cProfile" in what and result is not None:
                lines = (result.stdout or "").splitlines()
                start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
                print("\n".join(lines[max(0, start - 4) : start + 41]), file=sys.stderr, flush=True)

    return wrapper


subprocess.run = clocked("subprocess", subprocess.run)
subprocess.check_output = clocked("subprocess", subprocess.check_output)
import torch  # noqa: E402

say(f"torch imported; {cpu()}")
torch.export.export = clocked("export", torch.export.export)
torch._inductor.aoti_compile_and_package = clocked("aoti_compile_and_package", torch._inductor.aoti_compile_and_package)
sys.argv = [SCRIPT]
try:
    runpy.run_path(SCRIPT, run_name="__main__")
finally:
    say(f"done; {cpu()}; pid {os.getpid()}")
