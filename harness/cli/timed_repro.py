"""``repro --timed CELL``: beside each named cell's repro script, ``CELL.timed.py``, a script that runs that repro
script's program unchanged and times the call the cell keeps for the timing phase (the model, compiled module,
exported module or loaded package on the inputs it checked, or a training step) as that phase does
(harness/cell/timing.py): 5 warm-up calls, 30 samples with the L2 flushed and CUDA events around each, the median
and IQR/median after Tukey's outlier removal, the host time per call. It needs only torch, like the repro script
(without a GPU it times with the host clock and says so)."""

from __future__ import annotations

from pathlib import Path

TIMED = '''"""{cell}: its repro script ({script}) run unchanged, the artifact its check called first timed as
the harness's timing phase times it. Run it on a GPU nothing else uses."""

import importlib.util
import statistics
import sys
import time
from pathlib import Path

import torch

SCRIPT = Path(__file__).with_name({script!r})
WARMUP, SAMPLES, FLUSH_BYTES = 5, 30, 256 * 2**20


def device_seconds(call, flush):
    if flush is None:  # no GPU: the host clock
        start = time.perf_counter()
        call()
        return time.perf_counter() - start
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    flush.zero_()
    start.record()
    call()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3


def quartiles(values):
    return (values[0],) * 3 if len(values) == 1 else tuple(statistics.quantiles(values, n=4, method="inclusive"))


def measure(call):
    flush = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda") if torch.cuda.is_available() else None
    for _ in range(WARMUP):
        call()
    samples = [device_seconds(call, flush) for _ in range(SAMPLES)]
    host = []
    for _ in range(SAMPLES):
        start = time.perf_counter()
        call()
        host.append(time.perf_counter() - start)
        if flush is not None:  # the next call starts on an idle GPU
            torch.cuda.synchronize()
    q1, _, q3 = quartiles(samples)
    kept = [s for s in samples if q1 - 1.5 * (q3 - q1) <= s <= q3 + 1.5 * (q3 - q1)]
    k1, median, k3 = quartiles(kept)
    clock = "CUDA events, L2 flushed" if flush is not None else "host clock: no CUDA device"
    return (
        f"{{median * 1e6:.1f}} µs ±{{100 * (k3 - k1) / median:.1f}}% (median of {{len(kept)}} of {{SAMPLES}} samples "
        f"after {{WARMUP}} warm-ups, {{clock}}), host {{statistics.median(host) * 1e6:.1f}} µs per call"
    )


if __name__ == "__main__":
    found = importlib.util.spec_from_file_location("repro", SCRIPT)  # imported as a module: its main does not run
    repro = sys.modules["repro"] = importlib.util.module_from_spec(found)
    found.loader.exec_module(repro)
    cell = repro.run_cell()  # the cell's program, run once: raises while the cell fails
    if cell.timed_call is None:
        raise SystemExit("{cell}: its path keeps no artifact to time")
    print(f"{cell}: {{measure(cell.timed_call)}}")
'''


def write_timed(scripts: dict[Path, list[str]]) -> list[Path]:
    """Beside each script written for a named cell, its timed script; the files written."""
    written = []
    for script, cells in scripts.items():
        timed = script.with_name(f"{script.stem}.timed.py")
        timed.write_text(TIMED.format(cell=cells[0], script=script.name))
        written.append(timed)
    return written
