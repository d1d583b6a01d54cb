#!/usr/bin/env bash
# The matrix on a GPU image whose Python already holds torch and triton, with no package index: nox comes from
# wheels carried in .whl/ (docs/gating.md, "GPU runners"). Extra arguments go to pytest (e.g. --shard 1/2, -n 8).
# The run confirms every failure itself (each distinct failure's repro script run in a fresh Python: docs/cells.md,
# "Reproducers"); a failure its script does not show is a harness suspect and the run exits 7.
set -uo pipefail
cd "$(dirname "$0")/.."
if ! python3 -c "import nox" 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
# This image's C++ runtime makes AOTInductor packages segfault at load; the system one does not.
export LD_PRELOAD=${LD_PRELOAD:-/usr/lib/x86_64-linux-gnu/libstdc++.so.6}
nvidia-smi -L
timeout "${MATRIX_TIMEOUT:-540}" python3 -m nox --no-venv -s matrix -- "$@" 2>&1 | grep -v Warning | tail -40
exit "${PIPESTATUS[0]}"
