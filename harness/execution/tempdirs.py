"""The run's temp folders (``harness-zygote-*``: the zygote's socket and AOTInductor packages, ``harness-cells-*``:
a cell process's work folder, ``harness-timing-*``: the timing phase's barrier and lock, ``harness-scripts-*``: the
repro scripts' fork server's socket): each names the process that made it, and a run removes those whose maker has
died without removing them (a run killed by SIGKILL cannot)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

PREFIXES = ("harness-zygote-", "harness-cells-", "harness-timing-", "harness-scripts-")
OWNER = "owner"  # in each folder: "PID START", the process that made it and its start time (pids are reused)


def make(prefix: str) -> Path:
    """A new temp folder named ``prefix*``, owned by this process."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    (folder / OWNER).write_text(_identity(os.getpid()) or "")
    return folder


def remove_dead(root: Path | None = None) -> list[Path]:
    """Remove this user's harness folders in ``root`` (the temp folder) whose maker is no longer running."""
    removed = []
    for folder in sorted(Path(root or tempfile.gettempdir()).glob("harness-*")):
        try:
            if not folder.name.startswith(PREFIXES) or folder.stat().st_uid != os.getuid():
                continue
            owner = (folder / OWNER).read_text().strip()
        except OSError:  # not a folder, or one being made (no owner yet), or an older run's: left alone
            continue
        pid = owner.partition(" ")[0]
        if pid.isdigit() and _identity(int(pid)) != owner:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _identity(pid: int) -> str | None:
    """``"PID START"`` of a running process (START: its start time in clock ticks since boot), else None."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else f"{pid} {fields[19]}"
