"""The harness's command-line options, read once per pytest process into a typed ``Options``, and the run's
inputs that come with them (the selected matrix, its cells' keys, a resumed run's records, a reused run's
unchanged records, a baseline's statuses), each under a typed ``StashKey``; and the ``Plan`` made of them
once, which is all an xdist worker needs (it gets it from the controller, so a worker never imports torch,
Triton or a case module: 14-30 of them doing so beside the zygote made a run's start 20-45 s long). Bad
input ends the session with one line and exit status 2."""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.errors import EXIT_BAD_INPUT, InputError
from harness.matrix.builtin import matrix_file
from harness.plugin.values import parse_ids, parse_mib, parse_shard
from harness.records.log import LOG_NAME
from harness.records.record import Record
from harness.records.results import Results, read_results
from harness.spec import CellSpec

if TYPE_CHECKING:
    from harness.matrix.config import Matrix

DEFAULT_REPORT_DIR = "reports/latest"
DEFAULT_CACHE_DIR = ".cache"


@dataclass(frozen=True)
class Options:
    matrix_file: Path
    report_dir: Path
    cases: list[str] | None
    styles: list[str] | None
    paths: list[str] | None
    shard: tuple[int, int] | None
    resume: bool
    cache_dir: Path
    max_rss_mb: float
    baseline: Path | None
    reuse: Path | None

    @property
    def results_file(self) -> Path:
        return self.report_dir / "results.json"


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


options_key = pytest.StashKey[Options]()
plan_key = pytest.StashKey[Plan]()
PLAN_INPUT = "harness_plan"  # xdist workerinput: the controller's Plan, pickled
matrix_key = pytest.StashKey["Matrix"]()
resumed_key = pytest.StashKey[Results | None]()  # the records already on disk, with --resume
baseline_key = pytest.StashKey[dict[str, str]]()  # cell id -> status in the --baseline run
keys_key = pytest.StashKey[dict[str, str]]()  # cell id -> its key (harness/records/reuse.py)
reused_key = pytest.StashKey[dict[str, Record]]()  # cell id -> the record kept from the --reuse run
cli_key = pytest.StashKey[bool]()  # run by ``python -m harness run``, which prints a failed write's line itself


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "Triton/PyTorch compatibility matrix")
    group.addoption(
        "--matrix",
        default=None,
        help="the matrix file to collect (default: ./matrix.toml when there is one, else the harness's own)",
    )
    group.addoption(
        "--report-dir",
        default=DEFAULT_REPORT_DIR,
        help=f"where results.json, matrix.md and repros/ go (default: {DEFAULT_REPORT_DIR})",
    )
    for axis in ("cases", "styles", "paths"):
        group.addoption(f"--{axis}", default=None, type=parse_ids, help=f"only these {axis} (comma-separated ids)")
    group.addoption("--shard", default=None, type=parse_shard, help="I/N: run the I-th of N interleaved shares")
    group.addoption("--resume", action="store_true", help="keep the records in --report-dir, run only missing cells")
    group.addoption(
        "--baseline",
        default=None,
        help="a results file: a cell whose status differs from it is re-run ([run] reruns in the matrix file)",
    )
    group.addoption(
        "--reuse",
        default=None,
        help="a results file: keep its record of every cell whose key is unchanged, run only the others",
    )
    group.addoption(
        "--cache-dir",
        default=DEFAULT_CACHE_DIR,
        help="bytecode, Inductor and Triton caches of the cell processes (default: .cache); keep it for warm runs",
    )
    group.addoption(
        "--no-confirm",
        action="store_true",
        help="write the repro scripts but do not run them (every failure is then shown unconfirmed)",
    )
    group.addoption(
        "--max-rss-mb",
        type=parse_mib,
        default=4096,
        help="replace a cell process resident above this many MiB after a cell (default 4096; 0: never)",
    )


def read_options(config: pytest.Config) -> Options:
    """The options, every path absolute (cell processes and the zygote must not depend on a working directory)."""
    option = config.getoption
    return Options(
        matrix_file=matrix_file(option("matrix"))[0].absolute(),
        report_dir=Path(option("report_dir")).absolute(),
        cases=option("cases"),
        styles=option("styles"),
        paths=option("paths"),
        shard=option("shard"),
        resume=option("resume"),
        cache_dir=Path(option("cache_dir")).absolute(),
        max_rss_mb=option("max_rss_mb"),
        baseline=Path(option("baseline")).absolute() if option("baseline") else None,
        reuse=Path(option("reuse")).absolute() if option("reuse") else None,
    )


def plan(config: pytest.Config) -> Plan:
    """This run's plan: an xdist worker's from its controller, else made here from the matrix (once)."""
    if plan_key not in config.stash:
        workerinput = getattr(config, "workerinput", {})
        if PLAN_INPUT in workerinput:
            config.stash[plan_key] = pickle.loads(workerinput[PLAN_INPUT])
        else:
            selected = matrix(config)
            config.stash[plan_key] = Plan(
                cells=tuple(selected.cells),
                keys=keys(config),
                wanted=frozenset(shard_cells(config) - set(kept(config))),
                baseline=baseline(config),
                reruns=selected.reruns,
                environment=dict(selected.environment),
                gpus=_visible_gpus(),
            )
    return config.stash[plan_key]


