#!/usr/bin/env bash
# Some paths of a matrix, cold, every failure confirmed, each cell's status and stage compared with a committed
# chart's (a check on the GPU of a change to those paths' cells before the full run):
#   bash bench/gpu/paths.sh OUT PATHS [MATRIX BASELINE]   e.g. bash bench/gpu/paths.sh $OUT compile,fullgraph,dynamic
set -uo pipefail
out=$1
paths=$2
matrix=${3:-matrix.toml}
baseline=${4:-reports/results.json}
mkdir -p "$out"
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libstdc++.so.6 PYTHONUNBUFFERED=1
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
rm -rf /tmp/paths /tmp/cache-paths
start=$(date +%s)
timeout 540 python3 -m harness run --matrix "$matrix" --paths "$paths" --report-dir /tmp/paths \
    --cache-dir /tmp/cache-paths -q >"$out/paths.log" 2>&1
echo "paths $paths: exit $? after $(( $(date +%s) - start )) s"
tail -8 "$out/paths.log"
python3 - "$baseline" /tmp/paths/results.json >"$out/paths-diff.txt" <<'PY'
import json, re, sys
old, new = ({c["id"]: c for c in json.load(open(f))["cells"]} for f in sys.argv[1:])
changed = [i for i in new if i in old and (old[i]["status"], old[i]["stage"]) != (new[i]["status"], new[i]["stage"])]
print(f"{len(new)} cells, {len(changed)} changed status or stage against {sys.argv[1]}")
for i in changed:
    print(f"{i}: {old[i]['status']}/{old[i]['stage']} -> {new[i]['status']}/{new[i]['stage']}: {(new[i]['error'] or '')[:300]!r}")
said = lambda c: re.sub(r"\b(harness|mylib)(\.|::)\w+", "OP", (c["error"] or "").partition("from user code:")[0])[:200]
worded = [i for i in new if i in old and i not in changed and said(old[i]) != said(new[i])]
print(f"{len(worded)} more changed their error's words (the op's name aside)")
for i in worded:
    print(f"{i}: {said(old[i])!r} -> {said(new[i])!r}")
PY
head -80 "$out/paths-diff.txt"
tar czf "$out/paths-report.tgz" -C /tmp paths
