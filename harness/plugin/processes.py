"""The cell processes of a run: the controller starts the run's zygote and tells the xdist workers where it
listens; every pytest process (controller or worker) keeps one ``CellProcess`` (one GPU per worker) and runs
its cells there, re-running a cell that ends wrong (or unlike its baseline) in fresh cell processes, started
together and run one after the other, so the record holds its measured rate."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, cast

import pytest

from harness.errors import InputError
from harness.execution.cellprocess import CellProcess
from harness.matrix.tomlcheck import environment_of
from harness.plugin.inputs import inputs
from harness.plugin.options import options, workers
from harness.plugin.timing import FileCoordination, TimedProcess, timing_phase
from harness.records.schema import to_json
from harness.spec import NOT_STARTED, CellSpec, Outcome, Rerun, Stage, Status, Timing, TimingState

TIMING_INPUT = "harness_timing_dir"  # xdist workerinput: the folder of the run's timing phase (its barrier, lock)
TIMING_OUTPUT = "harness_timing"  # xdist workeroutput: the worker's timings and the GPU's copy bandwidth
ZYGOTE_FAILED = "harness_zygote_failed"  # xdist workerinput: why the run's zygote failed to start, if it did
ENVIRONMENT_INPUT = "harness_cell_environment"  # xdist workerinput: the cell processes' environment (cells_environment)
# the reason a pytest process stops its session with when cell processes cannot start (the session then exits as a
# run that broke, not as an interrupted one)
CANNOT_START = "the cell processes cannot start"
RETRIES_AFTER_START = 1  # a cell process that fails to start, after others did in this run, is tried this once more
MAX_RETIRED = 8  # cell processes a worker keeps alive for their artifacts (each holds a CUDA context)
WORKERS_PER_GPU = 14  # -n auto's bound: as many workers as one GPU has had (16 cores less two, on one H200)
RESERVED_CORES = 2  # the cores -n auto leaves to the controller and the compilers
MIN_COMPILE_THREADS = 2  # the fewest with which Inductor compiles in its pool of processes, as by default

processes_key = pytest.StashKey["CellProcesses"]()
early_key = pytest.StashKey["EarlyZygote"]()
environment_key = pytest.StashKey[dict[str, str]]()  # the controller's: its cell processes' environment
# variables read by Intel's OpenMP runtime as it loads, which torch, triton and the zygote's preloads do not load
UNREAD_BY_PRELOADS = ("KMP_",)
given_key = pytest.StashKey[dict[str, str]]()  # the controller's environment before it imported the case modules


class CellRunner(Protocol):
    """What ``CellProcesses`` needs of a cell process: ``CellProcess`` runs cells in a child forked from the
    zygote; a test's fake (tests/fakes.py) runs them in no process at all."""

    device: str | None  # the device the cells run on, once the process has started

    def run(self, spec: CellSpec) -> Outcome: ...

    def begin(self) -> None: ...  # start the process now, without waiting for it

    def stop(self) -> None: ...  # end the process: the next cell starts a fresh one

    def close(self) -> None: ...  # stop, and remove what the process left


