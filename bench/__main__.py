"""The speed benchmark: one selection of cells, in the same call, (a) through the harness with cold caches,
(b) again warm, (c) through a naive runner, one fresh Python per cell, at the same parallelism and with cold
caches, (d) through the harness without matrix.toml's [environment] (what those settings buy), and (e) twice
over in the same cell processes (warm caches): memory a process keeps growing by once every cell has run.
Prints and writes a markdown table (wall times, ratios, verdict agreement, memory per cell process).

Usage: python -m bench [--cases sin] [--styles a,b] [--workers N] [--runs cold,warm,naive,no_env,repeat]
                       [--out bench/results]
       python -m bench timeline RESULTS.json [--out FILE.png]   (a run's timeline: bench/timeline.py)
       python -m bench costs RESULTS.json [--out FILE.md]       (where its wall time went: bench/costs.py)
       python -m bench replay RESULTS.json [--chunks 1,2]        (its cells under xdist's scheduling: bench/replay.py)
       python -m bench passes RESULTS.json [--out DIR]          (passing cells' short scripts run: bench/passes.py)
       python -m bench shares RESULTS.json [--plan EARLIER.json] (how evenly --shard splits it: bench/shares.py)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tabulate import tabulate

REPO = Path(__file__).resolve().parent.parent
RUNS = ("cold", "warm", "naive", "no_env", "repeat")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["timeline"]:
        from bench import timeline

        return timeline.main(argv[1:])
    if argv[:1] == ["replay"]:
        from bench import replay

        return replay.main(argv[1:])
    if argv[:1] == ["passes"]:
        from bench import passes

        return passes.main(argv[1:])
    if argv[:1] == ["shares"]:
        from bench import shares

        return shares.main(argv[1:])
    if argv[:1] == ["costs"]:
        from bench import costs

        return costs.main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--matrix", default=str(REPO / "matrix.toml"))
    parser.add_argument("--cases", default="sin", help="the selection: these cases x every style x every path")
    parser.add_argument("--styles", default=None, help="only these styles (default: every style)")
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 1) - 2))
    parser.add_argument("--runs", default=",".join(RUNS), help=f"which of {', '.join(RUNS)} (in that order)")
    parser.add_argument("--out", default=str(REPO / "bench" / "results"))
    args = parser.parse_args(argv)
    runs = [run for run in RUNS if run in args.runs.split(",")]
    work = Path(tempfile.mkdtemp(prefix="bench-"))
    results: dict[str, dict[str, Any]] = {}
    for run in runs:
        print(f"[bench] {run} ...", flush=True)
        if run == "naive":
            results[run] = naive(args, work / "naive", work / "cache-naive")
        elif run == "repeat":
            results[run] = repeat(args, work / "repeat", work / "cache")
        else:
            matrix = args.matrix if run != "no_env" else without_environment(Path(args.matrix), work)
            cache = work / ("cache-no-env" if run == "no_env" else "cache")  # warm reuses cold's caches
            results[run] = harness(args, matrix, work / run, cache)
        print(f"[bench] {run}: {results[run]['cells']} cells in {results[run]['wall_s']} s", flush=True)
        write(args, results)  # after every run: a bench cut short keeps what it measured
    print(render(args, results))
    return 0


def write(args: argparse.Namespace, results: dict[str, dict[str, Any]]) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    slug = next(iter(results.values()))["device"].replace(" ", "-").lower()
    (out / f"{slug}.md").write_text(render(args, results))
    (out / f"{slug}.json").write_text(json.dumps(results, indent=1) + "\n")


def harness(args: argparse.Namespace, matrix: str | Path, report_dir: Path, cache: Path) -> dict[str, Any]:
    command = [sys.executable, "-m", "harness", "run", "--matrix", str(matrix), "--cases", args.cases]
    command += ["--styles", args.styles] if args.styles else []
    command += ["--report-dir", str(report_dir), "--cache-dir", str(cache), "-n", str(args.workers), "-q"]
    start = time.perf_counter()
    subprocess.run(command, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    data = json.loads((report_dir / "results.json").read_text())
    return summarize(data["cells"], wall, data["environment"]["device"], data["environment"].get("memory"))


def selection(args: argparse.Namespace) -> tuple[Any, tuple[Any, ...]]:
    """The matrix narrowed to ``--cases`` (and ``--styles``), and its cells (``CellSpec``s)."""
    from harness.matrix.config import load_matrix, select
    from harness.plugin.values import parse_ids

    styles = parse_ids(args.styles) if args.styles else None
    matrix = select(load_matrix(args.matrix), cases=parse_ids(args.cases), styles=styles)
    return matrix, matrix.cells


def naive(args: argparse.Namespace, out_dir: Path, cache: Path) -> dict[str, Any]:
    """One fresh ``python -m bench.naive_cell`` per cell, ``--workers`` at a time, the environment as found."""
    _, cells = selection(args)
    out_dir.mkdir(parents=True)
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache / "inductor"), TRITON_CACHE_DIR=str(cache / "triton"))

    def one(spec: Any) -> dict[str, Any]:
        target = out_dir / f"{spec.id}.json"
        command = [sys.executable, "-m", "bench.naive_cell", str(args.matrix), spec.id, str(target)]
        try:
            subprocess.run(command, cwd=REPO, env=env, timeout=spec.path.timeout, capture_output=True)
        except subprocess.TimeoutExpired:
            return {"id": spec.id, "status": "timeout", "seconds": spec.path.timeout}
        if not target.exists():
            return {"id": spec.id, "status": "crash", "seconds": 0.0}
        return json.loads(target.read_text())

    start = time.perf_counter()
    with ThreadPoolExecutor(args.workers) as pool:
        records = list(pool.map(one, cells))
    wall = time.perf_counter() - start
    return summarize(records, wall, records[0].get("device", "unknown"), None)


def repeat(args: argparse.Namespace, out_dir: Path, cache: Path) -> dict[str, Any]:
    """Each of ``--workers`` cell processes runs its share of the cells twice (caches as cold left them): the
    RSS each process gains over the second pass is growth that does not stop once every cell has run."""
    from harness.execution.cellprocess import CellProcess
    from harness.plugin.processes import cell_environment
    from harness.records.record import Record

    matrix, cells = selection(args)
    environment = cell_environment(matrix.environment, cache)

    def passes(worker: int) -> list[dict[str, Any]]:
        process = CellProcess(out_dir / f"worker{worker}.log", environment, None, max_rss_mb=0)
        try:
            return [
                Record.of(spec, process.run(spec)).to_dict() | {"pass": n, "device": process.device}
                for n in (1, 2)
                for spec in cells[worker :: args.workers]
            ]
        finally:
            process.close()

    start = time.perf_counter()
    with ThreadPoolExecutor(args.workers) as pool:
        shares = list(pool.map(passes, range(args.workers)))
    wall = time.perf_counter() - start
    growth = {}
    for share in shares:
        rss = [(record["pass"], record["measurements"].get("rss_mb")) for record in share]
        ends = {n: [mb for p, mb in rss if p == n and mb is not None] for n in (1, 2)}
        pid = share[-1]["measurements"].get("pid")
        if ends[1] and ends[2]:
            growth[str(pid)] = {
                "cells_per_pass": len(share) // 2,
                "rss_first_mb": ends[1][0],
                "rss_after_pass_1_mb": ends[1][-1],
                "rss_after_pass_2_mb": ends[2][-1],
                "pass_2_mb_per_cell": round((ends[2][-1] - ends[1][-1]) / len(ends[2]), 2),
            }
    second = [record for share in shares for record in share if record["pass"] == 2]
    return summarize(second, wall, second[0]["device"] or "unknown", growth)


def without_environment(matrix: Path, work: Path) -> Path:
    """A copy of the matrix file with an empty [environment] table."""
    data = tomllib.loads(matrix.read_text())
    lines = matrix.read_text().splitlines()
    if "environment" in data:
        start = lines.index("[environment]")
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("[")), len(lines))
        lines = lines[:start] + lines[end:]
    copy = work / "matrix-no-environment.toml"
    copy.write_text("\n".join(lines) + "\n")
    return copy


def summarize(cells: list[dict[str, Any]], wall: float, device: str, memory: dict | None) -> dict[str, Any]:
    return {
        "cells": len(cells),
        "wall_s": round(wall, 1),
        "cell_s": round(sum(cell.get("seconds") or 0.0 for cell in cells), 1),
        "device": device,
        "statuses": {cell["id"]: cell["status"] for cell in cells},
        "memory": memory,
    }


def render(args: argparse.Namespace, results: dict[str, dict[str, Any]]) -> str:
    first = next(iter(results.values()))
    cold = results.get("cold")
    rows = []
    for run, result in results.items():
        agree = sum(first["statuses"].get(cell) == status for cell, status in result["statuses"].items())
        rows.append(
            [
                run,
                result["cells"],
                result["wall_s"],
                result["cell_s"],
                f"{result['wall_s'] / cold['wall_s']:.2f}" if cold else "",
                f"{agree}/{result['cells']}",
            ]
        )
    headers = ["run", "cells", "wall s", "sum of cell s", "wall / cold", f"same verdict as {next(iter(results))}"]
    lines = [
        f"# Benchmark: cases {args.cases}, styles {args.styles or 'all'}, every path, {args.workers} workers",
        "",
        f"Device: {first['device']}. Measured by `python -m bench` (bench/__main__.py) in one call.",
        "",
        tabulate(rows, headers=headers, tablefmt="github"),
        "",
    ]
    if cold and "naive" in results:
        lines.append(f"Naive / harness (cold): {results['naive']['wall_s'] / cold['wall_s']:.2f}x.")
    if cold and "warm" in results:
        lines.append(f"Cold / warm: {cold['wall_s'] / results['warm']['wall_s']:.2f}x.")
    if cold and "no_env" in results:
        lines.append(f"Without [environment] / with: {results['no_env']['wall_s'] / cold['wall_s']:.2f}x.")
    if "repeat" in results:
        lines.append("repeat: the cells twice in the same processes; its wall time covers both passes.")
    for run, title in (("cold", "cold run"), ("repeat", "repeat run: RSS growth over the second pass")):
        memory = results.get(run, {}).get("memory") or {}
        if memory:
            table = [[pid, *m.values()] for pid, m in memory.items()]
            lines += ["", f"Memory per cell process ({title}):", ""]
            lines.append(tabulate(table, headers=["pid", *next(iter(memory.values())).keys()], tablefmt="github"))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
