"""The command line's own work beside argument parsing (harness/__main__.py): the ``run`` command, which hands its
arguments to pytest, the gate's re-runs of regressed cells on this machine, and the ``repro`` command."""