class CellProcesses:
    """Owns the run's zygote (on the controller) and this pytest process's cell process."""

    # how a cell process is made: (log file, environment, GPU, RSS bound, zygote address, zygote pid) -> runner;
    # a test puts a fake's factory here, and then no zygote starts
    make_process: Callable[..., CellRunner] = CellProcess

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.options = options(config)
        self.workerinput: dict[str, Any] = getattr(config, "workerinput", {})
        self.worker = self.workerinput.get("workerid", "main")
        self.zygote: tuple[subprocess.Popen[str], str] | None = None
        self.zygote_log: Path | None = None  # where the run's zygote writes its log while it runs
        self.process: CellRunner | None = None
        self.timing_folder: Path | None = None  # the controller's: its barrier and GPU locks (harness/plugin/timing.py)
        self.pending: dict[str, int | None] = {}  # cell id -> pid of the cell process keeping its artifact
        self.retired: list[CellRunner] = []  # cell processes set aside, alive, for the artifacts they keep
        self.timings: dict[str, Timing] = {}  # after the timing phase: this process's cells
        self.copy_gbps: float | None = None
        self.phase: dict[str, float] = {}  # when this worker's timing phase reached each step (timing_phase)
        self.session: pytest.Session | None = None
        self.cannot_start: str | None = self.workerinput.get(ZYGOTE_FAILED)  # why the run's zygote did not start
        self.started = False  # a cell process of this pytest process started in this run
        self.start_failures = 0  # cells in a row whose cell process did not start

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """On the controller of a run of the matrix, before the workers start: the run's zygote, which every
        cell process is forked from. The workers start once it has imported torch (alone: 1.9 s on the H200
        against 18.3 s beside 14 workers importing torch too); its probes and preloads overlap their start."""
        from harness.execution import tempdirs, zygote

        self.session = session
        if self.workerinput or self.config.option.collectonly:
            return
        self.timing_folder = tempdirs.make("harness-timing-")
        if self.make_process is not CellProcess:  # a fake's cells need no zygote
            return
        tempdirs.remove_dead()  # the folders of runs killed before they could remove their own
        early = self.config.stash.get(early_key, None)
        try:
            misfit = early.misfit(self._environment()) if early is not None else None
            if early is not None and misfit is None:
                self.zygote_log = early.spawned.log_file
                self.zygote = early.adopt(self.log_file)
            else:
                if early is not None:
                    early.stop()
                    self.log_file.parent.mkdir(parents=True, exist_ok=True)
                    with open(self.log_file, "a") as log:
                        print(f"--- the zygote started early no longer fits ({misfit}): another starts", file=log)
                self.zygote_log = self.log_file
                self.zygote = zygote.start(self._environment(), self.log_file, until="imported")
        except zygote.ZygoteFailed as failure:  # the first cell of each worker is recorded so, and the run stops
            self.cannot_start = str(failure)

    @property
    def log_file(self) -> Path:
        """The run's zygote's log: in the report folder."""
        return self.options.report_dir / "logs" / "zygote.log"

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist, on the controller: tell each worker where the run's zygote listens."""
        if self.zygote is not None:
            process, address = self.zygote
            node.workerinput.update(harness_zygote=address, harness_zygote_pid=process.pid)
        if self.cannot_start is not None:
            node.workerinput[ZYGOTE_FAILED] = self.cannot_start
        if self.timing_folder is not None:
            node.workerinput[TIMING_INPUT] = str(self.timing_folder)
        if environment_key in self.config.stash:
            node.workerinput[ENVIRONMENT_INPUT] = self.config.stash[environment_key]

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Any:
        """After this process's last cell: the timing phase (harness/plugin/timing.py); a worker sends its
        timings to the controller with its output."""
        result = yield
        folder = self.workerinput.get(TIMING_INPUT) or self.timing_folder
        # xdist's controller runs no cell: its workers do, and each times its own
        controller = not self.workerinput and getattr(self.config.option, "dist", "no") != "no"
        if folder is not None and not controller and not session.shouldfail and not session.shouldstop:
            coordination = FileCoordination(Path(folder), int(self.workerinput.get("workercount", 1)), self.gpu)
            process = cast(TimedProcess | None, self.process)
            retired = cast(tuple[TimedProcess, ...], tuple(self.retired))
            self.timings, self.copy_gbps = timing_phase(
                self.pending, process, coordination, self.worker, retired, self.phase
            )
        if self.workerinput:
            timings = {cell: to_json(timing) for cell, timing in self.timings.items()}
            output: dict[str, Any] = self.config.workeroutput  # type: ignore[attr-defined]
            sent = {"timings": timings, "copy_gbps": self.copy_gbps, "phase": self.phase, "worker": self.worker}
            output[TIMING_OUTPUT] = sent
        return result

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        for process in [*self.retired, *([self.process] if self.process is not None else [])]:
            process.close()
        if self.timing_folder is not None:
            shutil.rmtree(self.timing_folder, ignore_errors=True)
        if self.zygote is not None:
            from harness.execution import tempdirs, zygote

            early = self.config.stash.get(early_key, None)
            if early is not None and early.spawned.address == self.zygote[1]:
                early.stop()  # its log kept in the report folder
            else:
                zygote.stop(*self.zygote)
            # the folders of xdist workers killed mid-cell, before they could remove their own (an interrupted run)
            tempdirs.remove_dead()

    def run(self, spec: CellSpec) -> Outcome:
        """Run the cell; when it ends ``wrong``, or with a status unlike the baseline's, run it ``reruns``
        more times and keep every attempt's status in attempt order (the first is the record's;
        ``measurements.ended`` is the last attempt's end)."""
        if not self.options.timing:
            spec = dataclasses.replace(spec, timed=False)
        if self.cannot_start is not None:
            self._stop_session(self.cannot_start)
            return Outcome(status=Status.ERROR, error_type=NOT_STARTED, error=self.cannot_start, stage=Stage.BUILD)
        process = self._cell_process()
        outcome = self._run_in(process, spec)
        if outcome.error_type == NOT_STARTED:
            self.start_failures += 1
            if not self.started or self.start_failures > RETRIES_AFTER_START:
                self._stop_session(outcome.error or "")
            return outcome
        self.started, self.start_failures = True, 0
        if outcome.timing is not None and outcome.timing.state is TimingState.PENDING:
            self.pending[spec.id] = getattr(process, "pid", None)  # lost once that process is replaced
        outcome.measurements.worker = self.worker  # the pytest process's lane on the run's timeline
        plan = inputs(self.config).plan
        if not suspect(outcome.status, plan.baseline.get(spec.id)) or not plan.reruns:
            return outcome
        attempts = self._rerun(spec, range(2, plan.reruns + 2))
        outcome.outcomes = [outcome.status, *(attempt.status for attempt in attempts)]
        outcome.measurements.ended = max(attempt.measurements.ended or 0.0 for attempt in attempts)  # the bar spans all
        return outcome

    def _stop_session(self, why: str) -> None:
        """The run cannot measure: no cell process starts (none has in this pytest process, or one failed again
        after a retry). The session stops after this cell (its record is kept) rather than try again for every
        cell; the controller's exit status is then that of a run that broke (harness/plugin/session.py)."""
        if self.session is not None:
            self.session.shouldfail = f"{CANNOT_START}: {why}"

    def _rerun(self, spec: CellSpec, numbers: range) -> list[Outcome]:
        """The attempts ``numbers`` of the cell, each in a fresh cell process of its own (forked from the zygote, so
        nothing of another attempt, autotune caches included, is in it), all begun at once and run one after the
        other: the last in this worker's own process, which goes on with the next cell, the others in processes
        that log to ``WORKER.attemptN.log`` and end with their attempt."""
        side = [self._new_process(f"{self.worker}.attempt{number}") for number in numbers[:-1]]
        try:
            for process in side:
                process.begin()
            self._retire()
            own = self._cell_process()
            own.begin()
            attempts = zip(numbers[:-1], side, strict=True)
            outcomes = [process.run(dataclasses.replace(spec, attempt=number)) for number, process in attempts]
        finally:
            for process in side:
                process.close()
        outcomes.append(self._run_in(own, dataclasses.replace(spec, attempt=numbers[-1])))
        return outcomes

    def _retire(self) -> None:
        """End this worker's cell process, so that the next cell gets a fresh one; a process keeping artifacts
        for the timing phase is set aside alive instead (up to ``MAX_RETIRED``), to time them there."""
        process = self.process
        if process is None:
            return
        keeps = getattr(process, "pid", None) in self.pending.values()
        if keeps and self.options.timing and len(self.retired) < MAX_RETIRED:
            self.retired.append(process)
            self.process = None
        else:
            process.stop()

    @staticmethod
    def _run_in(process: CellRunner, spec: CellSpec) -> Outcome:
        """Run the cell in ``process``; after a CUDA fault (the cell's own, found by its end-of-cell sync, or by
        the timing's check after its verdict) the process is stopped: its CUDA context may be poisoned, and the
        next cell gets a fresh one."""
        outcome = process.run(spec)
        if outcome.cuda_fault or outcome.poisoned:
            process.stop()
        return outcome

    @property
    def device(self) -> str | None:
        return self.process.device if self.process is not None else None

    @property
    def gpu(self) -> str | None:
        """The GPU this worker's cell processes see, and whose lock its timing phase holds (None: every GPU)."""
        return assigned_gpu(self.worker, inputs(self.config).plan.gpus)

    def _cell_process(self) -> CellRunner:
        if self.process is None:
            self.process = self._new_process(self.worker)
        return self.process

    def _new_process(self, log_name: str) -> CellRunner:
        address, pid = self._zygote_address()
        return self.make_process(
            self.options.report_dir / "logs" / f"{log_name}.log",
            self._environment(),
            self.gpu,
            self.options.max_rss_mb,
            address,
            pid,
        )

    def _zygote_address(self) -> tuple[str | None, int | None]:
        """The run's zygote: (address, pid) from the controller, or (None, None) when it started none."""
        if "harness_zygote" in self.workerinput:
            return self.workerinput["harness_zygote"], self.workerinput["harness_zygote_pid"]
        if self.zygote is not None:
            return self.zygote[1], self.zygote[0].pid
        return None, None

    def _environment(self) -> dict[str, str]:
        return cells_environment(self.config)


