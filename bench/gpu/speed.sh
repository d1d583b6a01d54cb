#!/usr/bin/env bash
# Issue 42 on the lent GPU machine (torch and triton preinstalled, no network): the full default matrix with its
# timing phase, what the phase costs, and the gate's speed check. Each step fits one 10-minute device command:
#   bash bench/gpu/speed.sh timed OUT     the full matrix, cold, timed             -> OUT/timed/ (chart with speed)
#   bash bench/gpu/speed.sh untimed OUT   the same with --no-timing, cold          -> OUT/untimed/ (the phase's cost)
#   bash bench/gpu/speed.sh again OUT     the full matrix again, cold, timed       -> OUT/again/ (same-commit noise)
#   bash bench/gpu/speed.sh gate OUT      gate a planted 10% slowdown and 'again' against 'timed' (re-timing the cells
#                                         'again' has slower, if any); print the phase's cost, states, dispersions
#   bash bench/gpu/speed.sh all OUT       every step above, in turn (about 20 minutes on one H200)
# Repro scripts are not run (--no-confirm): they would compete with the cells for the GPU and the CPU alike in
# both the timed and the untimed run, and confirmation is not what this measures.
set -uo pipefail
step=$1
out=$2
mkdir -p "$out"
# AOTInductor packages segfault in that image without the system C++ runtime first (README, "GPU runners")
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libstdc++.so.6 PYTHONUNBUFFERED=1
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi

run() {  # NAME [OPTIONS...]: the full default matrix, cold (a fresh cache folder), into OUT/NAME
    local name=$1
    shift
    rm -rf "/tmp/cache-speed-$name"
    local start
    start=$(date +%s)
    timeout 590 python3 -m harness run --matrix matrix.toml --report-dir "$out/$name" \
        --cache-dir "/tmp/cache-speed-$name" --no-confirm -q "$@" >"$out/$name.log" 2>&1
    echo "$name: exit $? after $(($(date +%s) - start)) s"
    tail -4 "$out/$name.log"
}

gate() {
    # a planted 10% slowdown: every timed cell of 'timed' 10% slower (median and IQR), written as planted.json
    python3 bench/gpu/plant_slowdown.py "$out/timed/results.json" "$out/planted.json" cell
    python3 -m harness gate --speed --baseline "$out/timed/results.json" --current "$out/planted.json" --rerun 0 \
        --out "$out/gate-planted.md" >/dev/null 2>&1
    echo "gate, planted 10% slowdown: exit $? (1 expected); $(grep -c '| time ' "$out/gate-planted.md") cells named slower"
    python3 -m harness gate --speed --baseline "$out/timed/results.json" --current "$out/again/results.json" --rerun 0 \
        --out "$out/gate-again.md" >/dev/null 2>&1
    code=$?
    echo "gate, same commit again, no re-timing: exit $code (0 expected)"
    head -6 "$out/gate-again.md"
    grep '^| ' "$out/gate-again.md" | head -20
    if [ $code != 0 ]; then  # the cells found slower timed again in a run of their own: noise is excused
        timeout 400 python3 -m harness gate --speed --baseline "$out/timed/results.json" --current "$out/again/results.json" \
            --matrix matrix.toml --rerun 1 --out "$out/gate-again-retimed.md" >/dev/null 2>&1
        echo "gate, same commit again, slower cells re-timed: exit $? (0 expected)"
        grep -A3 '^## Slower' "$out/gate-again-retimed.md" | head -20
    fi
    python3 - "$out" <<'EOF'
import json, statistics, sys
from collections import Counter
out = sys.argv[1]
def load(name):
    try:
        return json.load(open(f"{out}/{name}/results.json"))
    except OSError:
        return None
timed, untimed, again = load("timed"), load("untimed"), load("again")
env = timed["environment"]
print(f"timed run: wall {env.get('wall_seconds')} s, timing phase {env.get('timing_seconds')} s, "
      f"copy bandwidth {env.get('copy_gbps')} GB/s")
if untimed:
    wall = untimed["environment"].get("wall_seconds")
    print(f"untimed run: wall {wall} s -> the timing phase adds {100 * (env['wall_seconds'] / wall - 1):.1f}%")
states = Counter((c.get("timing") or {}).get("state", "none") for c in timed["cells"] if c["status"] == "pass")
print("passing cells by timing state:", dict(states))
reasons = Counter((c.get("timing") or {}).get("reason") for c in timed["cells"] if (c.get("timing") or {}).get("reason"))
for reason, n in reasons.most_common(8):
    print(f"  not timed x{n}: {reason}")
dispersions = [c["timing"]["dispersion"] for c in timed["cells"] if (c.get("timing") or {}).get("state") == "timed"]
if dispersions:
    q = statistics.quantiles(dispersions, n=10)
    print(f"dispersion (IQR/median) over {len(dispersions)} cells: median {statistics.median(dispersions):.3f}, "
          f"p90 {q[-1]:.3f}, max {max(dispersions):.3f}")
if again:
    now = {c["id"]: c for c in again["cells"]}
    ratios = []
    for cell in timed["cells"]:
        a, b = cell.get("timing") or {}, (now.get(cell["id"], {}).get("timing") or {})
        if a.get("state") == b.get("state") == "timed":
            ratios.append(b["median_us"] / a["median_us"])
    if ratios:
        q = statistics.quantiles(ratios, n=20)
        print(f"same commit, run 2 / run 1 medians over {len(ratios)} cells: p5 {q[0]:.3f}, median "
              f"{statistics.median(ratios):.3f}, p95 {q[-1]:.3f}, max {max(ratios):.3f}")
EOF
}

python3 -c "import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name())"
case $step in
timed) run timed ;;
untimed) run untimed --no-timing ;;
again) run again ;;
gate) gate ;;
all)
    run timed
    run untimed --no-timing
    run again
    gate
    ;;
*)
    echo "usage: bash bench/gpu/speed.sh timed|untimed|again|gate|all OUT" >&2
    exit 2
    ;;
esac
