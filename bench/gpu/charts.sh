#!/usr/bin/env bash
# The GPU runs behind reports/ and reports/liger/ (issues 34 and 35 re-drew the charts), as run on the lent device
# machine (torch and triton preinstalled; Liger-Kernel's pure-Python wheel carried in .whl/):
#   bash bench/gpu/charts.sh full OUT    the full default matrix, cold (fresh cache folder), every failure confirmed,
#                                        then gated against the committed reports/results.json
#   bash bench/gpu/charts.sh liger OUT   the Liger suite, cold, confirmed, gated against reports/liger/results.json
#   bash bench/gpu/charts.sh full OUT 2/3   one share of the full matrix (a cold full run, every cell autotuning
#                                        afresh, took 1,046 s on an H100 in three shares at b9fa1ff: more than one
#                                        10-minute device call); merged with python -m harness merge --out
#                                        reports/results.json S1 S2 S3 and gated afterwards (a share is not gated:
#                                        it holds a third of the baseline's cells)
# On one H200 of 16 cores the full matrix took 451 s by the shell's clock at 7f696df (570 s did not suffice at
# 7c5a2ea): it fits one 10-minute device call.
# Every run writes its own folder under /tmp and packs it into OUT/PHASE-report.tgz (a device call returns a bounded
# number of files), with PHASE-gpu.csv and PHASE-gpu-apps.csv beside it (nvidia-smi's GPU memory samples, in all and
# per process); the callers unpack the folder into the repository unchanged.
set -uo pipefail
phase=$1
out=$2
share=${3:-}
mkdir -p "$out"
# AOTInductor packages segfault in that image without the system C++ runtime first (README, "GPU runners")
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libstdc++.so.6 PYTHONUNBUFFERED=1
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
python3 -c "import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name())"
case $phase in
full) matrix=matrix.toml baseline=reports/results.json limit=540 ;;
liger) matrix=matrix-liger.toml baseline=reports/liger/results.json limit=400 ;;
*)
    echo "usage: bash bench/gpu/charts.sh full|liger OUT" >&2
    exit 2
    ;;
esac
rm -rf "/tmp/$phase" "/tmp/cache-$phase" "/tmp/$phase-gpu.csv" "/tmp/$phase-gpu-apps.csv"
python3 bench/gpu/hostload.py "$out/$phase-host.csv" &  # the host's load beside the run (bench timeline --host)
sampler=$!
# the GPUs' memory beside the run, once a second (packed beside the report, not in it; nothing without nvidia-smi)
nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total --format=csv -lms 1000 >"/tmp/$phase-gpu.csv" 2>/dev/null &
gpu_sampler=$!
# each process's GPU memory every 5 s (epoch,pid,MiB; a cell process's pid is in its records' measurements.pid)
while sleep 5; do
    nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null | sed "s/^/$(date +%s),/"
done >"/tmp/$phase-gpu-apps.csv" &
apps_sampler=$!
start=$(date +%s)
# shellcheck disable=SC2046  # no option, or --shard I/N
timeout $limit python3 -m harness run --matrix $matrix $([ -n "$share" ] && echo --shard "$share") \
    --report-dir "/tmp/$phase" --cache-dir "/tmp/cache-$phase" -q >"$out/$phase.log" 2>&1
echo "$phase: exit $? after $(( $(date +%s) - start )) s"
kill $sampler $gpu_sampler $apps_sampler 2>/dev/null
tail -15 "$out/$phase.log"
if [ -z "$share" ]; then
    timeout 150 python3 -m harness gate --baseline "$baseline" --current "/tmp/$phase/results.json" --matrix $matrix \
        --out "/tmp/$phase/gate.md" >"$out/$phase-gate.log" 2>&1
    echo "gate: exit $?"
    head -8 "/tmp/$phase/gate.md"
fi
tar czf "$out/$phase-report.tgz" -C /tmp "$phase" "$phase-gpu.csv" "$phase-gpu-apps.csv"