def cells_environment(config: pytest.Config) -> dict[str, str]:
    """The cell processes' environment (``cell_environment``), as the controller made it before it imported the case
    modules (``start_early``), which a worker gets from it: an import can set a cache folder's variable there
    (Inductor names its default cache folder so), and the run's --cache-dir must still hold the caches. Made now
    where the controller made none (its matrix file was unreadable then)."""
    made = getattr(config, "workerinput", {}).get(ENVIRONMENT_INPUT) or config.stash.get(environment_key, None)
    if made is not None:
        return made
    return cell_environment(inputs(config).plan.environment, options(config).cache_dir, workers(config))


class EarlyZygote:
    """The run's zygote, started by the controller before it imports the case modules (``start_early``), so that
    its bytecode, imports and probes overlap theirs; the session adopts it once its report folder is locked, where
    the environment and ``sys.path`` it would start a zygote with are still the ones this one got (a case module
    may change either), and stops it otherwise. It logs into its temp folder until it is adopted or stopped."""

    def __init__(self, environment: dict[str, str]) -> None:
        from harness.execution import zygote

        self.environment = {**os.environ, **environment}
        self.sys_path = zygote.starter_path()
        self.spawned = zygote.spawn(environment)
        self.kept_log: Path | None = None

    def misfit(self, environment: dict[str, str]) -> str | None:
        """Why a zygote started now with ``environment`` would differ from this one (None: it would not). Intel
        OpenMP's variables (``UNREAD_BY_PRELOADS``) are left out: nothing the zygote imports reads them, and a
        cell process sets them as the user's process does, when it imports the case (Liger's modules import
        transformers, which imports scikit-learn, which sets two: a second zygote started for them, its probes
        about 8 s before the first cells on one H200)."""
        from harness.execution import zygote

        if self.sys_path != zygote.starter_path():
            return "sys.path changed"
        now = {**os.environ, **environment}
        names = {name for name in {*now, *self.environment} if not name.startswith(UNREAD_BY_PRELOADS)}
        changed = sorted(name for name in names if now.get(name) != self.environment.get(name))
        return f"environment changed: {', '.join(changed)}" if changed else None

    def adopt(self, log_file: Path) -> tuple[subprocess.Popen[str], str]:
        """The zygote's process and address once it has imported torch (``ZygoteFailed`` if it exits first); its
        log is kept in ``log_file`` when it stops."""
        from harness.execution import zygote

        self.kept_log = log_file
        try:
            started = zygote.printed(self.spawned, "imported")
        except BaseException:
            self.stop()
            raise
        if not started:
            failure = zygote.failed(self.spawned, log_file)
            self.stop()
            raise failure
        return self.spawned.process, self.spawned.address

    def stop(self) -> None:
        """Stop the zygote (if it runs), its log kept where ``adopt`` said."""
        from harness.execution import zygote

        if self.kept_log is not None and self.spawned.log_file.exists():
            self.kept_log.parent.mkdir(parents=True, exist_ok=True)
            with open(self.kept_log, "a") as kept:
                kept.write(self.spawned.log_file.read_text(errors="replace"))
            self.kept_log = None
        zygote.stop(self.spawned.process, self.spawned.address)


