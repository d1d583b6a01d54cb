"""A run's report folder: one run at a time writes there (an exclusive lock on its ``.lock`` file, held for the
run), a folder that cannot be written is refused before any cell runs, and a write that fails mid-run stops the
run at once with one line, the records it had saved to a file of its own in the temp folder. ``ReportDir``, made
on the controller, holds the lock and that line under its own ``StashKey``."""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from harness.errors import InputError
from harness.records.log import LOG_NAME

LOCK_NAME = ".lock"


class ReportDir:
    """The report folder of one session: its lock (``lock``, released by ``unlock``) and the line of its first
    failed write (``failed``)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.fd: int | None = None  # the lock file's descriptor, while held
        self.failed: str | None = None

    def lock(self) -> None:
        """Take the folder's lock (making the folder). ``InputError`` when another run holds it, or the folder
        cannot be written."""
        folder = self.folder
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=folder):  # a folder we may open a lock file in but not write results in
                pass
            fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            raise InputError(folder, "--report-dir", _cannot_write(folder, error)) from None
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
        self.fd = fd

    def unlock(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the only descriptor of the open file releases the flock
            self.fd = None

    def write_failed(self, file: Path, error: OSError, data: dict[str, Any]) -> str:
        """A write of ``file`` failed: save ``data`` (every record so far, a results file's JSON) in the temp
        folder and return the one line that stops the run (kept as ``failed``, the first one)."""
        count = len(data.get("cells", []))
        line = f"{file}: (write): {error.strerror or error}: the run stops; its {count} record(s) "
        try:
            line += f"are in {rescue(data)}"
        except OSError as also:  # the temp folder is full too: say so, in the same one line
            kept = self.folder / LOG_NAME
            line += f"could not be saved in {tempfile.gettempdir()} either ({also.strerror or also}); {kept} keeps "
            line += "those written before the failure"
        self.failed = self.failed or line
        return line


def rescue(data: dict[str, Any]) -> str:
    """``data`` (a results file's JSON) written to a new file of the temp folder, its name returned; a file half
    written (a full disk) is removed before the ``OSError`` goes on."""
    fd, name = tempfile.mkstemp(prefix="harness-results-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as out:
            json.dump(data, out, indent=1, default=repr)
    except OSError:
        os.unlink(name)
        raise
    return name


def _cannot_write(folder: Path, error: OSError) -> str:
    """Why ``folder`` cannot be a report folder: it, or a folder above it, is a file; else the system's words."""
    file = next((path for path in (folder, *folder.parents) if path.exists() and not path.is_dir()), None)
    if file == folder:
        return "is a file, not a folder: give a folder for the run's reports"
    if file is not None:
        return f"cannot write there: {file} is a file, not a folder"
    return f"cannot write there: {error.strerror or error}"


report_dir_key = pytest.StashKey[ReportDir]()


def report_dir(config: pytest.Config) -> ReportDir:
    """The session's ``ReportDir`` (made on first use, for the options' --report-dir)."""
    if report_dir_key not in config.stash:
        from harness.plugin.options import options

        config.stash[report_dir_key] = ReportDir(options(config).report_dir)
    return config.stash[report_dir_key]
