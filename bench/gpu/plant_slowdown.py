"""A results file with a planted slowdown, for the speed gate to catch: each cell timed at its case's bandwidth size has
its median and IQR made 10% slower (its dispersion unchanged). No harness import.

Usage: python3 bench/gpu/plant_slowdown.py RESULTS.json PLANTED.json"""

import json
import sys

data = json.load(open(sys.argv[1]))
planted = 0
for cell in data["cells"]:
    at = (cell.get("timing") or {}).get("bandwidth") or {}
    if at.get("state") == "timed":
        at["median_us"] = round(at["median_us"] * 1.10, 3)
        at["iqr_us"] = round((at.get("iqr_us") or 0) * 1.10, 3)
        planted += 1
json.dump(data, open(sys.argv[2], "w"))
print(f"planted: {planted} cells timed at the bandwidth size made 10% slower")