def start_early(config: pytest.Config) -> None:
    """On the controller of a run, before it imports the case modules: its environment as given (the records'
    ``settings``), the cell processes' environment (``cells_environment``) and the run's zygote (``EarlyZygote``),
    stopped when the config is cleaned up unless the session has adopted it. The last two not for --collect-only
    or where the matrix file is unreadable (its check says why, in its turn), and no zygote where a fake runs the
    cells: the session then starts its zygote itself, as it does where this one no longer fits."""
    config.stash[given_key] = dict(os.environ)
    if config.option.collectonly:
        return
    given = options(config)
    try:
        environment = cell_environment(environment_of(given.matrix_file), given.cache_dir, workers(config))
    except InputError:
        return
    config.stash[environment_key] = environment
    if CellProcesses.make_process is not CellProcess:
        return
    early = EarlyZygote(environment)
    config.stash[early_key] = early
    config.add_cleanup(early.stop)


def suspect(status: str, expected: str | None) -> bool:
    """Whether a cell's attempts may differ, so that it is re-run (its status's ``rerun`` in harness/spec.py):
    it ended ``wrong``, or (not a skip) unlike its baseline's ``expected`` status. A deterministic verdict
    (``blind``, ``graph_break``, an error) is not re-run for itself."""
    rerun = Status(status).rule.rerun
    return rerun is Rerun.ALWAYS or (rerun is Rerun.UNEXPECTED and expected is not None and status != expected)


