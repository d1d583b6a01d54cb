"""The harness's command-line options, declared once (``declare``: pytest's ``harness`` group, and the help of
``python -m harness run``), read once per pytest process into a typed ``Options`` under the options' own
``StashKey``; and which sessions run the matrix file. A bad value is an ``InputError`` (one line, exit 2)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.errors import InputError, keyword
from harness.matrix.builtin import matrix_file
from harness.plugin.values import (
    FAIL_ON,
    joined_ids,
    named_file,
    parse_amount,
    parse_mib,
    parse_shard,
    parse_statuses,
)
from harness.spec import Status

DEFAULT_REPORT_DIR = "reports/latest"
DEFAULT_CACHE_DIR = ".cache"
DEFAULT_MAX_RSS_MB = "4096"
AXES = ("cases", "styles", "paths")
ON_A_TERMINAL, IN_A_LOG = 10.0, 30.0  # seconds between progress lines by default: a person watching, a CI log


def declare(add: Callable[..., Any]) -> None:
    """Every harness option, by ``add(flag, **argparse keywords)``: pytest's ``addoption``, or an argparse
    parser's ``add_argument``. Values stay text: ``read_options`` checks them, each bad one a line of its own."""
    add(
        "--matrix",
        default=None,
        help="the matrix file (default: ./matrix.toml when there is one, else the one installed with the harness)",
    )
    add(
        "--report-dir",
        default=DEFAULT_REPORT_DIR,
        help="where the run writes records.jsonl, results.json, the chart matrix.md and repros/ "
        f"(default: {DEFAULT_REPORT_DIR})",
    )
    for axis in AXES:
        add(f"--{axis}", action="append", default=None, help=f"only these {axis} (comma-separated ids; repeatable)")
    add("--shard", default=None, help="I/N: run only the I-th of N interleaved shares (merge them after)")
    add(
        "--shard-by",
        default=None,
        metavar="RESULTS",
        help="an earlier run's results file: --shard deals the cells so that each share has as many of its cell "
        "seconds (every share must be given the same file)",
    )
    add("--resume", action="store_true", help="keep the records already in --report-dir, run only the missing cells")
    add(
        "--baseline",
        default=None,
        help="a results file: a cell whose status differs from it is re-run ([run] reruns in the matrix file)",
    )
    add(
        "--reuse",
        default=None,
        help="a results file: keep its record of every cell whose key is unchanged, run only the others",
    )
    add(
        "--interpret",
        action="store_true",
        help="run the kernels in Triton's CPU interpreter (TRITON_INTERPRET=1): CUDA paths run on CPU tensors",
    )
    add(
        "--cache-dir",
        default=DEFAULT_CACHE_DIR,
        help="bytecode, Inductor and Triton caches of the cell processes (default: .cache); keep it for warm runs",
    )
    add(
        "--no-confirm",
        action="store_true",
        help="write the repro scripts but do not run them (every failure is then shown unconfirmed)",
    )
    add(
        "--no-timing",
        action="store_true",
        help="do not time the passing cells' artifacts after the last cell (the run's timing phase)",
    )
    add(
        "--progress",
        default=None,
        metavar="SECONDS",
        help=f"print the cells done and the time left every SECONDS (default: {ON_A_TERMINAL:g} on a terminal, "
        f"{IN_A_LOG:g} otherwise; 0: never)",
    )
    add(
        "--fail-on",
        default=None,
        metavar="STATUSES",
        help="exit 8 when a cell ends with one of these statuses on any attempt (comma-separated: "
        f"{', '.join(FAIL_ON)}), e.g. --fail-on wrong: a kernel library's CI without a baseline",
    )
    add(
        "--max-rss-mb",
        default=DEFAULT_MAX_RSS_MB,
        help=f"replace a cell process resident above this many MiB after a cell (default {DEFAULT_MAX_RSS_MB}; "
        "0: never)",
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    declare(parser.getgroup("harness", "Triton/PyTorch compatibility matrix").addoption)


@dataclass(frozen=True)
class Options:
    matrix_file: Path
    matrix_source: str  # where the matrix file came from: --matrix, ./matrix.toml, the packaged default
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
    shard_by: Path | None = None  # --shard-by: the results file whose cell seconds balance the shares
    interpret: bool = False
    confirm: bool = True
    timing: bool = True  # the run's timing phase (harness/plugin/timing.py)
    progress: float | None = None  # seconds between progress lines (None: the default for the terminal)
    cold_cache: bool | None = None  # the cache folder held no file when the options were read (the run's start)
    fail_on: tuple[Status, ...] = ()  # the statuses a cell ends with that make the run exit EXIT_FAILED_ON

    @property
    def results_file(self) -> Path:
        return self.report_dir / "results.json"


options_key = pytest.StashKey[Options]()


def cold(folder: Path) -> bool:
    """Whether ``folder`` (a cache folder) holds no file yet: compile times measured from it are a cold start's."""
    return not folder.is_dir() or not any(path.is_file() for path in folder.rglob("*"))


def options(config: pytest.Config) -> Options:
    """This process's options, read once; every path the cell processes or the zygote use absolute (they must not
    depend on a working directory). ``InputError`` for a bad value."""
    if options_key not in config.stash:
        option = config.getoption
        keyword(option("keyword"))  # a -k pytest cannot parse: one line here, not xdist's INTERNALERROR later
        given = named_file("--matrix", option("matrix"))
        named = None if given else _named_toml(config)
        file, source = matrix_file(given or named)
        source = "the file pytest was given" if named else source
        config.stash[options_key] = Options(
            matrix_file=file.absolute(),
            matrix_source=source,
            report_dir=_folder("--report-dir", option("report_dir")).absolute(),
            **{axis: _ids(f"--{axis}", option(axis)) for axis in AXES},
            shard=parse_shard(option("shard")) if option("shard") is not None else None,  # --shard= too
            shard_by=_shard_by(option("shard_by"), option("shard")),
            resume=option("resume"),
            cache_dir=_folder("--cache-dir", option("cache_dir")).absolute(),
            cold_cache=cold(Path(option("cache_dir"))),
            max_rss_mb=parse_mib(option("max_rss_mb")),
            baseline=named_file("--baseline", option("baseline")),  # read once, by the controller
            reuse=named_file("--reuse", option("reuse")),
            interpret=option("interpret"),
            confirm=not option("no_confirm"),
            timing=not option("no_timing"),
            progress=None if option("progress") is None else parse_amount(option("progress"), "--progress", "seconds"),
            fail_on=() if option("fail_on") is None else parse_statuses(option("fail_on")),
        )
    return config.stash[options_key]


def _folder(option: str, given: str) -> Path:
    """The folder an option names: an empty name is no folder, not the working directory (a run writing its
    results.json, matrix.md and repros/ over the user's own files there)."""
    if not given.strip():
        raise InputError("command line", option, f"expected a folder, got {given!r}")
    return Path(given)


def _shard_by(given: str | None, shard: str | None) -> Path | None:
    """``--shard-by``: a results file, given with ``--shard`` (it deals nothing alone)."""
    if given is None:
        return None
    if shard is None:
        raise InputError("command line", "--shard-by", "balances the shares of --shard I/N: give --shard too")
    return named_file("--shard-by", given)  # read once, by the controller


def _named_toml(config: pytest.Config) -> Path | None:
    """The one ``.toml`` file pytest's arguments name (``pytest other.toml``, ``other.toml::CELL``): the matrix
    file when ``--matrix`` is not given (else pytest finds nothing to collect it, exit 4)."""
    named = {arg.partition("::")[0] for arg in config.args}
    files = {config.invocation_params.dir / name for name in named if name.endswith(".toml")}
    files = {file for file in files if file.is_file()}
    return files.pop() if len(files) == 1 else None


def _ids(option: str, given: list[str] | None) -> list[str] | None:
    joined = joined_ids(option, given)
    return joined.split(",") if joined else None


def asked_for(config: pytest.Config) -> bool:
    """Whether a harness option was given a value other than its default (the session is then about the matrix)."""
    defaults: dict[str, Any] = {}
    declare(lambda flag, **kw: defaults.setdefault(flag.lstrip("-").replace("-", "_"), kw.get("default", False)))
    return any(config.getoption(dest) != default for dest, default in defaults.items())


def workers(config: pytest.Config) -> int:
    """How many pytest processes run cells: xdist's workers (a worker reads their count), else 1."""
    workerinput = getattr(config, "workerinput", {})
    if "workercount" in workerinput:
        return int(workerinput["workercount"])
    option = config.option
    return len(option.tx) if getattr(option, "dist", "no") != "no" and getattr(option, "tx", None) else 1


def runs_matrix(config: pytest.Config) -> bool:
    """Whether this session runs the matrix file: an argument names it (or a cell of it), or pytest collects the
    folder it lies in for want of arguments (plain ``pytest`` beside a ./matrix.toml)."""
    matrix = options(config).matrix_file.resolve()
    named = [Path(arg.split("::")[0]).resolve() for arg in config.args]
    if any(path == matrix for path in named):
        return True
    return config.args_source == pytest.Config.ArgsSource.INVOCATION_DIR and any(
        matrix.parent == path for path in named
    )
