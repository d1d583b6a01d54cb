#!/usr/bin/env bash
# Issue 60, item 5, on the lent device machine (torch and triton preinstalled), right after the committed chart's run:
#   HARNESS_COMMIT=<commit> [BASELINE=results.json] bash bench/gpu/second.sh OUT
# A second cold run of the full default matrix at the committed chart's commit (charts.sh full: its own cache folder,
# every failure confirmed, the gate of statuses and stages against reports/results.json), then, against BASELINE
# (reports/results.json unless given: a first run on the same warm machine where the chart's card is not this one):
#   OUT/gate-same.md     gate --speed of it against BASELINE: a second run of the same commit passes
#   OUT/gate-planted.md  gate --speed of OUT/planted.json, this run with its bandwidth-bound medians (and IQRs) made 10%
#                        slower, against BASELINE, not re-timed (--rerun 0): it fails
#   OUT/summary.txt      each step's exit status, and the cells each gate named (OUT/gates.log: what the gates printed)
set -uo pipefail
out=${1:?usage: bash bench/gpu/second.sh OUT}
mkdir -p "$out"
summary="$out/summary.txt"
baseline=${BASELINE:-reports/results.json}
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libstdc++.so.6 PYTHONUNBUFFERED=1
bash bench/gpu/charts.sh full "$out" | tee "$summary"
current=/tmp/full/results.json
python3 bench/gpu/plant_slowdown.py "$current" "$out/planted.json" | tee -a "$summary"
for name in same planted; do
    given=$current rerun=""
    [ $name = planted ] && given="$out/planted.json" rerun="--rerun 0"
    # shellcheck disable=SC2086  # rerun is empty or one option
    timeout 150 python3 -m harness gate --speed --baseline "$baseline" --current "$given" $rerun \
        --matrix matrix.toml --out "$out/gate-$name.md" >>"$out/gates.log" 2>&1
    echo "gate --speed $name: exit $?; $(grep -c '| time (bandwidth-bound)' "$out/gate-$name.md") cells slower bandwidth-bound" | tee -a "$summary"
done
rm -f "$out/planted.json"
