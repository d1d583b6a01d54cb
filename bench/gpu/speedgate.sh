#!/usr/bin/env bash
# Does gate --speed tell a planted slowdown from run-to-run noise (issue 42)? On the lent GPU machine (torch and
# triton preinstalled, no network), in one 10-minute device command:
#   HARNESS_COMMIT=<commit> bash bench/gpu/speedgate.sh OUT
# Two cold runs (fresh cache folders) of one commit, OUT/first and OUT/second, then:
#   OUT/gate-same.md      gate --speed of second against first (0 expected: a second run of the same commit passes)
#   OUT/gate-planted.md   gate --speed of OUT/planted.json, a copy of second whose bandwidth-bound medians (and
#                         IQRs) are scaled by 1.10 (1 expected: the planted 10% slowdown fails; how many cells)
#   OUT/gate-launch.md    gate-same with the launch-bound regime gated too (--max-launch-slowdown 0.05), not re-timed
#   OUT/summary.txt       each step's exit status and seconds, how many cells each gate named, per regime
# The same-commit gate re-times each cell it finds slower in time in a run of its own first (as gate does by
# default); the planted one runs with --rerun 0 (a re-timing would time the real, unplanted artifact).
# Two full cold runs of the default matrix (about 430 s each on an H100) do not fit one command, so both runs
# are of the cells that have a bandwidth-bound regime: the cases that declare a bandwidth_size, on the paths
# whose artifact takes that size (SELECTION below; set SELECTION to other run options to widen it). Repro
# scripts are not run (--no-confirm): they would compete with the cells for the GPU.
set -uo pipefail
out=${1:?usage: bash bench/gpu/speedgate.sh OUT}
mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
SELECTION=${SELECTION:---cases add,rmsnorm --paths eager,compile,dynamic,train_eager,train_compile}
# AOTInductor packages segfault in that image without the system C++ runtime first (README, "GPU runners")
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libstdc++.so.6 PYTHONUNBUFFERED=1
export HARNESS_COMMIT=${HARNESS_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
say() { echo "$*" | tee -a "$summary"; }
say "$(python3 -c 'import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name())')"
say "commit $HARNESS_COMMIT; selection: $SELECTION"

run() {  # NAME: a cold run of the selection into OUT/NAME
    local name=$1 start
    rm -rf "/tmp/cache-speedgate-$name"
    start=$(date +%s)
    # shellcheck disable=SC2086  # SELECTION is a list of options
    timeout 250 python3 -m harness run --matrix matrix.toml $SELECTION --report-dir "$out/$name" \
        --cache-dir "/tmp/cache-speedgate-$name" --no-confirm -q >"$out/$name.log" 2>&1
    say "$name: exit $? after $(($(date +%s) - start)) s; $(tail -1 "$out/$name.log")"
}

gate() {  # NAME CURRENT [OPTION]: gate --speed of CURRENT against first, into OUT/gate-NAME.md
    # shellcheck disable=SC2086  # OPTION is empty or one option
    timeout 200 python3 -m harness gate --speed --baseline "$out/first/results.json" --current "$2" ${3:-} \
        --matrix matrix.toml --out "$out/gate-$1.md" >"$out/gate-$1.log" 2>&1
    local code=$?
    say "gate $1: exit $code; $(grep -c '| time (bandwidth-bound)' "$out/gate-$1.md") cells slower bandwidth-bound" \
        "(failing), $(grep -c '| time (launch-bound)' "$out/gate-$1.md") launch-bound (reported)"
    grep -E '^# Upgrade gate|^- (Bandwidth|Launch|Compile)|^\| [a-z_]+-[a-z_]+-[a-z_]+ ' "$out/gate-$1.md" | head -40 \
        | tee -a "$summary"
}

run first
run second
gate same "$out/second/results.json"
gate launch "$out/second/results.json" "--max-launch-slowdown 0.05 --rerun 0"
# the planted slowdown: second's bandwidth-bound medians and IQRs scaled by 1.10 (its dispersions unchanged)
python3 bench/gpu/plant_slowdown.py "$out/second/results.json" "$out/planted.json" | tee -a "$summary"
gate planted "$out/planted.json" "--rerun 0"
