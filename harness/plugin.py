"""The pytest plugin: collects matrix.toml as one test item per cell, runs each in the cell process,
and (on the controller) writes every record to results.json as it arrives, then draws the chart."""

from __future__ import annotations

import os
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from harness.config import Matrix, PathSpec, cell_id, load_matrix, parse_ids, parse_shard, select
from harness.errors import EXIT_BAD_INPUT, InputError
from harness.records import FAILURES, environment, memory_by_process, new_record, read_results, summary, write_results

RECORD_PROPERTY = "harness_record"
matrix_key = pytest.StashKey[Matrix]()
process_key = pytest.StashKey[Any]()  # the harness.worker.CellProcess
zygote_key = pytest.StashKey[Any]()  # (process, address) of the run's zygote (controller only)
PROGRESS_EVERY = 25


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "Triton/PyTorch compatibility matrix")
    group.addoption("--matrix", default="matrix.toml", help="the matrix file to collect (default: matrix.toml)")
    group.addoption("--report-dir", default="reports", help="where results.json and matrix.md go (default: reports)")
    for axis in ("cases", "styles", "paths"):
        group.addoption(f"--{axis}", default=None, type=parse_ids, help=f"only these {axis} (comma-separated ids)")
    group.addoption("--cells", default=None, type=parse_ids, help="only these cell ids (comma-separated)")
    group.addoption("--shard", default=None, type=parse_shard, help="I/N: run the I-th of N interleaved shares")
    group.addoption("--resume", action="store_true", help="keep the records in --report-dir, run only missing cells")
    group.addoption(
        "--cache-dir",
        default=".cache",
        help="bytecode, Inductor and Triton caches of the cell processes (default: .cache); keep it for warm runs",
    )
    group.addoption(
        "--max-rss-mb",
        type=float,
        default=4096,
        help="replace a cell process resident above this many MiB after a cell (default 4096; 0: never)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cell: one cell of the compatibility matrix")
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(ResultsWriter(config), "harness-results")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """On the controller of a run of the matrix, before the workers start: the run's zygote, which every cell
    process is forked from (harness/zygote.py)."""
    from harness import zygote

    config = session.config
    if hasattr(config, "workerinput") or config.option.collectonly or not _runs_matrix(config):
        return
    environment = cell_environment(_matrix(config), Path(config.getoption("cache_dir")))
    log_file = Path(config.getoption("report_dir")) / "logs" / "zygote.log"
    config.stash[zygote_key] = zygote.start(environment, log_file, wait=False)  # its start overlaps the workers'


def _runs_matrix(config: pytest.Config) -> bool:
    matrix = Path(config.getoption("matrix")).resolve()
    return any(Path(arg.split("::")[0]).resolve() == matrix for arg in config.args)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist, on the controller: tell each worker where the run's zygote listens."""
    if zygote_key in node.config.stash:
        process, address = node.config.stash[zygote_key]
        node.workerinput.update(harness_zygote=address, harness_zygote_pid=process.pid)


def pytest_unconfigure(config: pytest.Config) -> None:
    process = config.stash.get(process_key, None)
    if process is not None:
        process.close()
    if zygote_key in config.stash:
        zygote_process, _ = config.stash[zygote_key]
        zygote_process.kill()
        zygote_process.wait()


def _matrix(config: pytest.Config) -> Matrix:
    if matrix_key not in config.stash:
        try:
            config.stash[matrix_key] = selected_matrix(config)
        except InputError as error:
            pytest.exit(str(error), returncode=EXIT_BAD_INPUT)
    return config.stash[matrix_key]


def selected_matrix(config: pytest.Config) -> Matrix:
    import torch

    matrix = load_matrix(Path(config.getoption("matrix")))
    axes = {axis: config.getoption(axis) for axis in ("cases", "styles", "paths")}
    return select(matrix, **axes, cuda=torch.cuda.is_available())


def _resumed(config: pytest.Config) -> dict[str, Any] | None:
    """The results already on disk, when resuming (None otherwise)."""
    if not config.getoption("resume"):
        return None
    file = Path(config.getoption("report_dir")) / "results.json"
    try:
        return read_results(file) if file.exists() else None
    except InputError as error:
        pytest.exit(str(error), returncode=EXIT_BAD_INPUT)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    previous = _resumed(config)
    done = {cell["id"] for cell in previous["cells"]} if previous else set()
    cells = [item for item in items if isinstance(item, CellItem)]
    wanted = config.getoption("cells")
    if wanted:
        unknown = sorted(set(wanted) - {item.name for item in cells})
        if unknown:
            pytest.exit(f"command line: --cells: unknown cell id(s) {', '.join(unknown)}", returncode=EXIT_BAD_INPUT)
    shard, shards = config.getoption("shard") or (1, 1)
    in_shard = {item.name for index, item in enumerate(cells) if index % shards == shard - 1}
    keep = [
        item
        for item in items
        if not isinstance(item, CellItem)
        or (item.name in in_shard and item.name not in done and (not wanted or item.name in wanted))
    ]
    if len(keep) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in keep])
    # Longest first, the path's timeout standing for its cost: the AOTInductor cells start at once rather than
    # trail at the end on a few workers (stable: the chart keeps matrix.toml's order, from cell_ids()).
    items[:] = sorted(keep, key=lambda item: -item.spec.timeout if isinstance(item, CellItem) else 0.0)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.resolve() == Path(parent.config.getoption("matrix")).resolve():
        return MatrixFile.from_parent(parent, path=file_path)
    return None


