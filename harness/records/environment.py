"""The environment stamp of a run (versions, machine, the harness's commit, how it was made) and the source
digests that say which code measured it."""

from __future__ import annotations

import datetime
import hashlib
import os
import platform
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.records.schema import from_json_keeping_extra, to_json
from harness.spec import OMIT, SIGNED, CellId, autotune_benchmark, triton_interpreted

ROOT = Path(__file__).resolve().parents[2]
SETTING_PREFIXES = ("TORCHINDUCTOR_", "TORCH_", "TRITON_", "CUDA_VISIBLE_DEVICES")


@dataclass(frozen=True)
class StyleEntry:
    """How a style wraps its kernel: its decorator stack and its wrapper."""

    decorator: str | None = None
    wrapper: str | None = None


@dataclass(frozen=True)
class PathEntry:
    """A path's group in the chart, its one-line doc and the device it runs on."""

    group: str | None = field(default=None, metadata=OMIT)
    doc: str | None = field(default=None, metadata=OMIT)
    device: str | None = field(default=None, metadata=OMIT)


@dataclass(frozen=True)
class MemoryEntry:
    """One cell process's memory over the cells it ran (harness/records/log.py ``memory_by_process``)."""

    cells: int | None = None
    gpu: str | None = None
    rss_first_mb: float | None = None
    rss_last_mb: float | None = None
    peak_rss_mb: float | None = None
    gpu_peak_mb: float | None = None
    gpu_held_last_mb: float | None = field(default=None, metadata=OMIT)  # its allocator's reserve after its last cell
    rss_mb_per_cell: float | None = field(default=None, metadata=SIGNED)  # a slope: memory may shrink


@dataclass(frozen=True)
class PlacesReading:
    """The early repro scripts' places at one reading (harness/plugin/scriptqueue.py ``Width``, at most one every
    2 s while a script waits for a place): when (epoch), how many scripts ran, how many places the width gave, the
    host's idle cores and the GPU's free memory (MiB, less 4 GiB per script started since) last read, and what held
    a waiting script back (``timing``: the workers' timing turns on a GPU that ran short of memory; ``memory``: no
    room for one more; None: only the places)."""

    at: float
    running: int
    places: int
    idle_cores: float | None = None
    gpu_free_mb: float | None = field(default=None, metadata=SIGNED)  # less what scripts took since: may be below 0
    held: str | None = None


@dataclass(frozen=True)
class Claim:
    """What a source documents of a style on a path: ``supported`` or not, and which source says so."""

    supported: bool
    source: str | None = field(default=None, metadata=OMIT)


@dataclass(frozen=True)
class Docs:
    """The matrix's documentation claims: ``sources`` (name -> text) and ``claims`` (style -> path -> a claim, or a
    bare bool); ``expect`` is an older file's name for ``claims``."""

    sources: dict[str, str] | None = field(default=None, metadata=OMIT)
    claims: dict[str, dict[str, bool | Claim] | None] | None = field(default=None, metadata=OMIT)
    expect: dict[str, dict[str, bool | Claim] | None] | None = field(default=None, metadata=OMIT)


