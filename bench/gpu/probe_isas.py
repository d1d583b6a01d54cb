"""Where the zygote's "CPU-ISA probes" step goes (8-12.7 s on the H200 in the runs' zygote logs, with matrix.toml's
``TORCHINDUCTOR_VEC_ISA_OK=1``): the step profiled in a fresh process whose bytecode cache was compiled first, as a
run's is, with every subprocess it starts timed. ``python3 bench/gpu/probe_isas.py`` on the GPU machine."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from harness.execution import bytecode

CHILD = """
import cProfile, pstats, subprocess, sys, time
began = time.perf_counter()
import torch._inductor.package
print(f"import torch._inductor.package {time.perf_counter() - began:.1f} s", flush=True)
real_popen = subprocess.Popen.__init__
def timed(self, args, *rest, **kwargs):
    print(f"  subprocess at {time.perf_counter() - began:.1f} s: {str(args)[:160]}", flush=True)
    real_popen(self, args, *rest, **kwargs)
subprocess.Popen.__init__ = timed
from harness.execution.script_server import probe_isas
probing = time.perf_counter()
cProfile.run("probe_isas()", "/tmp/probe_isas.prof")
print(f"probe_isas {time.perf_counter() - probing:.1f} s", flush=True)
pstats.Stats("/tmp/probe_isas.prof").sort_stats("cumulative").print_stats(30)
"""

if __name__ == "__main__":
    prefix = tempfile.mkdtemp(prefix="pyc-")
    bytecode.finish(bytecode.start(prefix, os.cpu_count() or 1), 60)
    env = {**os.environ, "PYTHONPYCACHEPREFIX": prefix, "PYTHONDONTWRITEBYTECODE": "", "TORCHINDUCTOR_VEC_ISA_OK": "1"}
    env["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-")
    subprocess.run([sys.executable, "-c", CHILD], env=env, check=True)
