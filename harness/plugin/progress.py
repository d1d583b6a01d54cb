"""The run's progress on the controller's terminal, every few seconds (``--progress``): ``[harness] 123/2691 cells
done, the rest in ~3 min``. The time left weighs each cell still to run by its path's mean time in a previous
results file (the report folder's, else ``--reuse``'s or ``--baseline``'s), else in this run so far, and scales it
by this run's pace since its first cell ended. Registered as pytest's stepwise registers its plugin object: only
when the session runs the matrix, on the controller."""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest

from harness.errors import InputError
from harness.plugin import options as opts
from harness.plugin.collect import CellItem, record_of
from harness.plugin.inputs import inputs
from harness.records.files import read_results
from harness.spec import CellId

NAME = "harness-progress"
progress_key = pytest.StashKey["Progress"]()


@pytest.hookimpl(trylast=True)  # after harness.plugin's, which reads the options
def pytest_configure(config: pytest.Config) -> None:
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if hasattr(config, "workerinput") or config.option.collectonly or terminal is None:
        return
    if not opts.runs_matrix(config):
        return
    every = config.stash[opts.options_key].progress
    every = (opts.ON_A_TERMINAL if terminal.isatty() else opts.IN_A_LOG) if every is None else every
    if every > 0:
        estimate = Estimate(previous_times(config.stash[opts.options_key]), opts.workers(config))
        config.stash[progress_key] = Progress(_writer(terminal), estimate, every, partial(_cell_ids, config))
        config.pluginmanager.register(config.stash[progress_key], NAME)


def pytest_unconfigure(config: pytest.Config) -> None:
    if config.pluginmanager.has_plugin(NAME):
        config.pluginmanager.unregister(name=NAME)


def _cell_ids(config: pytest.Config) -> frozenset[str]:
    """The ids of the selected matrix's cells (read when the controller checked its inputs)."""
    return frozenset(inputs(config).matrix.cell_ids())


def _writer(terminal: Any) -> Callable[[str], None]:
    """A line of its own in pytest's output, where a line of pytest's letters (one a cell) may be going."""

    def write(line: str) -> None:
        if getattr(terminal, "_tw", None) is not None and terminal._tw.width_of_current_line:
            terminal.write("\n")  # xdist's letters leave pytest's own newline check (ensure_newline) unaware
        terminal.write_line(line)

    return write


def previous_times(options: opts.Options) -> dict[str, float]:
    """path -> its cells' mean seconds in the first readable results file of an earlier run that has any."""
    for file in (options.results_file, options.reuse, options.baseline):
        if file is None or not file.is_file():
            continue
        try:
            cells = read_results(file).cells
        except (InputError, OSError):
            continue
        spent: dict[str, list[float]] = {}
        for cell in cells:
            if _usable(cell.seconds):
                spent.setdefault(cell.path, []).append(cell.seconds)
        if any(any(times) for times in spent.values()):
            return {path: sum(times) / len(times) for path, times in spent.items()}
    return {}


class Estimate:
    """The time left of a run from its cells' paths: each path's cost is its mean cell time in the previous
    run, else in this run so far, else this run's mean cell time."""

    def __init__(self, previous: dict[str, float], workers: int) -> None:
        self.previous = previous
        self.workers = max(1, workers)
        self.spent: dict[str, list[float]] = {}

    def add(self, path: str, seconds: float) -> None:
        if _usable(seconds):
            self.spent.setdefault(path, []).append(seconds)

    def cost(self, path: str) -> float | None:
        if path in self.previous:
            return self.previous[path]
        times = self.spent.get(path) or [t for spent in self.spent.values() for t in spent]
        return sum(times) / len(times) if times else None

    def left(self, todo: Counter[str], paced: Counter[str], elapsed: float) -> float | None:
        """Seconds left for the cells ``todo`` (path -> count), the cells ``paced`` having taken ``elapsed``: their
        costs' ratio times ``elapsed``; before that, the costs over the workers."""
        costs = {path: cost for path in todo | paced if (cost := self.cost(path)) is not None}
        if len(costs) < len(todo | paced):
            return None
        remaining = sum(costs[path] * n for path, n in todo.items())
        finished = sum(costs[path] * n for path, n in paced.items())
        return elapsed * remaining / finished if finished > 0 and elapsed > 0 else remaining / self.workers


def _usable(seconds: Any) -> bool:
    """A cell time an estimate may use: a finite number >= 0 (a damaged earlier file's NaN is left out)."""
    number = isinstance(seconds, int | float) and not isinstance(seconds, bool)
    return number and math.isfinite(seconds) and seconds >= 0


def duration(seconds: float) -> str:
    """``40 s``, ``3 min``, ``1 h 05 min``."""
    if seconds < 60:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


class Progress:
    """Counts the cells as their reports reach the controller; a line every ``every`` seconds while cells are
    left."""

    def __init__(
        self,
        write: Callable[[str], Any],
        estimate: Estimate,
        every: float,
        cells: Callable[[], frozenset[str]],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.write, self.estimate, self.every, self.clock = write, estimate, every, clock
        self.cells = cells  # () -> the ids of the selected matrix's cells
        self.first: float | None = None  # when the first cell ended: the pace is taken from then on, not startup
        self.last = clock()
        self.todo: Counter[str] = Counter()  # path -> cells of it still to run
        self.done: Counter[str] = Counter()
        self.paced: Counter[str] = Counter()  # the cells done since the first

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        cells = [item.spec.path.id for item in session.items if isinstance(item, CellItem)]
        if cells:
            self._expect(cells)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """xdist: every worker collects the same cells; the first to say so sets the count. A cell is known by the
        name its node id ends with: the file part before it is the matrix file's path from pytest's root folder,
        or nothing where the file lies outside it (the packaged matrix, a --matrix elsewhere)."""
        if not self.todo and not self.done:
            known = self.cells()
            cells = [name for name in (nodeid.partition("::")[2] for nodeid in ids) if name in known]
            self._expect([CellId.parse(name).path for name in cells])

    def _expect(self, paths: list[str]) -> None:
        self.todo = Counter(paths)
        self.last = self.clock()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = record_of(report)
        if record is None:
            return
        now = self.clock()
        self.estimate.add(record.path, record.seconds)
        self.done[record.path] += 1
        if self.first is None:
            self.first = now
        else:
            self.paced[record.path] += 1
        if self.todo[record.path] > 0:
            self.todo[record.path] -= 1
        if now - self.last >= self.every and self.todo.total():
            self.last = now
            self.write(self.line(now))

    def line(self, now: float) -> str:
        done = self.done.total()
        left = self.estimate.left(+self.todo, self.paced, now - (self.first or now))
        estimate = f", the rest in ~{duration(left)}" if left is not None and _usable(left) else ""
        return f"[harness] {done}/{done + self.todo.total()} cells done{estimate}"
