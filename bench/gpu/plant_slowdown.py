"""A results file with a planted slowdown, for the speed gate to catch: each timed cell has its median and IQR made
10% slower (its dispersion unchanged), at its case's bandwidth size (``bandwidth``, the default) or at its cell's own
size (``cell``). No harness import.

Usage: python3 bench/gpu/plant_slowdown.py RESULTS.json PLANTED.json [bandwidth|cell]"""

import json
import sys

at_size = (sys.argv[3] if len(sys.argv) > 3 else "bandwidth") == "bandwidth"
data = json.load(open(sys.argv[1]))
planted = 0
for cell in data["cells"]:
    timing = cell.get("timing") or {}
    at = (timing.get("bandwidth") or {}) if at_size else timing
    if at.get("state") == "timed":
        at["median_us"] = round(at["median_us"] * 1.10, 3)
        at["iqr_us"] = round((at.get("iqr_us") or 0) * 1.10, 3)
        planted += 1
json.dump(data, open(sys.argv[2], "w"))
where = "at the bandwidth size" if at_size else "at their own size"
print(f"planted: {planted} cells timed {where} made 10% slower")
