"""The GPU proof that a verdict does not depend on cell order or cache state (issue 25, point 3): ``add_inplace``
x every decorator stack with ``@triton.autotune`` outermost x every wrapper x the compile paths (36 cells), run
in the default, reversed and a shuffled order (the harness still starts longer-timeout paths first; within a
path the order is the one given), each on a fresh cache folder and again on the warm one. With one worker the
cells follow each other in one cell process; with more, they share the cache folder on disk, where Inductor
stored its autotune results. Prints every cell's attempts per run; exits 1 when some cell's verdict (its
status and attempts) differs between runs. A 10-minute device call holds about one order: split with
``--orders`` (each order's fresh and warm run share its cache folder, so keep them in one call).

Usage (on the GPU): python -m bench.order_independence [--matrix matrix.toml] [--cases add_inplace]
                        [--paths compile,fullgraph,dynamic,cudagraphs,train_compile,subclass_compile]
                        [--orders default,reversed,shuffled] [--seed 0] [--workers 1] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COMPILE_PATHS = "compile,fullgraph,dynamic,cudagraphs,train_compile,subclass_compile"
OUTERMOST_AUTOTUNE = ("autotune", "autotune_heuristics")  # the decorator stacks whose outer decorator autotunes


def cells(matrix_file: str, cases: list[str], paths: list[str]) -> list[str]:
    """The cell ids, in matrix order: the cases x styles with autotune outermost x the paths."""
    from harness.matrix.config import load_matrix

    matrix = load_matrix(matrix_file)
    styles = [style for style, (decorator, _) in matrix.style_axes.items() if decorator in OUTERMOST_AUTOTUNE]
    return [spec.id for spec in matrix.cells if spec.case in cases and spec.style in styles and spec.path.id in paths]


def run(matrix_file: str, order: list[str], report_dir: Path, cache_dir: Path, workers: int) -> dict[str, list[str]]:
    """Run the cells in ``order``; every cell's attempts (its status first)."""
    nodes = [f"{matrix_file}::{cell}" for cell in order]
    command = [sys.executable, "-m", "harness", "run", "--matrix", matrix_file, "--report-dir", str(report_dir)]
    command += ["--cache-dir", str(cache_dir), "-n", str(workers if workers > 1 else 0), "-q", *nodes]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
    records = json.loads((report_dir / "results.json").read_text())["cells"]
    return {r["id"]: r.get("outcomes") or [r["status"]] for r in records}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.order_independence", description=__doc__.splitlines()[0])
    parser.add_argument("--matrix", default="matrix.toml")
    parser.add_argument("--cases", default="add_inplace")
    parser.add_argument("--paths", default=COMPILE_PATHS)
    parser.add_argument("--orders", default="default,reversed,shuffled")
    parser.add_argument("--seed", type=int, default=0, help="the shuffled order's seed")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--out", default=None, help="write every run's attempts per cell to this JSON file")
    args = parser.parse_args(argv)
    default = cells(args.matrix, args.cases.split(","), args.paths.split(","))
    shuffled = random.Random(args.seed).sample(default, len(default))
    every = {"default": default, "reversed": default[::-1], "shuffled": shuffled}
    orders = {name: every[name] for name in args.orders.split(",")}
    work = Path(tempfile.mkdtemp(prefix="order-"))
    verdicts: dict[str, dict[str, list[str]]] = {}
    for name, order in orders.items():
        cache = work / f"cache-{name}"  # fresh: an empty folder; warm: the same folder again, now filled
        for state in ("fresh", "warm"):
            label = f"{name}/{state}"
            verdicts[label] = run(args.matrix, order, work / label, cache, args.workers)
            if args.out:  # after every run: a call cut short keeps what it measured
                Path(args.out).write_text(json.dumps(verdicts, indent=1))
            print(f"[order] {label}: {len(verdicts[label])} cells", flush=True)
    differ = 0
    for cell in default:
        seen = {label: " ".join(by_cell.get(cell, ["missing"])) for label, by_cell in verdicts.items()}
        same = len(set(seen.values())) == 1
        differ += not same
        print(f"{'  ' if same else '≠ '}{cell}: " + "; ".join(f"{label} {runs}" for label, runs in seen.items()))
    print(f"[order] {differ} of {len(default)} cells differ between orders or cache states ({work})")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
