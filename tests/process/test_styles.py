"""Styles as two axes: every decorator stack inside every wrapper, each built around the case's one kernel."""


from tests.conftest import run_interpreted
from tests.fast.test_styles import INTERPRETED


def test_autotuner_over_heuristics_runs_the_config_heuristic_on_each_config():
    """Triton's interpreter on CPU: the autotuner hands each config's BLOCK_SIZE to the heuristic under it, and
    the kernel computes the right numbers with the EVEN it gets."""
    done = run_interpreted(INTERPRETED)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert seen == {
        "add": "[(256, True), (1024, False)]",  # 1280: a multiple of 256, not of 1024
        "sin": "[(256, True), (512, False)]",
        "gelu_mul": "[(256, True), (1024, False)]",  # 32000
        "layernorm": "[(256, True), (1024, False)]",  # 768 columns, loop unmasked or masked
    }
