"""Where a training cell's compare stage spends its wall time on a GPU (3c865ca: 1-9 s, CPU 0.2 s): the harness's
own cell run in this process, alone on the GPU, profiled by the wall clock.

    python bench/gpu/probe_compare.py
"""

import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.fast.test_cells import run

for case, style in [("matmul", "control"), ("add", "raw_jit"), ("matmul", "raw_jit")]:
    for attempt in range(2):
        began = time.perf_counter()
        record = run(case, style, "train_eager", Path(tempfile.mkdtemp()))
        m = record["measurements"]
        print(
            case,
            style,
            attempt,
            record["status"],
            round(time.perf_counter() - began, 2),
            m.stage_seconds,
            m.cpu_seconds,
            flush=True,
        )
profile = cProfile.Profile()
profile.enable()
run("matmul", "control", "train_eager", Path(tempfile.mkdtemp()))
profile.disable()
stats = pstats.Stats(profile)
stats.sort_stats("tottime").print_stats(25)
stats.sort_stats("cumulative").print_stats(45)
