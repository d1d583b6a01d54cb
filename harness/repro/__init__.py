"""Reproducing a failure outside the harness: one standalone script per distinct failure and style and path, short
enough for a bug report (the case's own code, the style and path written out: harness/repro/script.py), or for a
case module that cannot be cut down, and for a timed script, the long one holding the cell's program (the harness's
functions it ran, copied in by harness/bundle.py)."""
