#!/usr/bin/env bash
# The GPU runs behind reports/, reports/liger/ and bench/results/issue29/ (issue 29), as run on the lent device
# machine (torch and triton preinstalled; Liger-Kernel's pure-Python wheel carried in .whl/):
#   bash bench/gpu/issue29.sh full OUT   the full default matrix, cold (fresh cache folder), then --reuse of it
#   bash bench/gpu/issue29.sh more OUT   order independence (bench/order_independence.py), the Liger suite's
#                                        chart, and the harness against one process per cell (python -m bench)
# Every run writes its own folder under OUT; the callers copy them into the repository unchanged.
set -uo pipefail
phase=$1
out=$2
mkdir -p "$out"
# AOTInductor packages segfault in that image without the system C++ runtime first (README, "GPU runners")
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libstdc++.so.6 PYTHONUNBUFFERED=1
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
nproc
python3 -c "import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name())"
case $phase in
full)
    python3 -m harness run --report-dir "$out/full" --cache-dir /tmp/cache-full -q >"$out/full.log" 2>&1
    echo "full: exit $?"; tail -6 "$out/full.log"
    python3 -m harness run --report-dir "$out/reuse" --reuse "$out/full/results.json" --cache-dir /tmp/cache-full \
        -q >"$out/reuse.log" 2>&1
    echo "reuse: exit $?"; tail -4 "$out/reuse.log"
    ;;
more)
    python3 -m bench.order_independence --workers 8 --out "$out/order.json" >"$out/order.log" 2>&1
    echo "order independence: exit $?"; tail -8 "$out/order.log"
    python3 -m harness run --matrix matrix-liger.toml --report-dir "$out/liger" --cache-dir /tmp/cache-liger \
        -q >"$out/liger.log" 2>&1
    echo "liger: exit $?"; tail -6 "$out/liger.log"
    python3 -m bench --cases sin --styles raw_jit,control --runs cold,naive --out "$out/bench" >"$out/bench.log" 2>&1
    echo "bench: exit $?"; tail -8 "$out/bench.log"
    ;;
*)
    echo "usage: bash bench/gpu/issue29.sh full|more OUT" >&2
    exit 2
    ;;
esac