def default_workers(cores: int, gpus: int) -> int:
    """``-n auto``: one worker per core less two (the controller, the compilers), and on a host with GPUs at most
    ``WORKERS_PER_GPU`` per GPU."""
    by_cores = max(1, cores - RESERVED_CORES)
    return min(by_cores, WORKERS_PER_GPU * gpus) if gpus else by_cores


def cores_per_worker(workers: int, cores: int) -> int:
    """The cores each of ``workers`` has of ``cores``: its cell processes' CPU threads."""
    return max(1, cores // max(1, workers))


def compile_threads(workers: int, cores: int) -> int:
    """Inductor's compile threads in each of ``workers``' cell processes: their cores, and at least
    ``MIN_COMPILE_THREADS``, so that a cell compiles in Inductor's pool of compile processes as a user's program
    does (at one thread Inductor compiles in the calling process instead, a code path users do not run)."""
    return max(MIN_COMPILE_THREADS, cores_per_worker(workers, cores))


def host_cores() -> int:
    """This host's cores, as the workers and their threads are counted from."""
    return os.cpu_count() or 1


def cache_folders(cache_dir: Path) -> dict[str, str]:
    """The cell processes' caches under ``cache_dir``, as the variables naming them: bytecode, Inductor, Triton."""
    cache_dir = cache_dir.resolve()
    return {
        "PYTHONPYCACHEPREFIX": str(cache_dir / "pycache"),
        "TORCHINDUCTOR_CACHE_DIR": str(cache_dir / "inductor"),
        "TRITON_CACHE_DIR": str(cache_dir / "triton"),
    }


def cell_environment(environment: dict[str, str], cache_dir: Path, workers: int = 1) -> dict[str, str]:
    """The cell processes' environment: matrix.toml's [environment], then the caches under ``cache_dir``
    (bytecode, Inductor, Triton), torch's CPU threads and Inductor's compile threads per process (the cores shared
    among ``workers``), unless the caller's environment or [environment] already names them. Without the thread
    bound every cell process starts one intra-op thread per core: 30 workers on 32 cores ran each cell about twice
    as long; without the compile bound each starts Inductor's pool of one compile process per core (up to 32) at its
    first compile (``compile_threads``)."""
    cores = host_cores()
    chosen = {
        **cache_folders(cache_dir),
        "OMP_NUM_THREADS": str(cores_per_worker(workers, cores)),
        "TORCHINDUCTOR_COMPILE_THREADS": str(compile_threads(workers, cores)),
    }
    given = {**os.environ, **environment}
    return {**environment, **{name: value for name, value in chosen.items() if name not in given}}


def assigned_gpu(worker: str, gpus: tuple[str, ...]) -> str | None:
    """One GPU per worker, round-robin over ``gpus`` (gw0 -> first, gw1 -> second, ...); None (no
    restriction) without any."""
    if not gpus:
        return None
    index = int(worker.removeprefix("gw")) if worker.startswith("gw") and worker[2:].isdigit() else 0
    return gpus[index % len(gpus)]