class MatrixFile(pytest.File):
    def collect(self) -> Generator[CellItem, None, None]:
        matrix = _matrix(self.config)
        for case in matrix.cases:
            for style in matrix.styles:
                for spec in matrix.paths:
                    item = CellItem.from_parent(
                        self, name=cell_id(case, style, spec.id), case=case, style=style, spec=spec
                    )
                    item.add_marker(pytest.mark.cell)
                    yield item


def cell_environment(matrix: Matrix, cache_dir: Path) -> dict[str, str]:
    """The cell processes' environment: matrix.toml's [environment], then the caches under ``cache_dir``
    (bytecode, Inductor, Triton) unless the caller's environment already names them."""
    cache_dir = cache_dir.resolve()
    caches = {
        "PYTHONPYCACHEPREFIX": cache_dir / "pycache",
        "TORCHINDUCTOR_CACHE_DIR": cache_dir / "inductor",
        "TRITON_CACHE_DIR": cache_dir / "triton",
    }
    chosen = {name: str(folder) for name, folder in caches.items() if name not in os.environ}
    return {**matrix.environment, **chosen}


def assigned_gpu(worker: str) -> str | None:
    """One GPU per worker, round-robin over the visible ones (gw0 -> first, gw1 -> second, ...); None (no
    restriction) with fewer than two GPUs."""
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count < 2:
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [item.strip() for item in visible.split(",")][:count] if visible else [str(i) for i in range(count)]
    index = int(worker.removeprefix("gw")) if worker.startswith("gw") and worker[2:].isdigit() else 0
    return ids[index % len(ids)]


class CellFailed(Exception):
    """A cell whose status is not pass or skip; the record says why."""


class CellItem(pytest.Item):
    def __init__(self, *, case: str, style: str, spec: PathSpec, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case, self.style, self.spec = case, style, spec
        self.record: dict[str, Any] | None = None

    def runtest(self) -> None:
        from harness.worker import CellProcess

        if process_key not in self.config.stash:
            report_dir = Path(self.config.getoption("report_dir"))
            workerinput = getattr(self.config, "workerinput", {})
            worker = workerinput.get("workerid", "main")
            matrix = self.config.stash[matrix_key]
            self.config.stash[process_key] = CellProcess(
                matrix.file,
                report_dir / "logs" / f"{worker}.log",
                cell_environment(matrix, Path(self.config.getoption("cache_dir"))),
                assigned_gpu(worker),
                self.config.getoption("max_rss_mb"),
                *self._zygote(workerinput),
            )
        process = self.config.stash[process_key]
        matrix = self.config.stash[matrix_key]
        outcome = process.run(matrix.modules[self.case], self.case, self.style, self.spec)
        self.record = new_record(self.case, self.style, self.spec.id, module=matrix.modules[self.case], **outcome)
        self.user_properties.append(("harness_device", process.device))
        if self.record["status"] == "skip":
            pytest.skip(self.record["reason"])
        if self.record["status"] != "pass":
            raise CellFailed(summary(self.record))

    def _zygote(self, workerinput: dict[str, Any]) -> tuple[str | None, int | None]:
        """The run's zygote: (address, pid) from the controller, or (None, None) when it started none."""
        if "harness_zygote" in workerinput:
            return workerinput["harness_zygote"], workerinput["harness_zygote_pid"]
        if zygote_key in self.config.stash:
            process, address = self.config.stash[zygote_key]
            return address, process.pid
        return None, None

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CellFailed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo, style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.name


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if isinstance(item, CellItem) and call.when == "call" and item.record is not None:
        report.user_properties.append((RECORD_PROPERTY, item.record))
    return report


def record_of(report: pytest.TestReport) -> dict[str, Any] | None:
    return next((value for name, value in report.user_properties if name == RECORD_PROPERTY), None)


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, str] | None:
    record = record_of(report) if report.when == "call" else None
    if record is not None and record["status"] in FAILURES:
        status = record["status"]
        return status, {"wrong": "W", "error": "E", "crash": "C", "timeout": "T"}[status], status.upper()
    return None


