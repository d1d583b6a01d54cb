"""Issue 60, the run's bytecode cache compiled by a program of its own (harness/execution/bytecode.py): it writes
what an import reads, and stopping it leaves none of its processes running."""

import importlib.util
import os
import subprocess
import sys
import time

from harness.execution import bytecode


def compiled(source: str, prefix: str) -> str:
    """Where an interpreter with ``prefix`` as its bytecode cache reads ``source``'s bytecode."""
    code = f"import sys, importlib.util; print(importlib.util.cache_from_source({source!r}))"
    env = {**os.environ, "PYTHONPYCACHEPREFIX": prefix}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout.strip()


def test_the_program_compiles_what_an_import_then_reads(tmp_path):
    prefix = str(tmp_path / "pycache")
    process = bytecode.start(prefix, bytecode.MIN_CORES, packages=["jinja2"])
    bytecode.finish(process, 120)
    assert process.returncode == 0
    for module in ("jinja2", "json"):
        assert os.path.getsize(compiled(importlib.util.find_spec(module).origin, prefix)) > 0


def test_stopping_it_ends_its_pool(tmp_path):
    process = bytecode.start(str(tmp_path / "pycache"), bytecode.MIN_CORES)
    time.sleep(1.5)  # its pool started
    bytecode.stop(process)
    assert process.returncode == -9
    time.sleep(0.5)
    states = subprocess.run(["ps", "-o", "stat=", "-s", str(process.pid)], capture_output=True, text=True).stdout
    assert [state for state in states.split() if not state.startswith("Z")] == []  # dead (a zombie if unreaped)
