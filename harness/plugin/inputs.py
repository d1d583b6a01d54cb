"""The run's inputs, read once on the controller and held by one ``RunInputs`` under its own ``StashKey``: the
selected matrix, its cells' keys, a resumed run's records, a reused run's unchanged records, a baseline's statuses;
and the ``Plan`` made of them once, which is all an xdist worker needs (it gets it from the controller, so a worker
never imports torch, Triton or a case module: 14-30 of them doing so beside the zygote made a run's start 20-45 s
long). ``check`` reads every input that can be bad before the session starts: each is one line and exit 2."""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from harness import interrupt
from harness.errors import InputError
from harness.execution.machine import versions
from harness.matrix.builtin import matrix_file
from harness.plugin.options import Options, options
from harness.records import shares
from harness.records.environment import interpreted
from harness.records.files import read_results
from harness.records.log import LOG_NAME
from harness.records.record import Record
from harness.records.results import Results
from harness.spec import CellId, CellSpec, triton_interpreted

if TYPE_CHECKING:
    from harness.matrix.config import Matrix

PLAN_INPUT = "harness_plan"  # xdist workerinput: the controller's Plan, pickled


@dataclass(frozen=True)
class Plan:
    """What a pytest process needs to run its share of the cells, made once from the matrix and the options
    (on the controller of an xdist run, which hands it to each worker)."""

    cells: tuple[CellSpec, ...]  # the selected matrix's cells, in its order
    keys: dict[str, str]  # cell id -> its key (harness/records/reuse.py)
    wanted: frozenset[str]  # the ids this run runs: this shard's cells whose record it does not keep
    baseline: dict[str, str]  # cell id -> its status in the --baseline run ({} without one)
    reruns: int  # matrix.toml [run] reruns
    environment: dict[str, str]  # matrix.toml [environment]
    gpus: tuple[str, ...]  # the GPU ids to deal among the workers, one each; () with fewer than two