class ResultsWriter:
    """On the controller: every record to results.json as it arrives; the chart at the end."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        report_dir = Path(config.getoption("report_dir"))
        self.results_file = report_dir / "results.json"
        self.chart_file = report_dir / "matrix.md"
        self.repro_dir = report_dir / "repros"
        self.cells: dict[str, dict[str, Any]] = {}
        self.expected: list[str] = []
        self.env: dict[str, Any] | None = None
        self.start = time.perf_counter()
        self.resumed: list[str] = []
        self.previous_env: dict[str, Any] = {}
        self.finished = False
        previous = _resumed(config)
        if previous is not None:
            import torch

            if previous["environment"].get("torch") != torch.__version__:
                pytest.exit(
                    f"{self.results_file}: environment.torch: a run of torch "
                    f"{previous['environment'].get('torch')} cannot be resumed under torch {torch.__version__}",
                    returncode=EXIT_BAD_INPUT,
                )
            self.cells = {cell["id"]: cell for cell in previous["cells"]}
            self.resumed = list(self.cells)
            self.previous_env = previous["environment"]

    def _environment(self, device: str | None) -> dict[str, Any]:
        if self.env is None:
            option = self.config.option
            workers = len(option.tx) if getattr(option, "dist", "no") != "no" and getattr(option, "tx", None) else 1
            self.env = environment(device or "unknown", workers, str(self.config.getoption("matrix")))
            self.env["docs"] = _matrix(self.config).docs
            self.env["cell_environment"] = _matrix(self.config).environment
            self.env["cache_dir"] = str(Path(self.config.getoption("cache_dir")).resolve())
        return self.env

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._expect([item.name for item in session.items if isinstance(item, CellItem)])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not self.expected:
            matrix_name = Path(self.config.getoption("matrix")).name
            self._expect([nodeid.rpartition("::")[2] for nodeid in ids if nodeid.split("::")[0].endswith(matrix_name)])

    def _expect(self, to_run: list[str]) -> None:
        """The cells this run must record: those selected now, plus those a resumed run already has."""
        wanted = set(to_run) | set(self.resumed)
        if not wanted:
            return
        order = [*self.previous_env.get("expected_cells", []), *_matrix(self.config).cell_ids()]
        self.expected = list(dict.fromkeys(cell for cell in order if cell in wanted))
        self.expected += sorted(wanted - set(self.expected))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = record_of(report) or self._lost(report)
        if record is None:
            return
        device = next((value for name, value in report.user_properties if name == "harness_device"), None)
        env = self._environment(device)
        if env["device"] == "unknown" and device:
            env["device"] = device
        self.cells[record["id"]] = record
        self._write(complete=False)
        done = len(self.cells)
        if done % PROGRESS_EVERY == 0 or done == len(self.expected):
            failing = sum(1 for r in self.cells.values() if r["status"] in FAILURES)
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(f"[harness] {done}/{len(self.expected)} cells recorded, {failing} not passing")

    def _lost(self, report: pytest.TestReport) -> dict[str, Any] | None:
        """A cell whose pytest process itself died: xdist reports it failed, with no record."""
        name = report.nodeid.rpartition("::")[2]
        if not report.failed or name not in self.expected:
            return None
        case, style, path = name.split("-")
        return new_record(
            case, style, path, status="crash", error_type="WorkerLost", error=str(report.longrepr)[-2000:]
        )

    def _write(self, complete: bool) -> None:
        env = dict(self._environment(None))
        env["wall_seconds"] = round(time.perf_counter() - self.start, 1)
        env["complete"] = complete and all(cell in self.cells for cell in self.expected)
        env["expected_cells"] = self.expected
        if self.resumed:
            env["resumed_cells"] = len(self.resumed)
        if self.config.getoption("shard"):
            env["shard"] = "{}/{}".format(*self.config.getoption("shard"))
        env["memory"] = memory_by_process(list(self.cells.values()))
        order = {cell: index for index, cell in enumerate(self.expected)}
        cells = sorted(self.cells.values(), key=lambda r: order.get(r["id"], len(order)))
        write_results(self.results_file, env, cells)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.finish()

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.finish()  # again, in case an interrupted session's other plugins kept sessionfinish from us

    def finish(self) -> None:
        """Write the final results and draw the chart, once (a partial chart for an interrupted run)."""
        if not self.expected or self.config.option.collectonly or self.finished:
            return
        from harness.records import read_results
        from harness.report import write_chart
        from harness.repro import write_repros

        self.finished = True
        self._write(complete=True)
        write_chart(self.results_file, self.chart_file)
        write_repros(read_results(self.results_file), _matrix(self.config).tolerances, self.repro_dir)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.expected:
            terminalreporter.write_line(
                f"[harness] records: {self.results_file}  chart: {self.chart_file}  repros: {self.repro_dir}/"
            )
