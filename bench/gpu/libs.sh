#!/usr/bin/env bash
# The first GPU runs of the flash-linear-attention and FlagGems suites (matrix-fla.toml, matrix-flaggems.toml), as run
# on the lent device machine (torch and triton preinstalled; the libraries' pure-Python wheels carried in .whl/:
# fla-core, flash-linear-attention, flag_gems, and their pure-Python dependencies einops and SQLAlchemy):
#   bash bench/gpu/libs.sh OUT [SUITE...]   the suites (default: fla flaggems), each cold (a fresh cache folder), every
#                                 failure confirmed (its repro script run in a fresh Python), into OUT/SUITE; no gate
# Each suite has 280 s (then SIGTERM: the harness writes the chart of the cells it finished; --resume runs the rest):
# on one H100 each suite's cells took 150-170 s and their confirmations did not finish in 190 s, so run one suite a
# device call. The callers copy OUT/SUITE into reports/ unchanged.
set -uo pipefail
out=$1
shift
suites=${*:-fla flaggems}
mkdir -p "$out"
# AOTInductor packages segfault in that image without the system C++ runtime first (README, "GPU runners")
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libstdc++.so.6 PYTHONUNBUFFERED=1
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
python3 -c "import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name())"
# what each suite imports: a missing one makes every as_shipped cell of its suite an error
python3 -c "import fla, einops; print('fla', fla.__version__)" 2>&1 | tail -1
python3 -c "import flag_gems; print('flag_gems', flag_gems.__version__, flag_gems.vendor_name)" 2>&1 | tail -1
for suite in $suites; do
    start=$(date +%s)
    timeout -k 15 280 python3 -m harness run --matrix matrix-$suite.toml --report-dir "$out/$suite" \
        --cache-dir "/tmp/cache-$suite" -q >"$out/$suite.log" 2>&1
    echo "$suite: exit $? after $(( $(date +%s) - start )) s"
    tail -8 "$out/$suite.log"
done
