#!/usr/bin/env bash
# The GPU runs behind reports/, reports/liger/ and bench/results/issue37/ (issue 37), as run on the lent device
# machine (torch and triton preinstalled; Liger-Kernel's pure-Python wheel carried in .whl/):
#   bash bench/gpu/issue37.sh full OUT    the full default matrix, cold (fresh cache folder), every failure confirmed;
#                                         then --reuse of it with nothing changed
#   bash bench/gpu/issue37.sh liger OUT   the Liger suite, cold, confirmed; then the harness against one process
#                                         per cell (python -m bench)
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
    start=$(date +%s)
    timeout 500 python3 -m harness run --report-dir "$out/full" --cache-dir /tmp/cache-full -q >"$out/full.log" 2>&1
    echo "full: exit $? after $(( $(date +%s) - start )) s"; tail -12 "$out/full.log"
    start=$(date +%s)
    timeout 80 python3 -m harness run --report-dir "$out/reuse" --reuse "$out/full/results.json" \
        --cache-dir /tmp/cache-full -q >"$out/reuse.log" 2>&1
    echo "reuse: exit $? after $(( $(date +%s) - start )) s"; tail -6 "$out/reuse.log"
    ;;
liger)
    start=$(date +%s)
    timeout 300 python3 -m harness run --matrix matrix-liger.toml --report-dir "$out/liger" --cache-dir /tmp/cache-liger \
        -q >"$out/liger.log" 2>&1
    echo "liger: exit $? after $(( $(date +%s) - start )) s"; tail -12 "$out/liger.log"
    timeout 280 python3 -m bench --cases sin --styles raw_jit,control --runs cold,naive --out "$out/bench" \
        >"$out/bench.log" 2>&1
    echo "bench: exit $?"; tail -8 "$out/bench.log"
    ;;
*)
    echo "usage: bash bench/gpu/issue37.sh full|liger OUT" >&2
    exit 2
    ;;
esac
