"""Reproducing a failure outside the harness: one standalone script per distinct failure, holding the cell's program
(the harness's functions it ran, copied in by harness/bundle.py) and the case's module."""
