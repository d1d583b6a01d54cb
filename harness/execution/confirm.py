"""Confirmation: each repro script run in a fresh Python, a few at a time, each within its time limit; what it did
(exit code, or killed at the limit, and the last line it printed: the error a user would paste) comes back."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

TAIL = 8000  # characters of a script's output kept
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(:\s|:$)")  # ``torch._dynamo.exc.Unsupported: ...``


@dataclass(frozen=True)
class ScriptRun:
    """One run of a script: its exit code (negative: the signal that killed it; None: still running at its limit),
    the end of what it printed, and how long it took."""

    returncode: int | None
    output: str
    seconds: float

    @property
    def failed(self) -> bool:
        return self.returncode != 0

    @property
    def last_line(self) -> str:
        """What the script ended with: its last traceback's ``Type: message`` line, else its last line ("no
        failure: ..."), or how it was stopped."""
        if self.returncode is None:
            return f"still running after {self.seconds:.0f} s (killed)"
        lines = [line.rstrip() for line in self.output.strip().splitlines() if line.strip()]
        if self.returncode < 0:
            return f"died of signal {-self.returncode}" + (f": {lines[-1].strip()}" if lines else "")
        raised = _raised(lines) if self.returncode else None
        return raised or (lines[-1].strip() if lines else f"exit {self.returncode}, no output")


def _raised(lines: list[str]) -> str | None:
    """The exception line of the last traceback in ``lines``: the first line after its frames at column 0."""
    starts = [index for index, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
    if not starts:  # the header fell outside the kept tail: the last line shaped like an exception's
        return next((line for line in reversed(lines) if EXCEPTION_LINE.match(line)), None)
    after = [line for line in lines[starts[-1] + 1 :] if not line.startswith(" ")]
    return next((line for line in after if EXCEPTION_LINE.match(line)), after[0] if after else None)


def run_script(script: Path, timeout: float) -> ScriptRun:
    """``python script`` in a fresh process, as a user runs it the first time: where the run's case modules import
    (the working directory leads ``PYTHONPATH``), with Inductor's and Triton's caches empty (a folder of its own),
    stdin closed. What it printed: stderr, then stdout (whose last line is "no failure" when it passes)."""
    caches = tempfile.mkdtemp(prefix="harness-confirm-")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")])),
        "TORCHINDUCTOR_CACHE_DIR": f"{caches}/inductor",
        "TRITON_CACHE_DIR": f"{caches}/triton",
    }
    start = time.perf_counter()
    try:
        return _run(script, timeout, env, start)
    finally:
        shutil.rmtree(caches, ignore_errors=True)


def _run(script: Path, timeout: float, env: dict[str, str], start: float) -> ScriptRun:
    try:
        done = subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as expired:
        output = "".join(_text(part) for part in (expired.stderr, expired.stdout))
        return ScriptRun(None, output[-TAIL:], round(time.perf_counter() - start, 1))
    return ScriptRun(done.returncode, (done.stderr + done.stdout)[-TAIL:], round(time.perf_counter() - start, 1))


def _text(output: str | bytes | None) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def run_scripts(timeouts: dict[Path, float], jobs: int) -> dict[Path, ScriptRun]:
    """Every script, ``jobs`` at a time, each with its own time limit."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {script: pool.submit(run_script, script, limit) for script, limit in timeouts.items()}
        return {script: future.result() for script, future in futures.items()}
