"""The short repro script of a cell, written for its case: the case's own code, the style, the path's few calls and
checks in public API. The cell runs the program it writes (harness/cell/scripted.py); its record's repro is the same
text (harness/repro/script.py)."""
