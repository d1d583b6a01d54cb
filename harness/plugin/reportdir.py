"""A run's report folder: one run at a time writes there (an exclusive lock on its ``.lock`` file, held for the
run), a folder that cannot be written is refused before any cell runs, and a write that fails mid-run stops the
run at once with one line, the records it had saved to a file of its own in the temp folder."""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from harness.errors import InputError

LOCK_NAME = ".lock"
_held: dict[Path, int] = {}  # folder (resolved) -> the descriptor of its lock file, while this process holds it
_failures: list[str] = []  # the line of this process's failed write, once one failed


def lock(folder: Path) -> bool:
    """Take ``folder``'s lock (making the folder); False when this process holds it already. ``InputError``
    when another run holds it, or the folder cannot be written."""
    folder = folder.resolve()
    if folder in _held:
        return False
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):  # a folder we may open a lock file in but not write results in
            pass
        fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as error:
        raise InputError(folder, "--report-dir", f"cannot write there: {error.strerror or error}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        owner = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise InputError(
            folder, "--report-dir", f"another run (pid {owner}) writes there: wait for it, or give another folder"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _held[folder] = fd
    return True


def unlock(folder: Path) -> None:
    """Release ``folder``'s lock, if this process holds it."""
    fd = _held.pop(folder.resolve(), None)
    if fd is not None:
        os.close(fd)  # closing the only descriptor of the open file releases the flock


def write_failed(file: Path, error: OSError, data: dict[str, Any]) -> str:
    """A write of ``file`` failed: save ``data`` (every record so far, a results file's JSON) in the temp folder
    and return the one line that stops the run (``failure`` gives it back later)."""
    fd, rescue = tempfile.mkstemp(prefix="harness-results-", suffix=".json")
    with os.fdopen(fd, "w") as out:
        json.dump(data, out, indent=1, default=repr)
    line = (
        f"{file}: (write): {error.strerror or error}: the run stops; its {len(data.get('cells', []))} "
        f"record(s) are in {rescue}"
    )
    _failures.append(line)
    return line


def failed_line() -> str | None:
    """The line of this process's first failed write, if one failed."""
    return _failures[0] if _failures else None


def failure() -> str | None:
    """The line of this process's first failed write, if one failed (once: a later run starts clean)."""
    line = failed_line()
    _failures.clear()
    return line
