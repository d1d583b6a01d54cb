"""Running as an installed tool, in process: which matrix file a run uses, how a bare case name resolves, the
standalone server's imports, and the summary at the end of a run (tests/slow/test_wheel.py runs the built wheel)."""

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
