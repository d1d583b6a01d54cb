"""Confirmation: each repro script run in a fresh process (forked from a Python that has imported torch and triton
only, harness/execution/script_server.py, or a fresh Python where that cannot serve), a few at a time, each within
its time limit and in a process group of its own (a Ctrl-C at the terminal reaches the run, not its scripts;
``Scripts.stop`` kills every one still running, its children too). What it did comes back: exit code, or killed at
its limit, or stopped with the run, and its error line (the ``Type: message`` line a user would paste), read from its
whole output."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from harness.execution import tempdirs
from harness.execution.prestarted import ScriptServer, ServerFailed, forkable, kill_group

TAIL = 8000  # characters of a script's output kept
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(:\s|:$)")  # ``torch._dynamo.exc.Unsupported: ...``
DRAIN = 5.0  # seconds a killed script's pipes may stay open (a child that left its group holds them)
# the harness as a script meets it: not installed (a folder ahead on PYTHONPATH whose ``harness`` refuses import)
NOT_INSTALLED = "raise ImportError(\"a repro script runs without the harness, as where its bug is filed\")\n"


@dataclass(frozen=True)
class ScriptRun:
    """One run of a script: its exit code (negative: the signal that killed it; None: killed at its limit, or
    ``stopped`` with the run), the end of what it printed, how long it took, and the exception line of its last
    traceback, found in all it printed (``ScriptRun.of``)."""

    returncode: int | None
    output: str
    seconds: float
    raised: str | None = None
    stopped: bool = False
    started: float | None = None  # seconds since the epoch

    @classmethod
    def of(
        cls, returncode: int | None, output: str, seconds: float, stopped: bool = False, started: float | None = None
    ) -> ScriptRun:
        """The run of a script that printed ``output`` (all of it: a long message's first line is far from the
        end), keeping its tail."""
        lines = [line.rstrip() for line in output.splitlines() if line.strip()]
        raised = _raised(lines) if returncode and not stopped else None
        return cls(returncode, output[-TAIL:], seconds, raised, stopped, started)

    @property
    def last_line(self) -> str:
        """What the script ended with: its last traceback's ``Type: message`` line (the message's own first
        line), else its last line ("no failure: ..."), or how it was stopped."""
        if self.stopped:
            return "not confirmed: the run was stopped before the script ended"
        if self.returncode is None:
            return f"still running after {self.seconds:.0f} s, its path's timeout (killed)"
        lines = [line.rstrip() for line in self.output.strip().splitlines() if line.strip()]
        if self.returncode < 0:
            return f"died of signal {-self.returncode}" + (f": {lines[-1].strip()}" if lines else "")
        return self.raised or (lines[-1].strip() if lines else f"exit {self.returncode}, no output")


def _raised(lines: list[str]) -> str | None:
    """The exception line of the last traceback in ``lines``: the first line after its frames at column 0."""
    starts = [index for index, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
    if not starts:  # no traceback printed: the last line shaped like an exception's
        return next((line for line in reversed(lines) if EXCEPTION_LINE.match(line)), None)
    after = [line for line in lines[starts[-1] + 1 :] if not line.startswith(" ")]
    return next((line for line in after if EXCEPTION_LINE.match(line)), after[0] if after else None)


class Scripts:
    """Runs scripts, each as a user runs it the first time: in the environment the run was started in, plus only
    what the script sets itself (``TRITON_INTERPRET`` under the interpreter), never what the harness gives its cells
    (matrix.toml's [environment], the bytecode cache, the CPU threads per worker); ``stop`` kills those running and
    starts no more. ``triton_cache``: a folder of Triton's compiled kernels to share (the run's), else none."""

    def __init__(self, triton_cache: str | None = None, forked: bool = True, probe_isas: bool = False) -> None:
        self.triton_cache = triton_cache
        self.lock = threading.Lock()
        self.running: set[int] = set()
        self.killed: set[int] = set()  # pids that stop() killed
        self.stopped = False
        self.forked = forked  # scripts that ``forkable`` allows run in the fork server while it serves
        self.probe_isas = probe_isas  # the fork server asks Inductor's CPU-ISA probes before serving
        self.server: ScriptServer | None = None
        self.starting = threading.Lock()
        self.hidden: Path | None = None  # ahead on the scripts' PYTHONPATH: ``harness`` as NOT_INSTALLED (``_hide``)

    def stop(self) -> None:
        """Every script still running killed with its children, and none started after."""
        with self.lock:
            self.stopped = True
            for pid in self.running:
                self.killed.add(pid)
                kill_group(pid)
            server, self.server = self.server, None
            hidden, self.hidden = self.hidden, None
        if server is not None:
            server.stop()
        if hidden is not None:
            shutil.rmtree(hidden, ignore_errors=True)

    def run(self, script: Path, timeout: float, gpu: str | None = None) -> ScriptRun:
        """``python script`` in a fresh process (forked from the fork server where ``forkable``, else a fresh
        Python), in the environment the run was started in (on ``gpu`` alone where given: its
        ``CUDA_VISIBLE_DEVICES``, as a user picks one GPU of several): where the run's case
        modules import (the working directory leads ``PYTHONPATH``), with Inductor's cache empty (a folder of its
        own: a stored autotuning result would skip a benchmark that writes into an input), Triton's the shared one
        if given (a compiled kernel is found by a hash of its source, options and compiler: the same binary a compile
        gives), stdin closed, and the harness not importable (a script that needs it, or whose case's own modules
        import it, fails as it would for the maintainer it is filed with). What it printed: stderr, then stdout
        (whose last line is "no failure" when it passes)."""
        caches = tempfile.mkdtemp(prefix="harness-confirm-")
        try:
            return self._run(script.absolute(), timeout, self.environment(caches, gpu))
        finally:
            shutil.rmtree(caches, ignore_errors=True)

    def environment(self, caches: str | None, gpu: str | None = None) -> dict[str, str]:
        """A script's environment (``run``): its own caches in the folder ``caches`` (Triton's only where the run
        shares none); without ``caches`` or ``gpu``, what the fork server starts in, each request setting them."""
        own = {"TORCHINDUCTOR_CACHE_DIR": f"{caches}/inductor", "TRITON_CACHE_DIR": f"{caches}/triton"}
        return {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [self._hide(), os.getcwd(), os.environ.get("PYTHONPATH")])),
            **(own if caches else {}),
            **({"TRITON_CACHE_DIR": self.triton_cache} if self.triton_cache else {}),
            **({"CUDA_VISIBLE_DEVICES": gpu} if gpu is not None else {}),
        }

    def prestart(self) -> None:
        """The fork server started now, not at the first script: it imports torch and asks the CPU-ISA probes
        while the run starts, when the host has idle cores (under a loaded host, one H200 at ac99e1b: 30-46 s from
        the first failure to its script's start). Called from the thread that lives as long as the run: the server
        dies with the thread that started it."""
        with self.starting:
            self._start_server()

    def _start_server(self) -> None:
        """The fork server started, in the scripts' environment without what each request sets itself (a
        script's own caches and GPU), unless it runs or is off."""
        if self.forked and self.server is None and not self.stopped:
            self.server = ScriptServer(self.environment(None), self.probe_isas)

    def _hide(self) -> str:
        """The folder whose ``harness`` package refuses import, made on first use."""
        with self.lock:
            if self.stopped:
                return ""
            if self.hidden is None:
                self.hidden = tempdirs.make("harness-scripts-")
                (self.hidden / "harness").mkdir()
                (self.hidden / "harness" / "__init__.py").write_text(NOT_INSTALLED)
            return str(self.hidden)

    def _run(self, script: Path, timeout: float, env: dict[str, str]) -> ScriptRun:
        server = self._server() if forkable(script.read_text(errors="replace")) else None
        if server is not None:
            try:
                return self._run_forked(server, script, timeout, env, Path(env["TORCHINDUCTOR_CACHE_DIR"]).parent)
            except (ServerFailed, OSError, EOFError):
                self._server_failed(server)
        return self._run_fresh([sys.executable, str(script)], timeout, env)

    def _server(self) -> ScriptServer | None:
        """The fork server (started on first use where ``prestart`` did not start it), once it serves; None where
        it is off, could not start, or the run has stopped."""
        with self.starting:
            self._start_server()
            server = self.server if self.forked else None
            if server is None:
                return None
            try:
                server.ready()
            except (ServerFailed, OSError):
                self._server_failed(server)
                return None
            with self.lock:
                if self.stopped:
                    return None
            return server

    def _server_failed(self, server: ScriptServer) -> None:
        """A server that stopped serving is not asked again: the remaining scripts run as fresh Pythons."""
        with self.lock:
            self.forked = False
            self.server = None
        server.stop()

    def _run_forked(
        self, server: ScriptServer, script: Path, timeout: float, env: dict[str, str], folder: Path
    ) -> ScriptRun:
        start, started = time.perf_counter(), time.time()
        outputs = (folder / "stdout", folder / "stderr")
        mine: list[int] = []

        def running(pid: int) -> None:
            with self.lock:
                mine.append(pid)
                self.running.add(pid)
                if self.stopped:
                    self.killed.add(pid)
                    kill_group(pid)

        try:
            code = server.run(script, env, outputs, timeout, running)
        finally:
            with self.lock:
                self.running.difference_update(mine)
        stopped = any(pid in self.killed for pid in mine)
        said = "".join(path.read_text(errors="replace") for path in (outputs[1], outputs[0]) if path.exists())
        seconds = round(time.perf_counter() - start, 1)
        return ScriptRun.of(None if stopped else code, said, seconds, stopped, round(started, 3))

    def _run_fresh(self, command: list[str], timeout: float, env: dict[str, str]) -> ScriptRun:
        start, started = time.perf_counter(), time.time()
        with self.lock:
            if self.stopped:
                return ScriptRun.of(None, "", 0.0, stopped=True)
            process = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                errors="replace", env=env, start_new_session=True,
            )
            self.running.add(process.pid)
        limited = False
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            limited = True
            kill_group(process.pid)
            stdout, stderr = _drain(process)
        finally:
            with self.lock:
                self.running.discard(process.pid)
        stopped = process.pid in self.killed
        code = None if stopped or limited else process.returncode
        return ScriptRun.of(code, stderr + stdout, round(time.perf_counter() - start, 1), stopped, round(started, 3))


def _drain(process: subprocess.Popen[str]) -> tuple[str, str]:
    """What a killed script printed, unless a child outside its group keeps its pipes open."""
    try:
        return process.communicate(timeout=DRAIN)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return "", ""