def _visible_gpus() -> tuple[str, ...]:
    """The GPU ids CUDA sees (CUDA_VISIBLE_DEVICES' or 0..n-1), or () with fewer than two."""
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count < 2:
        return ()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return tuple(item.strip() for item in visible.split(","))[:count] if visible else tuple(map(str, range(count)))


def matrix(config: pytest.Config) -> Matrix:
    """The matrix narrowed to the selection, loaded once (and its case modules imported once)."""
    if matrix_key not in config.stash:
        import torch

        from harness.matrix.config import load_matrix, select

        options = config.stash[options_key]
        axes = {"cases": options.cases, "styles": options.styles, "paths": options.paths}
        config.stash[matrix_key] = _or_exit(
            lambda: select(load_matrix(options.matrix_file), **axes, cuda=torch.cuda.is_available())
        )
    return config.stash[matrix_key]


class PresetMatrix:
    """For ``pytest.main(plugins=[...])``: the selected matrix the command line already loaded and checked, so
    the session does not load it (and import and check its cases) again; and the command line says a failed
    write itself (``error: ...``), so the session does not say it too."""

    def __init__(self, selected: Matrix) -> None:
        self.selected = selected

    def pytest_configure(self, config: pytest.Config) -> None:
        config.stash[matrix_key] = self.selected
        config.stash[cli_key] = True


def workers(config: pytest.Config) -> int:
    """How many pytest processes run cells: xdist's workers (a worker reads their count), else 1."""
    workerinput = getattr(config, "workerinput", {})
    if "workercount" in workerinput:
        return int(workerinput["workercount"])
    option = config.option
    return len(option.tx) if getattr(option, "dist", "no") != "no" and getattr(option, "tx", None) else 1


def resumed(config: pytest.Config) -> Results | None:
    """The records already in the report folder (its records.jsonl, or results.json), when resuming (None
    otherwise); a run of another torch cannot be resumed."""
    if resumed_key not in config.stash:
        options = config.stash[options_key]
        file = options.results_file
        found = file.exists() or file.with_name(LOG_NAME).exists()
        resume = options.resume and found
        config.stash[resumed_key] = _or_exit(lambda: resumable(file, shard_cells(config))) if resume else None
    return config.stash[resumed_key]


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
    outside = [cell.id for cell in previous.cells if cell.id not in selection]
    if outside:
        raise InputError(
            file,
            "cells",
            f"{len(outside)} record(s) of cells this run does not select ({', '.join(outside[:3])}"
            f"{', ...' if len(outside) > 3 else ''}): resume with that run's selection, or give another --report-dir",
        )
    return previous


def keys(config: pytest.Config) -> dict[str, str]:
    """Each selected cell's key, computed once."""
    if keys_key not in config.stash:
        from harness.cell.runner import device_name
        from harness.records import reuse

        config.stash[keys_key] = reuse.cell_keys(matrix(config), device_name())
    return config.stash[keys_key]


def reused(config: pytest.Config) -> dict[str, Record]:
    """The records of the --reuse run this run keeps (this shard's cells whose key is unchanged; {} without)."""
    if reused_key not in config.stash:
        options = config.stash[options_key]
        file = options.reuse
        config.stash[reused_key] = {}
        if file is not None:
            from harness.records import reuse

            found = reuse.reused_records(_or_exit(lambda: read_results(file)), file, keys(config))
            mine = shard_cells(config)
            config.stash[reused_key] = {cell: record for cell, record in found.items() if cell in mine}
    return config.stash[reused_key]


def shard_cells(config: pytest.Config) -> set[str]:
    """The ids of this shard's cells (``--shard I/N``: the k-th cell of the selected matrix goes to share
    k mod N; every cell without ``--shard``)."""
    shard, shards = config.stash[options_key].shard or (1, 1)
    return {spec.id for index, spec in enumerate(matrix(config).cells) if index % shards == shard - 1}


def kept(config: pytest.Config) -> dict[str, Record]:
    """The records this run keeps instead of running their cells: the --reuse run's unchanged ones, and a
    resumed run's (which win: they are this run's own)."""
    previous = resumed(config)
    return {**reused(config), **(previous.by_id() if previous else {})}


def baseline(config: pytest.Config) -> dict[str, str]:
    """Each cell's status in the --baseline run ({} without one)."""
    if baseline_key not in config.stash:
        file = config.stash[options_key].baseline
        cells = _or_exit(lambda: read_results(file)).cells if file else []
        config.stash[baseline_key] = {cell.id: str(cell.status) for cell in cells}
    return config.stash[baseline_key]


def runs_matrix(config: pytest.Config) -> bool:
    """Whether this session was asked to run the matrix file (not only the harness's own tests)."""
    matrix_file = config.stash[options_key].matrix_file.resolve()
    return any(Path(arg.split("::")[0]).resolve() == matrix_file for arg in config.args)


def _or_exit(load: Any) -> Any:
    try:
        return load()
    except InputError as error:
        pytest.exit(str(error), returncode=EXIT_BAD_INPUT)
