"""The statistics a ``Timing`` (harness/spec.py) is made of: the median of the samples left after Tukey's IQR
outlier removal (as tritonbench), and their dispersion, IQR / median. Pure Python: the cell process computes a
timing with it, and the chart, the gate and ``which`` compare timings with it."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from harness.spec import Timing, TimingState

OUTLIER_FENCE = 1.5  # Tukey's fences: samples beyond 1.5 IQR outside the quartiles are left out


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """(Q1, median, Q3) of ``values`` (inclusive method: defined for one value too)."""
    if len(values) == 1:
        return values[0], values[0], values[0]
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, median, q3


def summarize(device_s: Sequence[float], host_s: Sequence[float], bytes_moved: int | None = None) -> Timing:
    """A timing from per-call device and host seconds: the device samples beyond Tukey's fences left out, the
    median and IQR of the rest, their dispersion; the host median."""
    if not device_s:
        return Timing.not_timed("no samples")
    q1, _, q3 = quartiles(device_s)
    low, high = q1 - OUTLIER_FENCE * (q3 - q1), q3 + OUTLIER_FENCE * (q3 - q1)
    kept = [value for value in device_s if low <= value <= high]
    k1, median, k3 = quartiles(kept)
    return Timing(
        TimingState.TIMED,
        median_us=round(median * 1e6, 3),
        iqr_us=round((k3 - k1) * 1e6, 3),
        dispersion=round((k3 - k1) / median, 4) if median > 0 else 0.0,
        samples=len(kept),
        outliers=len(device_s) - len(kept),
        host_us=round(statistics.median(host_s) * 1e6, 3) if host_s else None,
        bytes_moved=bytes_moved,
    )


def slower(current: Timing, best: Timing, threshold: float = 0.0) -> float | None:
    """How much slower ``current`` is than ``best`` (0.10: 10%), when that is past ``threshold`` and past both
    timings' dispersions together (a difference inside the noise is none); else None."""
    if not (current.timed and best.timed) or not best.median_us:
        return None
    assert current.median_us is not None
    change = current.median_us / best.median_us - 1
    noise = (current.dispersion or 0.0) + (best.dispersion or 0.0)
    return change if change > threshold and change > noise else None
