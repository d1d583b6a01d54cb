"""The pytest side of a cell process: a long-lived child, forked from the run's zygote (zygote.py) with torch
already imported, that runs cells one by one (harness/execution/child.py). Its parent (a pytest process) survives
the child's crashes and hangs, turns them into outcomes, and gets a new child (after a CUDA fault the plugin stops
it: harness/plugin/processes.py)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from harness.execution import tempdirs, zygote
from harness.spec import NOT_STARTED, CellSpec, Outcome, Status

START_TIMEOUT = 300.0
SPARE_PID_TIMEOUT = 30.0  # seconds a child begun but not waited for may take to say its pid, when it is ended
STDERR_TAIL_LINES = 8


class CellProcess:
    """Runs cells in a child process; one instance per pytest process (the controller or an xdist worker)."""

    def __init__(
        self,
        log_file: Path,
        environment: dict[str, str],
        gpu: str | None,
        max_rss_mb: float = 0,
        zygote_address: str | None = None,
        zygote_pid: int | None = None,
    ) -> None:
        self.log_file = log_file
        self.environment = environment  # for a zygote of its own: matrix.toml's [environment], the caches
        self.gpu = gpu  # the one GPU this child sees (CUDA_VISIBLE_DEVICES), None for all
        self.max_rss_mb = max_rss_mb  # a child resident above this after a cell is replaced (0: never)
        self.workdir = tempdirs.make("harness-cells-")
        self.own_zygote: subprocess.Popen[str] | None = None  # when not given the run's
        self.address = zygote_address
        self.zygote_pid = zygote_pid  # the run's zygote, which may still be starting
        self.pid: int | None = None
        self.conn: Connection | None = None
        self.device: str | None = None
        self.started: float | None = None  # when the current child had started (sent its device name)
        self.ready = False  # the current child has sent its pid and device name
        self.start_offset = 0  # where the log of the child begun last stood when it was asked for
        self.base_log = log_file  # the first child's log; spares log beside it
        self.children = 0  # children begun (the spare only once adopted)
        self.spares = 0
        self.spare: tuple[Connection, Path] | None = None  # a child started ahead, and its log
        self.adopted = False  # the current child was the spare

    def run(self, spec: CellSpec) -> Outcome:
        """The cell's outcome: the child's own, or ``crash`` / ``timeout`` / ``error`` when the child fails.
        Its measurements say when it started and ended (seconds since the epoch), for a run's timeline, and how
        long starting a fresh cell process took before it (``process_start``, seconds), when it needed one."""
        fresh = not self.ready
        started = time.time()
        outcome = self._run(spec)
        outcome.measurements.started, outcome.measurements.ended = round(started, 3), round(time.time(), 3)
        if fresh and self.started is not None:
            outcome.measurements.process_start = round(self.started - started, 3)
        return outcome

    def _run(self, spec: CellSpec) -> Outcome:
        try:
            self._start()
        except (ChildFailed, zygote.ZygoteFailed, OSError) as failure:
            return Outcome(status=Status.ERROR, error_type=NOT_STARTED, error=str(failure), stage="build")
        assert self.conn is not None
        log_offset = self.log_file.stat().st_size
        start = time.perf_counter()
        self.conn.send(spec)
        timeout = spec.path.timeout
        if not self.conn.poll(timeout):
            self.stop()
            return Outcome(
                status=Status.TIMEOUT,
                error_type="Timeout",
                seconds=round(time.perf_counter() - start, 3),
                error=f"no result after {timeout:g} s (the path's timeout in matrix.toml)",
            )
        try:
            reply = self.conn.recv()
        except (EOFError, OSError):
            reply = ("exit", None)  # the supervisor went too
        if isinstance(reply, tuple):  # the supervisor's word: the cell process exited mid-cell
            code = reply[1]
            died = f"died of {signal.Signals(-code).name}" if code is not None and code < 0 else f"exited {code}"
            hint = " mid-cell (did the case call os._exit?)" if code is not None and code >= 0 else ""
            self.stop()
            return Outcome(
                status=Status.CRASH,
                error_type=died.split()[-1],
                seconds=round(time.perf_counter() - start, 3),
                error=f"cell process {died}{hint}; stderr: {self._log_tail(log_offset)}",
            )
        if self.max_rss_mb and (reply.measurements.rss_mb or 0) > self.max_rss_mb:
            reply.measurements.replaced_above_rss_mb = self.max_rss_mb
            self.stop()  # memory stays bounded however many cells a worker runs
        return reply

    def ask(self, request: tuple[Any, ...], timeout: float) -> Any:
        """The running child's answer to a timing request (harness/execution/child.py ``answer_timing``); None when
        there is no child, or it does not answer within ``timeout`` seconds (it is then stopped)."""
        if self.conn is None:
            return None
        try:
            self.conn.send(request)
            if self.conn.poll(timeout):
                reply = self.conn.recv()
                return None if isinstance(reply, tuple) and reply[:1] == ("exit",) else reply
        except (EOFError, OSError):
            pass
        self.stop()
        return None

    def begin(self) -> None:
        """Start a child now without waiting for it (the next cell waits for whatever is left of its start): the
        spare where one is ready, else a fresh fork of the zygote. From this process's second child on (a cell
        faulted its GPU, or its memory grew too large), each child that has started begins a spare behind it, so
        the next replacement is already started when a cell needs it."""
        if self.conn is not None:
            return
        self.adopted = self.spare is not None
        if self.spare is not None:
            (self.conn, self.log_file), self.spare = self.spare, None
        else:
            self.conn = self._connect(self.log_file)
        self.ready = False
        self.children += 1

    def _start(self) -> None:
        self.begin()
        if self.ready:
            return
        try:
            self._handshake()
        except ChildFailed:
            if not self.adopted:
                raise
            self.stop()  # the spare died while it waited: a fresh child instead
            self.begin()
            self._handshake()
        if self.children > 1 and self.spare is None:
            self._begin_spare()

    def _connect(self, log_file: Path) -> Connection:
        """Ask the zygote (the run's, else one of this process's own) for a child logging to ``log_file``."""
        if self.address is None or (self.own_zygote is not None and self.own_zygote.poll() is not None):
            self._start_own_zygote()
        log_file.parent.mkdir(parents=True, exist_ok=True)
        log_file.touch()
        self.start_offset = log_file.stat().st_size
        request = {"workdir": str(self.workdir), "log_file": str(log_file.absolute()), "gpu": self.gpu}
        try:
            return zygote.connect(self.address, request, None if self.own_zygote else self.zygote_pid)
        except OSError:
            if self.own_zygote is not None:
                raise
            with open(log_file, "a") as log:  # the run's zygote is gone: this worker goes on with its own
                print(f"--- no zygote at {self.address}: starting one for this worker", file=log, flush=True)
            self._start_own_zygote()
            return zygote.connect(self.address, request)

    def _begin_spare(self) -> None:
        """A child started ahead, logging to a file of its own (``WORKER.spareN.log``) while it waits."""
        self.spares += 1
        log_file = self.base_log.with_name(f"{self.base_log.stem}.spare{self.spares}.log")
        try:
            self.spare = (self._connect(log_file), log_file)
        except (OSError, zygote.ZygoteFailed):
            self.spare = None  # the next replacement starts as the first did

    def _handshake(self) -> None:
        """Wait for the child begun last: its pid, then its device name once its warm-up is done."""
        conn, offset = self.conn, self.start_offset
        assert conn is not None
        if not conn.poll(START_TIMEOUT):
            self.stop()
            raise ChildFailed(f"cell process did not start in {START_TIMEOUT:g} s")
        try:
            self.pid = conn.recv()
            if not conn.poll(START_TIMEOUT):
                raise EOFError
            self.device = conn.recv()
        except EOFError:
            self.stop()
            raise ChildFailed(f"cell process failed to start: {self._log_tail(offset)}") from None
        if isinstance(self.device, tuple):  # ("exit", code): the supervisor's word, not a device name
            code, self.device = self.device[1], None  # else the records' device, and the chart, get the tuple
            self.stop()
            raise ChildFailed(f"cell process exited {code} while starting: {self._log_tail(offset)}")
        self.ready = True
        self.started = time.time()

    def _start_own_zygote(self) -> None:
        if self.own_zygote is not None:  # it died: its folder goes with it
            zygote.stop(self.own_zygote, self.address)
        self.own_zygote, self.address = zygote.start(self.environment, self.log_file)

    def stop(self) -> None:
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.conn is not None:
            self.conn.close()
        self.pid = self.conn = self.started = None
        self.ready = False

    def drop_spare(self) -> None:
        """End the spare, if one was begun."""
        if self.spare is not None:
            _end_unanswered(self.spare[0])
            self.spare = None

    def close(self) -> None:
        """Stop the child, the spare (and a zygote of its own) and remove its working directory (packages, inputs)."""
        if self.conn is not None and self.pid is None:  # begun, never waited for
            _end_unanswered(self.conn)
            self.conn = None
        self.stop()
        self.drop_spare()
        if self.own_zygote is not None:
            zygote.stop(self.own_zygote, self.address)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def _log_tail(self, offset: int) -> str:
        with open(self.log_file, errors="replace") as log:
            log.seek(offset)
            lines = [line.rstrip() for line in log if line.strip()]
        fatal = [i for i, line in enumerate(lines) if line.startswith("Fatal Python error")]
        # faulthandler's report (the innermost frames first) says more than the log's last lines
        shown = lines[fatal[-1] : fatal[-1] + STDERR_TAIL_LINES] if fatal else lines[-STDERR_TAIL_LINES:]
        return " | ".join(shown) or "(nothing on stderr)"


class ChildFailed(Exception):
    pass


def _end_unanswered(conn: Connection) -> None:
    """End a child begun but never waited for: its pid is the first thing it sends (the zygote forks it at once)."""
    try:
        if conn.poll(SPARE_PID_TIMEOUT):
            pid = conn.recv()
            if isinstance(pid, int):
                os.kill(pid, signal.SIGKILL)
    except (EOFError, OSError):
        pass  # it has gone already
    conn.close()
