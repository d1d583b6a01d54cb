"""Running as an installed tool, in process: which matrix file a run uses, how a bare case name resolves, the
standalone server's imports, and the summary at the end of a run (tests/slow/test_wheel.py runs the built wheel)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def test_the_standalone_server_imports_torch_only():
    """Importing the server's module loads no other harness module, no case and no Triton (torch itself is
    imported by ``serve``); its source is what a ``python -c`` start and a repro script run."""
    code = (
        "import sys, harness.cell.standalone_server\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('harness', 'cases', 'triton', 'torch')))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['harness', 'harness.cell', 'harness.cell.standalone_server']"
    from harness.cell import standalone, standalone_server

    assert standalone.SERVER_SOURCE == Path(standalone_server.__file__).read_text()


def test_an_editable_install_runs_from_another_folder(tmp_path: Path):
    """Issue 41 item 6: with ``pip install -e .`` (this checkout's, as nox installs it), a run from a user's folder
    collects the packaged matrix, which resolves into this checkout; pytest then read the checkout's conftest.py
    late and its ``pytest_plugins`` failed every run ("Defining 'pytest_plugins' in a non-top-level conftest")."""
    shutil.copy(REPO / "examples" / "rmsnorm.py", tmp_path / "mykernels.py")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    selection = ["--cases", "mykernels", "--paths", "eager", "--styles", "raw_jit,control", "--interpret"]
    commands = {
        "run": [sys.executable, "-m", "harness", "run", *selection, "-n", "0", "--report-dir", "out"],
        "pytest": [sys.executable, "-m", "pytest", *selection, "--report-dir=out-pytest", "-p", "no:cacheprovider"],
    }
    for name, command in commands.items():
        done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
        output = done.stdout[-3000:] + done.stderr[-3000:]
        assert f"matrix: {REPO / 'cases' / 'matrix.toml'} (the packaged default" in done.stderr, (name, output)
        assert done.returncode == 0, (name, output)
        assert "2 cells: 2 pass" in done.stdout, (name, output)
    assert sorted(path.name for path in tmp_path.iterdir() if not path.name.startswith(".")) == [
        "mykernels.py", "out", "out-pytest",
    ]  # fmt: skip
