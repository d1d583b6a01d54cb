"""``repro --timed CELL``: beside each named cell's repro script, ``CELL.timed.py``, a script that runs that repro
script's program unchanged and times the call the cell keeps for the timing phase (the model, compiled module,
exported module or loaded package on the inputs it checked, or a training step) with the timing phase's own code,
copied in (harness/cell/timing.py ``CudaTimer`` and ``sample``, bundled as a repro script's program is): by its GPU
activities' durations, as the cell's own size is timed. It needs only torch, like the repro script (without a GPU it
times with the host clock and says so)."""

from __future__ import annotations

from harness.bundle import bundle
from harness.cell.timing import CudaTimer, sample

TIMED = '''"""{cell}: its repro script ({script}) run unchanged, the artifact its check called first timed as
the harness's timing phase times it: the timing code below is the harness's own (harness/cell/timing.py). Run it
on a GPU nothing else uses."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

{imports}


{timing}


class HostClock:
    """Without a CUDA device: the host clock for both kinds of sample (a measurement of the CPU, and said so)."""

    def device_seconds(self, call, cover):
        return self.host_seconds(call)

    def kernel_samples(self, artifacts):
        raise RuntimeError("no CUDA device: nothing to profile")

    def host_seconds(self, call):
        start = time.perf_counter()
        call()
        return time.perf_counter() - start

    def synchronize(self):
        pass

    def call_bytes(self, call):  # no device memory to read
        call()
        return 0


SCRIPT = Path(__file__).with_name({script!r})


if __name__ == "__main__":
    found = importlib.util.spec_from_file_location("repro", SCRIPT)  # imported as a module: its main does not run
    repro = sys.modules["repro"] = importlib.util.module_from_spec(found)
    found.loader.exec_module(repro)
    cell = repro.run_cell()  # the cell's program, run once: raises while the cell fails
    if cell.timed_call is None:
        raise SystemExit("{cell}: its path keeps no artifact to time")
    cuda = torch.cuda.is_available()
    timing = sample(cell.timed_call, None, CudaTimer() if cuda else HostClock(), kernels=True)
    if not cuda:
        clock = "host clock: no CUDA device"
    elif timing.method == "kernels":
        names = ", ".join(timing.kernel_names) or "none"
        clock = f"L2 flushed, the sum of its {{timing.kernels}} GPU activities' durations: {{names}}"
    else:
        clock = f"CUDA events, L2 flushed, {{timing.cover_us:g}} µs cover; not by its kernels: {{timing.fallback}}"
    print(
        f"{cell}: {{timing.text}} (median of {{timing.samples}} of {{timing.samples + timing.outliers}} samples after "
        f"{{WARMUP}} warm-ups, {{clock}}), host {{timing.host_us:.1f}} µs per call"
    )
'''


def timed_source(cell: str, script: str) -> str:
    """The timed script of ``cell``, whose repro script is the file ``script`` beside it."""
    timing = bundle([CudaTimer, sample], extra_imports=("import time", "import torch"))
    return TIMED.format(cell=cell, script=script, imports=timing.import_lines(), timing=timing.text())