@dataclass(frozen=True)
class RunEnvironment:
    """A results file's ``environment``: what was measured (versions, machine, commit), how the run was made, the
    selected matrix (axes, styles, paths, goals, docs) and, once it ended, its summary (``complete``,
    ``wall_seconds``, ``memory``); a merged file's ``shards``, ``hosts`` and each share's wall and timing phase.
    Every key may be absent (an older or a killed run's file); ``extra``: keys this harness does not know, kept as
    they were."""

    torch: str | None = None
    triton: str | None = None
    cuda: str | None = None
    device: str | None = None
    python: str | None = None
    host: str | None = None
    timestamp: str | None = None
    commit: str | None = None
    source_digest: str | None = None
    workers: int | None = None
    ld_preload: str | None = None
    settings: dict[str, str] | None = None  # the run's TORCH*, TRITON*, CUDA_VISIBLE_DEVICES variables
    triton_interpret: bool | None = None
    autotune_benchmark: str | None = None  # how the cells' Triton autotuners benchmark their configs
    matrix: str | None = None
    matrix_digest: str | None = None  # the matrix file the run read: a digest of its text (merge compares them)
    tolerances: dict[str, dict[str, float]] | None = None  # dtype -> the atol and rtol its cells compared with
    libraries: dict[str, str] | None = None  # the installed libraries its case modules import -> their versions
    keyword: str | None = None  # the run's -k expression, which narrowed its selection
    argv: tuple[str, ...] | None = None
    docs: Docs | None = None
    axes: dict[str, tuple[str, ...]] | None = None
    styles: dict[str, StyleEntry] | None = None
    paths: dict[str, PathEntry] | None = None
    reruns: int | None = None
    goals: dict[str, tuple[str, ...]] | None = None
    goal_sets: dict[str, tuple[str, ...]] | None = None
    in_place: dict[str, tuple[str, ...]] | None = None
    cell_environment: dict[str, str] | None = None
    cache_dir: str | None = None
    cold_cache: bool | None = None  # the cache folder was empty at the run's start: its compile times are cold ones
    resumed_cells: int | None = None
    reused_cells: int | None = None
    shard: str | None = None
    shard_by: str | None = None  # --shard-by: the results file whose cell seconds dealt the shares
    shard_digest: str | None = None  # ... and a digest of those seconds: the shares of one split have the same
    shards: int | None = None
    missing_shares: tuple[str, ...] | None = None  # a merge's: the shares (I/N) it was not given
    hosts: tuple[str, ...] | None = None
    shard_wall_seconds: tuple[float, ...] | None = None  # a merge's: each share's wall, in share order
    shard_timing_seconds: tuple[float, ...] | None = None  # ... and each share's timing phase
    expected_cells: tuple[str, ...] | None = None
    complete: bool | None = None
    wall_seconds: float | None = None
    timing_seconds: float | None = None  # the run's timing phase, from the last cell's end to its last timing
    copy_gbps: float | None = None  # the GPU's copy bandwidth, measured in the timing phase (GB/s)
    # each worker's timing phase: when (epoch) its warm-up began, it arrived, all had, it held the GPU, it was done
    timing_phases: dict[str, dict[str, float]] | None = None
    # the run's start (epoch): the command, its session, the first and last worker collected, its zygote serving
    start_marks: dict[str, float] | None = None
    memory: dict[str, MemoryEntry] | None = None
    script_places: tuple[PlacesReading, ...] | None = field(default=None, metadata=OMIT)  # the scripts' width
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any], file: Path | str, key: str = "environment") -> RunEnvironment:
        """The environment of its JSON object ``data``, each field checked against its type (``InputError`` naming
        ``file`` and the key)."""
        value = from_json_keeping_extra(cls, data, file, key, ignored=set())
        for index, cell in enumerate(value.expected_cells or ()):
            try:
                CellId.parse(cell)
            except ValueError as error:
                raise InputError(file, f"{key}.expected_cells[{index}]", str(error)) from None
        return value

    def to_dict(self) -> dict[str, Any]:
        """The JSON object: every field that is not None, then ``extra``."""
        data = to_json(self)
        extra = data.pop("extra")
        return {**{name: value for name, value in data.items() if value is not None}, **extra}


def environment(
    versions: Mapping[str, str | None],
    device: str,
    workers: int,
    matrix_file: str,
    given: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """What was measured: ``versions`` (harness/execution/machine.py), machine, the harness's commit, how the run
    was made; ``settings``: the variables of SETTING_PREFIXES in ``given`` (the environment as the run was given it,
    before a case module's import set one: Inductor names its default cache folder so), else in this process's."""
    return {
        **versions,
        "device": device,
        "python": platform.python_version(),
        "host": platform.node(),
        "timestamp": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        # a copied tree (a GPU runner's) may carry a stale .git: the commit the caller names wins
        "commit": os.environ.get("HARNESS_COMMIT") or _git_commit(),
        "source_digest": source_digest(),
        "workers": workers,
        "ld_preload": os.environ.get("LD_PRELOAD") or None,
        "settings": {k: v for k, v in sorted((given or os.environ).items()) if k.startswith(SETTING_PREFIXES)},
        "triton_interpret": triton_interpreted(),
        "autotune_benchmark": autotune_benchmark(),
        "matrix": matrix_file,
        "matrix_digest": file_digest(matrix_file),
        "argv": sys.argv[1:],
    }


def file_digest(file: str) -> str | None:
    """sha256 (16 hex) of a file's bytes (the matrix file's: shares of one run were run from the same text)."""
    try:
        return hashlib.sha256(Path(file).read_bytes()).hexdigest()[:16]
    except OSError:
        return None


def interpreted(env: Mapping[str, Any]) -> bool:
    """Whether the run of environment ``env`` ran in Triton's CPU interpreter (an older file without the key: no)."""
    return bool(env.get("triton_interpret"))


HARNESS_SOURCES = ("harness/**/*.py",)
INSTALLED_CASES = "harness/cases/"  # the case modules, where the harness is installed (cases/ in the repository)


def source_digest() -> str:
    """sha256 over the files that decide verdicts (harness/, harness/cell/paths/, cases/, matrix.toml): recompute it
    at a commit to check that a results file came from that commit's code, even where the run had no git
    history."""
    return _digest([*HARNESS_SOURCES, "cases/*.py", "matrix.toml"])


def harness_digest() -> str:
    """sha256 over the harness's own source (harness/*.py, harness/cell/paths/*.py): part of every cell's key.
    Installed, its case modules are not in it: a cell's key has its own case module's digest."""
    return _digest(list(HARNESS_SOURCES), skip=INSTALLED_CASES)


def _digest(patterns: list[str], skip: str | None = None) -> str:
    digest = hashlib.sha256()
    files = {file for pattern in patterns for file in ROOT.glob(pattern)}
    for file in sorted(f for f in files if not (skip and f.relative_to(ROOT).as_posix().startswith(skip))):
        digest.update(file.relative_to(ROOT).as_posix().encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _git_commit() -> str | None:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
