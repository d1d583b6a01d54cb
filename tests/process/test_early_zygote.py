"""Issue 60, the run's zygote started before the controller imports the case modules: its log is kept in the
report folder, a case module that changes the environment at import gets a zygote started after it did, and bad
input found while the case modules import leaves no zygote behind."""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from harness.execution import tempdirs
from tests.conftest import REPO, run_harness


def test_a_case_module_that_sets_a_variable_gets_a_zygote_that_has_it(write_matrix, tmp_path):
    matrix = write_matrix(["tests.fixtures.sets_environment"], ["triton_op"], {"cpu_fallback": ("cpu", 120)})
    out = tmp_path / "out"
    done = run_harness("run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0", "-q")
    assert done.returncode == 0, done.stderr[-2000:]
    (record,) = json.loads((out / "results.json").read_text())["cells"]
    assert record["status"] == "pass", record.get("error")
    log = (out / "logs" / "zygote.log").read_text()
    assert "no longer fits (environment changed: HARNESS_FIXTURE_SET_AT_IMPORT)" in log and " ready: " in log


def test_bad_input_found_after_the_zygote_started_leaves_none(write_matrix, tmp_path):
    matrix = write_matrix(["tests.fixtures.no_such_module"], ["control"], {"cpu_fallback": ("cpu", 60)})
    out = tmp_path / "out"
    run = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "--matrix", str(matrix), "--report-dir", str(out), "-n", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, stderr = run.communicate(timeout=300)
    assert run.returncode == 2 and stderr.strip().splitlines()[-1].startswith("error: ")
    owned = [folder for folder in Path(tempfile.gettempdir()).glob("harness-zygote-*") if owner(folder) == run.pid]
    assert owned == [] and not out.exists()


def owner(folder: Path) -> int | None:
    try:
        return int((folder / tempdirs.OWNER).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
