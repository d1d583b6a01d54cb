"""Collection and selection: matrix.toml collects as one pytest item per cell (node id ``matrix.toml::<cell
id>``, so ``-k`` and node ids select cells); ``--shard``, ``--resume`` and ``--reuse`` narrow the items; the
longest paths run first. Each item runs its cell in the cell process and carries the record (with the cell's
key) on its report; a cell whose pytest worker died gets a ``crash`` record here; xdist hands each worker two cells
at a time."""

from __future__ import annotations

import pickle
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from harness.plugin.inputs import PLAN_INPUT, inputs
from harness.plugin.options import options, runs_matrix
from harness.plugin.processes import processes_key
from harness.records.record import Record
from harness.spec import KEPT_PATHS, CellSpec, Outcome, Status

RECORD_PROPERTY = "harness_record"
DEVICE_PROPERTY = "harness_device"
# pytest's short letter of each status that is not pytest's own (pass, skip)
STATUS_LETTERS = {str(status): status.rule.letter for status in Status if status.rule.letter}


class CellFailed(Exception):
    """A cell whose status is not pass or skip; the record says why."""


class MatrixFile(pytest.File):
    def collect(self) -> Generator[CellItem, None, None]:
        for spec in inputs(self.config).plan.cells:
            item = CellItem.from_parent(self, name=spec.id, spec=spec)
            item.add_marker(pytest.mark.cell)
            yield item


class CellItem(pytest.Item):
    def __init__(self, *, spec: CellSpec, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.record: Record | None = None

    def runtest(self) -> None:
        processes = self.config.stash[processes_key]
        self.record = Record.of(self.spec, processes.run(self.spec), inputs(self.config).plan.keys[self.spec.id])
        self.user_properties.append((DEVICE_PROPERTY, processes.device))
        if self.record.status == Status.SKIP:
            pytest.skip(self.record.reason or "")
        if self.record.status != Status.PASS:
            raise CellFailed(self.record.summary)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CellFailed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo, style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.name


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.resolve() == options(parent.config).matrix_file.resolve():
        return MatrixFile.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist, on the controller of a run of the matrix: hand each worker the run's plan."""
    if runs_matrix(node.config):
        node.workerinput[PLAN_INPUT] = pickle.dumps(inputs(node.config).plan)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep this shard's cells that the run does not keep a record of (a resumed run's, or an unchanged one of
    the --reuse run); run the longest paths first."""
    if not any(isinstance(item, CellItem) for item in items):
        return
    wanted = inputs(config).plan.wanted
    keep = [item for item in items if not isinstance(item, CellItem) or item.name in wanted]
    if len(keep) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in keep])
    items[:] = sorted(keep, key=order)


def order(item: pytest.Item) -> tuple[bool, float]:
    """The cells of paths that keep no artifact for the timing phase first (a cell that faults the GPU, such as
    a raw kernel handed a subclass's storage-less tensor, replaces its cell process and loses what that process
    kept), then those that do; in each, longest first, the path's timeout standing for its cost: the AOTInductor
    cells start early rather than trail at the end on a few workers (stable: the chart keeps matrix.toml's order)."""
    if not isinstance(item, CellItem):
        return False, 0.0
    return cell_order(item.spec.path.id, item.spec.path.timeout)


def cell_order(path: str, timeout: float) -> tuple[bool, float]:
    """``order``'s key for a cell of ``path``, whose timeout is ``timeout``."""
    return path in KEPT_PATHS, -timeout


SCHEDULE_CHUNK = 1  # cells xdist sends a worker at a time (it keeps two there: the one running and the next)


def schedule_cell_by_cell(config: pytest.Config) -> None:
    """xdist's load scheduling starts each worker on a quarter of its share of the cells at once (12 each on 56
    workers of the full matrix): the longest-first order then gave 10 workers every ``aoti_standalone`` cell, which
    they ran for the whole cell span while the others went idle. Unless the user sets ``--maxschedchunk``, a worker
    holds the cell it runs and the next one only: a cell sent to a worker waits there behind the one it runs, however
    long that takes (xdist cannot take it back), and at two a time the third waited too (the flash-linear-attention
    suite's last 55.6 s cell queued behind a 110.9 s one while 13 workers had ended: 201.7 s; replayed at one a time,
    ``python -m bench replay``, 149.4 s)."""
    if getattr(config.option, "maxschedchunk", SCHEDULE_CHUNK) is None:
        config.option.maxschedchunk = SCHEDULE_CHUNK


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if isinstance(item, CellItem) and call.when == "call" and item.record is not None:
        report.user_properties.append((RECORD_PROPERTY, item.record.to_dict()))  # JSON: it crosses xdist's wire
    return report


@pytest.hookimpl(optionalhook=True)
def pytest_handlecrashitem(crashitem: str, report: pytest.TestReport, sched: Any) -> None:
    """xdist: the pytest worker running ``crashitem`` died. Its record says so (the report then arrives
    through pytest_runtest_logreport like any other)."""
    plan = inputs(sched.config).plan
    spec = next((spec for spec in plan.cells if spec.id == crashitem.partition("::")[2]), None)
    if spec is not None:
        lost = Outcome(status=Status.CRASH, error_type="WorkerLost", error=str(report.longrepr)[-2000:])
        report.user_properties.append((RECORD_PROPERTY, Record.of(spec, lost, plan.keys[spec.id]).to_dict()))


def record_of(report: pytest.TestReport) -> Record | None:
    value = next((value for name, value in report.user_properties if name == RECORD_PROPERTY), None)
    return Record.from_dict(value) if value is not None else None


def device_of(report: pytest.TestReport) -> str | None:
    return next((value for name, value in report.user_properties if name == DEVICE_PROPERTY), None)


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, str] | None:
    record = record_of(report) if report.when == "call" else None
    if record is not None and record.status in STATUS_LETTERS:
        status = str(record.status)
        return status, STATUS_LETTERS[status], status.upper()
    return None
