"""The record format: one JSON file per run, an environment stamp and one record per cell."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.records import validate
from harness.spec import STATUSES, CellSpec, Outcome

SCHEMA = 1
ROOT = Path(__file__).resolve().parents[2]
SETTING_PREFIXES = ("TORCHINDUCTOR_", "TORCH_", "TRITON_", "CUDA_VISIBLE_DEVICES")


def new_record(spec: CellSpec, outcome: Outcome, key: str | None = None) -> dict[str, Any]:
    """The record of one cell: born here, and only here, from the cell's spec and its outcome, with the cell's
    ``key`` (harness/records/reuse.py: what its verdict depends on). Every key is present; ``traceback``,
    ``cuda_fault`` and ``outcomes`` only where the outcome has them."""
    record: dict[str, Any] = {
        "id": spec.id,
        "case": spec.case,
        "style": spec.style,
        "path": spec.path.id,
        "module": spec.module,
        "status": outcome.status,
        "error_type": outcome.error_type,
        "error": outcome.error,
        "stage": outcome.stage,
        "reason": outcome.reason,
        "diagnostics": outcome.diagnostics,
        "seconds": outcome.seconds,
        "key": key,
    }
    if outcome.traceback is not None:
        record["traceback"] = outcome.traceback
    if outcome.cuda_fault:
        record["cuda_fault"] = True
    if outcome.outcomes is not None:
        record["outcomes"] = outcome.outcomes
    return record


def summary(record: dict[str, Any]) -> str:
    """One line: status, stage and the error's first line (the skip reason for a skip)."""
    if record["status"] == "skip":
        return f"skip: {record.get('reason') or ''}"
    first = (record.get("error") or "").strip().splitlines()
    stage = f" at {record['stage']}" if record.get("stage") else ""
    return f"{record['status']}{stage}: {record.get('error_type') or ''}: {first[0] if first else ''}"


def environment(device: str, workers: int, matrix_file: str) -> dict[str, Any]:
    """What was measured: versions, machine, the harness's commit, how the run was made."""
    import torch
    import triton

    return {
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": torch.version.cuda,
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
        "triton_interpret": os.environ.get("TRITON_INTERPRET") == "1",
        "matrix": matrix_file,
        "argv": sys.argv[1:],
    }


HARNESS_SOURCES = ("harness/**/*.py",)


def source_digest() -> str:
    """sha256 over the files that decide verdicts (harness/, harness/cell/paths/, cases/, matrix.toml): recompute it
    at a commit to check that a results file came from that commit's code, even where the run had no git
    history."""
    return _digest([*HARNESS_SOURCES, "cases/*.py", "matrix.toml"])


def harness_digest() -> str:
    """sha256 over the harness's own source (harness/*.py, harness/cell/paths/*.py): part of every cell's key."""
    return _digest(list(HARNESS_SOURCES))


def _digest(patterns: list[str]) -> str:
    digest = hashlib.sha256()
    for file in sorted({file for pattern in patterns for file in ROOT.glob(pattern)}):
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


