#!/usr/bin/env bash
# A suite as a user runs it (the harness's wheel installed, a folder of their own), cold, then every repro script it
# wrote run alone in an empty folder with the harness NOT importable (only the libraries the cases import), as a bug
# report's reader runs it. On the lent GPU machine, with .whl/ holding the harness's wheel (pip wheel --no-deps . -w
# .whl) and the suite's libraries' wheels:
#   bash bench/gpu/alone.sh OUT NAME MATRIX [CASE-FOLDER]
# writes OUT/NAME.log and OUT/NAME.tgz (the report folder and, per script, its output and a summary line: exit
# status, seconds, lines). LIMIT (300 s) bounds the run, JOBS (8) the scripts run at once; ALONE=0 runs the suite
# only (its wall, its own confirmation), not the scripts alone after it.
set -uo pipefail
out=$1
name=$2
matrix=$3
casedir=${4:-}
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libstdc++.so.6 PYTHONUNBUFFERED=1
libs=$(ls .whl/*.whl | grep -v triton_torch_matrix)
# shellcheck disable=SC2086  # one word a wheel
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site $libs || exit 3
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/hsite .whl/triton_torch_matrix*.whl || exit 3
work=/tmp/work-$name
rm -rf "$work" "/tmp/r-$name" "/tmp/c-$name" "/tmp/alone-$name"
mkdir -p "$work" "/tmp/alone-$name"
if [ -n "$casedir" ]; then cp -r "$casedir"/. "$work"/; else cp "$matrix" "$work"/; fi
start=$(date +%s)
(cd "$work" && PYTHONPATH=/tmp/hsite:/tmp/site timeout "${LIMIT:-300}" python3 -m harness run --matrix "$(basename "$matrix")" \
    --report-dir "/tmp/r-$name" --cache-dir "/tmp/c-$name" -q >"$out/$name.log" 2>&1)
echo "$name: harness exit $? after $(( $(date +%s) - start )) s"
tail -6 "$out/$name.log"
if [ "${ALONE:-1}" = 0 ]; then
    tar czf "$out/$name.tgz" -C /tmp "r-$name"
    exit 0
fi
cd "/tmp/alone-$name" || exit 3
for script in /tmp/r-"$name"/repros/*.py; do
    base=$(basename "$script" .py)
    (
        cp "$script" "$base.py"
        began=$(date +%s)
        env -u PYTHONPATH PYTHONPATH=/tmp/site timeout 200 python3 "$base.py" >"$base.out" 2>&1
        echo "rc=$? s=$(( $(date +%s) - began )) lines=$(wc -l <"$script") $base" >>summary.txt
    ) &
    while [ "$(jobs -rp | wc -l)" -ge "${JOBS:-8}" ]; do sleep 1; done
done
wait
sort -k4 summary.txt | cut -c1-150
tar czf "$out/$name.tgz" -C /tmp "r-$name" "alone-$name"
