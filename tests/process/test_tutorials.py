"""The tutorials run as shown: their titled blocks written into files of an empty folder, their commands and untitled
Python blocks run there in order, and every output block shown after one printed by it (its lines in order, the
folder shown as ``~/work``). A page edited without its output, or a harness that now prints otherwise, fails here."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.docblocks import TUTORIALS, Block, blocks

SHOWN_FOLDER = "~/work"


def run_block(block: Block, folder: Path) -> str:
    """Run a bash block's commands (or an untitled python block) in ``folder``; what they printed, the folder as
    ``SHOWN_FOLDER``. A command that fails fails the test."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    runs = [["bash", "-c", command] for command in block.commands()] if block.lang == "bash" else [[sys.executable]]
    printed = []
    for argv in runs:
        stdin = block.text if block.lang == "python" else None
        done = subprocess.run(argv, cwd=folder, env=env, input=stdin, capture_output=True, text=True, timeout=300)
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{block.where}: {argv[-1][:80]!r} exited {done.returncode}:\n{output[-3000:]}"
        printed.append(output.replace(str(folder), SHOWN_FOLDER))
    return "".join(printed)


def shown_in_order(shown: str, printed: str) -> list[str]:
    """The lines of ``shown`` not found in ``printed`` in that order (empty: every one was)."""
    lines = iter(line.rstrip() for line in printed.splitlines())
    return [line for line in shown.splitlines() if not any(line.rstrip() == other for other in lines)]


@pytest.mark.parametrize("page", TUTORIALS)
def test_a_tutorial_runs_as_shown(page: str, tmp_path: Path) -> None:
    page_blocks = blocks(page)
    for block in page_blocks:
        if block.title:
            with (tmp_path / block.title).open("a") as file:
                file.write(("\n\n\n" if file.tell() else "") + block.text + "\n")
    printed: str | None = None
    ran = 0
    for block in page_blocks:  # an output block after no command (the install shown) is not compared
        if block.lang == "text" and printed is not None:
            missing = shown_in_order(block.text, printed)
            assert not missing, f"{page}: shown but not printed (in this order): {missing}\nprinted:\n{printed[-3000:]}"
            printed = None
        elif block.lang == "bash" or (block.lang == "python" and not block.title):
            printed = run_block(block, tmp_path)
            ran += 1
    assert ran >= 2, f"{page}: no commands found to run"


def test_a_shown_line_the_run_did_not_print_is_found_missing() -> None:
    assert shown_in_order("b\nc", "a\nb\nc\n") == []
    assert shown_in_order("c\nb", "a\nb\nc\n") == ["b"]
    assert shown_in_order("[harness] 26 cells: 26 pass", "[harness] 26 cells: 24 pass, 2 error") != []
