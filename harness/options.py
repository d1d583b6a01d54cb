"""The harness's command-line options, read once per pytest process into a typed ``Options``, and the run's
inputs that come with them (the selected matrix, its cells' keys, a resumed run's records, a reused run's
unchanged records, a baseline's statuses), each under a typed ``StashKey``. Bad input ends the session with
one line and exit status 2."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness import reuse
from harness.config import Matrix, load_matrix, parse_ids, parse_shard, select
from harness.errors import EXIT_BAD_INPUT, InputError
from harness.records import read_results

DEFAULT_REPORT_DIR = "reports/latest"


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


options_key = pytest.StashKey[Options]()
matrix_key = pytest.StashKey[Matrix]()
resumed_key = pytest.StashKey[dict[str, Any] | None]()  # the records already on disk, with --resume
baseline_key = pytest.StashKey[dict[str, str]]()  # cell id -> status in the --baseline run
keys_key = pytest.StashKey[dict[str, str]]()  # cell id -> its key (harness/reuse.py)
reused_key = pytest.StashKey[dict[str, dict[str, Any]]]()  # cell id -> the record kept from the --reuse run
DEVICE_INPUT = "harness_key_device"  # workerinput: the controller's device name, for the keys


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "Triton/PyTorch compatibility matrix")
    group.addoption("--matrix", default="matrix.toml", help="the matrix file to collect (default: matrix.toml)")
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
        default=".cache",
        help="bytecode, Inductor and Triton caches of the cell processes (default: .cache); keep it for warm runs",
    )
    group.addoption(
        "--max-rss-mb",
        type=float,
        default=4096,
        help="replace a cell process resident above this many MiB after a cell (default 4096; 0: never)",
    )


def read_options(config: pytest.Config) -> Options:
    option = config.getoption
    return Options(
        matrix_file=Path(option("matrix")),
        report_dir=Path(option("report_dir")),
        cases=option("cases"),
        styles=option("styles"),
        paths=option("paths"),
        shard=option("shard"),
        resume=option("resume"),
        cache_dir=Path(option("cache_dir")),
        max_rss_mb=option("max_rss_mb"),
        baseline=Path(option("baseline")) if option("baseline") else None,
        reuse=Path(option("reuse")) if option("reuse") else None,
    )


def matrix(config: pytest.Config) -> Matrix:
    """The matrix narrowed to the selection, loaded once (and its case modules imported once)."""
    if matrix_key not in config.stash:
        import torch

        options = config.stash[options_key]
        axes = {"cases": options.cases, "styles": options.styles, "paths": options.paths}
        config.stash[matrix_key] = _or_exit(
            lambda: select(load_matrix(options.matrix_file), **axes, cuda=torch.cuda.is_available())
        )
    return config.stash[matrix_key]


def workers(config: pytest.Config) -> int:
    """How many pytest processes run cells: xdist's workers (a worker reads their count), else 1."""
    workerinput = getattr(config, "workerinput", {})
    if "workercount" in workerinput:
        return int(workerinput["workercount"])
    option = config.option
    return len(option.tx) if getattr(option, "dist", "no") != "no" and getattr(option, "tx", None) else 1


def resumed(config: pytest.Config) -> dict[str, Any] | None:
    """The records already in the report folder, when resuming (None otherwise)."""
    if resumed_key not in config.stash:
        options = config.stash[options_key]
        file = options.results_file
        config.stash[resumed_key] = _or_exit(lambda: read_results(file)) if options.resume and file.exists() else None
    return config.stash[resumed_key]


def key_device(config: pytest.Config) -> str:
    """The device part of the cells' keys: asked once, on the controller, and handed to the xdist workers
    (so that no pytest worker initialises CUDA)."""
    workerinput = getattr(config, "workerinput", {})
    return workerinput[DEVICE_INPUT] if DEVICE_INPUT in workerinput else reuse.device_name()


def keys(config: pytest.Config) -> dict[str, str]:
    """Each selected cell's key, computed once per pytest process."""
    if keys_key not in config.stash:
        config.stash[keys_key] = reuse.cell_keys(matrix(config), key_device(config))
    return config.stash[keys_key]


def reused(config: pytest.Config) -> dict[str, dict[str, Any]]:
    """The records of the --reuse run this run keeps (this shard's cells whose key is unchanged; {} without)."""
    if reused_key not in config.stash:
        options = config.stash[options_key]
        file = options.reuse
        config.stash[reused_key] = {}
        if file is not None:
            found = reuse.reused_records(_or_exit(lambda: read_results(file)), file, keys(config))
            mine = shard_cells(config)
            config.stash[reused_key] = {cell: record for cell, record in found.items() if cell in mine}
    return config.stash[reused_key]


def shard_cells(config: pytest.Config) -> set[str]:
    """The ids of this shard's cells (``--shard I/N``: the k-th cell of the selected matrix goes to share
    k mod N; every cell without ``--shard``)."""
    shard, shards = config.stash[options_key].shard or (1, 1)
    return {spec.id for index, spec in enumerate(matrix(config).cells) if index % shards == shard - 1}


def kept(config: pytest.Config) -> dict[str, dict[str, Any]]:
    """The records this run keeps instead of running their cells: the --reuse run's unchanged ones, and a
    resumed run's (which win: they are this run's own)."""
    previous = resumed(config)
    return {**reused(config), **({cell["id"]: cell for cell in previous["cells"]} if previous else {})}


def baseline(config: pytest.Config) -> dict[str, str]:
    """Each cell's status in the --baseline run ({} without one)."""
    if baseline_key not in config.stash:
        file = config.stash[options_key].baseline
        cells = _or_exit(lambda: read_results(file))["cells"] if file else []
        config.stash[baseline_key] = {cell["id"]: cell["status"] for cell in cells}
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
