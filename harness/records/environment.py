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
from pathlib import Path
from typing import Any

from harness.spec import triton_interpreted

ROOT = Path(__file__).resolve().parents[2]
SETTING_PREFIXES = ("TORCHINDUCTOR_", "TORCH_", "TRITON_", "CUDA_VISIBLE_DEVICES")


def environment(versions: Mapping[str, str | None], device: str, workers: int, matrix_file: str) -> dict[str, Any]:
    """What was measured: ``versions`` (harness/execution/machine.py), machine, the harness's commit, how the run
    was made."""
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
        "settings": {k: v for k, v in sorted(os.environ.items()) if k.startswith(SETTING_PREFIXES)},
        "triton_interpret": triton_interpreted(),
        "matrix": matrix_file,
        "argv": sys.argv[1:],
    }


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