def memory_by_process(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """Per cell process (pid): cells run, host RSS after its first and last cell, its peaks (host, GPU), and
    the RSS growth per cell from a least-squares line over the series: growth shows as a positive slope."""
    series: dict[int, list[tuple[int, dict[str, Any]]]] = {}
    for cell in cells:
        diagnostics = cell.get("diagnostics") or {}
        if "pid" in diagnostics and "rss_mb" in diagnostics:
            series.setdefault(diagnostics["pid"], []).append((diagnostics["nth"], diagnostics))
    processes = {}
    for pid, points in series.items():
        points.sort(key=lambda point: point[0])
        xs = [float(n) for n, _ in points]
        ys = [float(d["rss_mb"]) for _, d in points]
        mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
        spread = sum((x - mean_x) ** 2 for x in xs)
        slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread if spread else 0.0
        processes[str(pid)] = {
            "cells": len(points),
            "gpu": points[0][1].get("gpu"),
            "rss_first_mb": ys[0],
            "rss_last_mb": ys[-1],
            "peak_rss_mb": max(float(d.get("peak_rss_mb", 0)) for _, d in points),
            "gpu_peak_mb": max(float(d.get("gpu_peak_mb", 0)) for _, d in points),
            "rss_mb_per_cell": round(slope, 2),
        }
    return processes


def write_results(file: Path, env: dict[str, Any], cells: list[dict[str, Any]]) -> None:
    """Write atomically: a reader (or a killed run) sees the old file or the new one, never half of one."""
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_name(file.name + ".tmp")
    tmp.write_text(json.dumps({"schema": SCHEMA, "environment": env, "cells": cells}, indent=1, default=repr) + "\n")
    os.replace(tmp, file)


def read_results(file: Path | str) -> dict[str, Any]:
    """Load and validate a results file; ``InputError`` names the file and the key that is wrong."""
    file = Path(file)
    try:
        data = json.loads(Path(file).read_text())
    except FileNotFoundError:
        raise InputError(file, "(file)", "no such file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(file, "(json)", f"not valid JSON ({error})") from None
    if not isinstance(data, dict):
        raise InputError(file, "(top)", "expected an object with 'environment' and 'cells'")
    if data.get("schema") != SCHEMA:
        raise InputError(file, "schema", f"expected {SCHEMA}, got {data.get('schema')!r}")
    if not isinstance(data.get("environment"), dict):
        raise InputError(file, "environment", "expected an object")
    cells = data.get("cells")
    if not isinstance(cells, list):
        raise InputError(file, "cells", "expected a list of records")
    seen = set()
    for index, cell in enumerate(cells):
        key = f"cells[{index}]"
        if not isinstance(cell, dict):
            raise InputError(file, key, "expected a record object")
        for name in ("id", "case", "style", "path", "status"):
            if not isinstance(cell.get(name), str):
                raise InputError(file, f"{key}.{name}", "missing or not a string")
        if cell["status"] not in STATUSES:
            raise InputError(file, f"{key}.status", f"unknown status {cell['status']!r}")
        if cell["id"] in seen:
            raise InputError(file, f"{key}.id", f"duplicate cell {cell['id']!r}")
        seen.add(cell["id"])
        validate.check_record(file, key, cell)
    validate.check_environment(file, data["environment"])
    return data


def merge(runs: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """One results file from shards of one matrix run on machines alike (same torch, triton, device)."""
    first_file, first = runs[0]
    env = dict(first["environment"])
    cells: dict[str, dict[str, Any]] = {}
    # --shard I/N deals cell k to share k mod N: dealing the shares' lists back restores the matrix order
    runs = sorted(runs, key=lambda run: str(run[1]["environment"].get("shard") or ""))
    lists = [data["environment"].get("expected_cells", []) for _, data in runs]
    expected = [lst[i] for i in range(max(map(len, lists), default=0)) for lst in lists if i < len(lst)]
    for file, data in runs:
        other = data["environment"]
        for key in ("torch", "triton", "device"):
            if other.get(key) != env.get(key):
                raise InputError(
                    file, f"environment.{key}", f"{other.get(key)!r}, but {first_file} has {env.get(key)!r}"
                )
        if bool(other.get("triton_interpret")) != bool(env.get("triton_interpret")):
            raise InputError(
                file,
                "environment.triton_interpret",
                f"{bool(other.get('triton_interpret'))}, but {first_file} has {bool(env.get('triton_interpret'))}: "
                "a run in Triton's interpreter (--interpret) and one on the device do not merge",
            )
        for index, cell in enumerate(data["cells"]):
            if cell["id"] in cells:
                raise InputError(file, f"cells[{index}].id", f"{cell['id']!r} is in another shard too")
            cells[cell["id"]] = cell
    environments = [data["environment"] for _, data in runs]
    env.update(
        expected_cells=expected,
        complete=all(e.get("complete") for e in environments) and all(cell in cells for cell in expected),
        wall_seconds=max(e.get("wall_seconds") or 0 for e in environments),
        workers=sum(e.get("workers") or 0 for e in environments),
        shards=len(runs),
        hosts=sorted({str(e.get("host")) for e in environments}),
    )
    order = {cell: index for index, cell in enumerate(expected)}
    return {
        "schema": SCHEMA,
        "environment": env,
        "cells": sorted(cells.values(), key=lambda c: order.get(c["id"], len(order))),
    }