class RunInputs:
    """The inputs of one session, each read at most once (a worker reads only the plan its controller sent)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.options: Options = options(config)

    def check(self) -> None:
        """Read every input that can be bad (``InputError``): the matrix and its cases, the cells named as node ids,
        the --shard-by, --resume, --reuse and --baseline files."""
        selected = set(self.matrix.cell_ids())
        unknown = [cell for cell in self.named_cells() if cell not in selected]
        if unknown:
            where = f"{matrix_file(self.config.getoption('matrix'))[0]}::"  # as given
            raise InputError("command line", where, f"not a cell of the selection: {', '.join(unknown)}")
        _ = (self.shard_cells, self.resumed, self.reuse_file, self.baseline)  # each read now: a bad one stops the run
        if self.options.shard and not self.shard_cells:
            share = "/".join(map(str, self.options.shard))
            raise InputError("command line", "--shard", f"share {share} holds no cell: the selection has "
                             f"{len(selected)} cell(s), fewer than the shares")  # fmt: skip

    def named_cells(self) -> list[str]:
        """The cell ids the session's arguments name as node ids of the matrix file (any spelling of its path);
        ``InputError`` for a node id of another file."""
        matrix = self.options.matrix_file.resolve()
        cells = []
        for arg in self.config.args:
            file, separator, cell = arg.partition("::")
            if not separator:
                continue
            if Path(file).resolve() != matrix:
                where = self.options.matrix_file
                raise InputError("command line", arg, f"not a node id of the matrix file {where}: name cells as "
                                 f"{where}::CELL-ID")  # fmt: skip
            cells.append(cell)
        return cells

    @cached_property
    def matrix(self) -> Matrix:
        """The matrix narrowed to the selection (its case modules imported once)."""
        import torch

        from harness.matrix.config import load_matrix, select

        interrupt.check()  # a signal that torch's import lost (it imports numpy catching every exception)

        axes = {"cases": self.options.cases, "styles": self.options.styles, "paths": self.options.paths}
        return select(load_matrix(self.options.matrix_file), **axes, cuda=torch.cuda.is_available())

    @cached_property
    def resumed(self) -> Results | None:
        """The records already in the report folder (its records.jsonl, or results.json), when resuming."""
        file = self.options.results_file
        if not (self.options.resume and (file.exists() or file.with_name(LOG_NAME).exists())):
            return None
        return resumable(file, self.shard_cells)

    @cached_property
    def reuse_file(self) -> Results | None:
        return read_results(self.options.reuse) if self.options.reuse is not None else None

    @cached_property
    def reused(self) -> dict[str, Record]:
        """The records of the --reuse run this run keeps (this shard's cells whose key is unchanged; {} without)."""
        if self.reuse_file is None:
            return {}
        from harness.records import reuse

        found = reuse.reused_records(self.reuse_file, self.options.reuse, self.keys)
        return {cell: record for cell, record in found.items() if cell in self.shard_cells}

    @cached_property
    def keys(self) -> dict[str, str]:
        """Each selected cell's key."""
        from harness.cell.runner import device_name
        from harness.records import reuse

        return reuse.cell_keys(self.matrix, versions(), device_name())

    @cached_property
    def baseline(self) -> dict[str, str]:
        """Each cell's status in the --baseline run ({} without one)."""
        file = self.options.baseline
        return {cell.id: str(cell.status) for cell in read_results(file).cells} if file else {}

    @cached_property
    def shard_seconds(self) -> dict[CellId, float] | None:
        """The cell seconds of the --shard-by run, which balance the shares (None without one)."""
        file = self.options.shard_by
        if file is None:
            return None
        return shares.seconds_by_cell(read_results(file), file, [spec.cell_id for spec in self.matrix.cells])

    @cached_property
    def shard_cells(self) -> set[str]:
        """The ids of this shard's cells (``--shard I/N``: the k-th cell of the selected matrix goes to share k mod
        N, or, with ``--shard-by``, the shares are balanced by its cell seconds; every cell without ``--shard``)."""
        shard, count = self.options.shard or (1, 1)
        cells = [spec.cell_id for spec in self.matrix.cells]
        dealt = shares.share_of_each(cells, count, self.shard_seconds)
        return {str(cell) for cell, share in zip(cells, dealt, strict=True) if share == shard - 1}

    @property
    def kept(self) -> dict[str, Record]:
        """The records this run keeps instead of running their cells: the --reuse run's unchanged ones, and a
        resumed run's (which win: they are this run's own)."""
        return {**self.reused, **(self.resumed.by_id() if self.resumed else {})}

    @cached_property
    def plan(self) -> Plan:
        """This run's plan: an xdist worker's from its controller, else made here from the matrix."""
        workerinput = getattr(self.config, "workerinput", {})
        if PLAN_INPUT in workerinput:
            return pickle.loads(workerinput[PLAN_INPUT])
        gpus = visible_gpus()
        return Plan(
            cells=tuple(self.matrix.cells),
            keys=self.keys,
            wanted=frozenset(self.shard_cells - set(self.kept)),
            baseline=self.baseline,
            reruns=self.matrix.reruns,
            environment=dict(self.matrix.environment),
            gpus=gpus if len(gpus) > 1 else (),
        )


inputs_key = pytest.StashKey[RunInputs]()


def inputs(config: pytest.Config) -> RunInputs:
    """The session's ``RunInputs`` (made on first use)."""
    if inputs_key not in config.stash:
        config.stash[inputs_key] = RunInputs(config)
    return config.stash[inputs_key]


def resumable(file: Path, selection: set[str]) -> Results:
    """The records of the run in ``file``'s folder; ``InputError`` when they are damaged, of another torch, or
    of a cell that ``selection`` (this run's cells) does not hold: a resumed run records the cells it selects."""
    import torch

    previous = read_results(file)
    if previous.environment.get("torch") != torch.__version__:
        raise InputError(
            file,
            "environment.torch",
            f"a run of torch {previous.environment.get('torch')} cannot be resumed under torch {torch.__version__}",
        )
    was = interpreted(previous.environment)
    if was != triton_interpreted():  # its records' verdicts are of another kind of run than this one's label
        raise InputError(
            file,
            "environment.triton_interpret",
            f"a run {'in' if was else 'outside'} Triton's interpreter cannot be resumed {'outside' if was else 'in'} "
            f"it: resume it {'with' if was else 'without'} --interpret, or give another --report-dir",
        )
    outside = [cell.id for cell in previous.cells if cell.id not in selection]
    if outside:
        raise InputError(
            file,
            "cells",
            f"{len(outside)} record(s) of cells this run does not select ({', '.join(outside[:3])}"
            f"{', ...' if len(outside) > 3 else ''}): resume with that run's selection, or give another --report-dir",
        )
    return previous


def visible_gpus() -> tuple[str, ...]:
    """The GPU ids CUDA sees (CUDA_VISIBLE_DEVICES' or 0..n-1); () without CUDA."""
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return tuple(item.strip() for item in visible.split(","))[:count] if visible else tuple(map(str, range(count)))
