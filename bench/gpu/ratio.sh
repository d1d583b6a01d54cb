#!/usr/bin/env bash
# The full default matrix as a user types it, cold, on the GPUs named (issue 60's ratios: one warm host, one side
# after the other), as run on the lent device machine (torch and triton preinstalled):
#   bash bench/gpu/ratio.sh NAME GPUS OUT    e.g. one 0 OUT, then four 0,1,2,3 OUT, on the same machine
# LIMIT: seconds the run may take (555: a 10-minute device call packs what it left)
# Writes OUT/NAME.log, OUT/NAME-host.csv (the host's load: bench/gpu/hostload.py), OUT/NAME-gpu.csv.gz and
# OUT/NAME-gpu-apps.csv.gz (nvidia-smi's samples of the GPUs and of their processes), OUT/NAME-results.json.gz
# (python -m bench costs / timeline read it unzipped) and OUT/NAME-report.tgz (the report folder).
set -u
name=${1:?usage: bash bench/gpu/ratio.sh NAME GPUS OUT} gpus=${2:?GPUS} out=${3:?OUT}
mkdir -p "$out"
# AOTInductor packages segfault in that image without the system C++ runtime first (README, "GPU runners")
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libstdc++.so.6 PYTHONUNBUFFERED=1
export HARNESS_COMMIT=${HARNESS_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
rm -rf /tmp/torchinductor_* ~/.cache/torch/inductor ~/.triton/cache "/tmp/$name" "/tmp/cache-$name" 2>/dev/null
python3 bench/gpu/hostload.py "$out/$name-host.csv" &  # the host's load beside the run (bench timeline --host)
sampler=$!
# the GPUs' clocks, power and load, and the processes holding them, beside the run: what a timing that split in two
# shared its GPU with, once a second (nothing, where nvidia-smi is missing)
nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu \
    --format=csv -lms 1000 >"$out/$name-gpu.csv" 2>/dev/null &
gpu_sampler=$!
nvidia-smi --query-compute-apps=timestamp,gpu_uuid,pid,used_memory --format=csv -lms 1000 \
    >"$out/$name-gpu-apps.csv" 2>/dev/null &
apps_sampler=$!
start=$(date +%s)
CUDA_VISIBLE_DEVICES=$gpus timeout "${LIMIT:-555}" python3 -m harness run --report-dir "/tmp/$name" --cache-dir "/tmp/cache-$name" \
    -q >"$out/$name.log" 2>&1
echo "$name: exit $? after $(($(date +%s) - start)) s"
kill $sampler $gpu_sampler $apps_sampler 2>/dev/null
gzip -f "$out/$name-gpu.csv" "$out/$name-gpu-apps.csv"
tail -6 "$out/$name.log"
gzip -c "/tmp/$name/results.json" >"$out/$name-results.json.gz"
# the report folder as one file: a device call returns a bounded number of files
tar czf "$out/$name-report.tgz" -C /tmp "$name"
