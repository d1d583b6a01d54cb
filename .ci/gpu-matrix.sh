#!/usr/bin/env bash
# The matrix on a GPU image whose Python already holds torch and triton, with no package index: nox comes from
# wheels carried in .whl/ (README, "GPU runners"). Extra arguments go to pytest (e.g. --shard 1/2, -n 8).
# Then: every repro of the run, at most REPRO_CHECKS of them, each run once, its exit status listed in
# reports/repros/checked.txt (1 = the failure reproduced on its own).
set -uo pipefail
cd "$(dirname "$0")/.."
if ! python3 -c "import nox" 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
# This image's C++ runtime makes AOTInductor packages segfault at load; the system one does not.
export LD_PRELOAD=${LD_PRELOAD:-/usr/lib/x86_64-linux-gnu/libstdc++.so.6}
export TORCHINDUCTOR_COMPILE_THREADS=${TORCHINDUCTOR_COMPILE_THREADS:-1}
nvidia-smi -L
timeout "${MATRIX_TIMEOUT:-540}" python3 -m nox --no-venv -s matrix -- "$@" 2>&1 | grep -v Warning | tail -40
checked=reports/repros/checked.txt
: > "$checked"
for script in $(ls reports/repros/*.py 2>/dev/null | head -n "${REPRO_CHECKS:-0}"); do
    timeout 60 python3 "$script" > /dev/null 2> /tmp/repro.err
    echo "$? $(basename "$script") $(grep -v '^\s*$' /tmp/repro.err | tail -1 | cut -c1-160)" >> "$checked"
done
