#!/usr/bin/env bash
# Where a library suite's start goes before its session begins, on the lent GPU machine (.whl/ holding the suite's
# library wheels, as charts.sh carries them). On one H100 at 9500aa3 the Liger suite's session began 19.0 s after the
# command and the full matrix's 9.2 s; on CPU here the two collections differ by 1.4 s (liger_kernel imports
# torch._dynamo, which the harness imports anyway). Per matrix, three checks of the controller alone (no cell runs):
#   the wall of `harness run --collect-only -n 0` (its case checks, no workers), twice (the second with warm files);
#   the importing of each case module, by -X importtime, its 25 slowest (cumulative);
#   whether the case modules' import starts CUDA in the controller (torch.cuda.is_initialized after them).
#   bash bench/gpu/probe_start.sh OUT [MATRIX...]     (default: matrix.toml matrix-liger.toml)
set -uo pipefail
out=${1:?usage: bash bench/gpu/probe_start.sh OUT [MATRIX...]}
shift
matrices=${*:-matrix.toml matrix-liger.toml}
mkdir -p "$out"
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libstdc++.so.6 PYTHONUNBUFFERED=1
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
for matrix in $matrices; do
    name=$(basename "$matrix" .toml)
    for turn in 1 2; do
        took=$( { TIMEFORMAT=%R; time python3 -m harness run --matrix "$matrix" --collect-only -q -n 0 \
            --report-dir "/tmp/probe-$name" >/dev/null 2>&1; } 2>&1)
        echo "$name: collect-only, turn $turn: $took s"
    done
    cases=$(python3 -c "import tomllib,sys; print(' '.join(tomllib.load(open(sys.argv[1],'rb'))['cases']))" "$matrix")
    python3 -X importtime - "$cases" 2>"$out/$name-importtime.txt" <<'EOF'
import sys, time
import torch
from harness.case import load_cases
from harness.matrix.builtin import case_module
began = time.perf_counter()
for entry in sys.argv[1].split():
    load_cases(case_module(entry))
print(f"case modules: {time.perf_counter() - began:.2f} s after torch; CUDA started: {torch.cuda.is_initialized()}")
EOF
    sort -t'|' -k2 -n "$out/$name-importtime.txt" | tail -25 >"$out/$name-slowest.txt"
    tail -3 "$out/$name-slowest.txt"
done
