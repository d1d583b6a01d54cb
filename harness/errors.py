"""The one error type for unusable input: a message naming the file and the key, exit status 2; and the exit
status of a run that broke."""

from __future__ import annotations

import argparse
import atexit
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

EXIT_INCOMPLETE = 1  # a run, or a merge of shares, that did not record every selected cell
EXIT_BAD_INPUT = 2
EXIT_RUN_BROKE = 6  # the harness failed to measure: cell processes did not start, no cell built, a write failed
EXIT_SUSPECTS = 7  # a failure its repro script, run outside the harness, did not show: the harness may cause it
EXIT_FAILED_ON = 8  # run --fail-on: a cell ended with a status named there (wrong numbers in the user's own kernel)
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT) or SIGTERM, as a shell reports a process its signal ended
EXIT_BROKEN_PIPE = 141  # its reader stopped reading (``| head``), as a shell reports a process SIGPIPE ended


class InputError(Exception):
    """Unusable input (matrix.toml, a results or baseline file): one line naming the file and the key."""

    def __init__(self, file: Path | str, key: str, problem: str) -> None:
        super().__init__(f"{file}: {key}: {problem}")


class Arguments(argparse.ArgumentParser):
    """An argument parser whose usage errors are an ``InputError`` (one line naming the option, exit 2), not
    argparse's usage text and message."""

    def error(self, message: str) -> NoReturn:
        option, _, problem = message.removeprefix("argument ").partition(": ")
        if not message.startswith("argument ") or not problem:
            option, problem = "(arguments)", message
        raise InputError("command line", option, f"{problem} ({self.prog} --help)")


def unreadable(file: Path | str, error: OSError) -> InputError:
    """An input file that cannot be read (missing, a folder, not allowed): one line naming it."""
    if isinstance(error, FileNotFoundError):
        return InputError(file, "(file)", "no such file")
    if isinstance(error, IsADirectoryError):
        return InputError(file, "(file)", "a folder, not a file")
    return InputError(file, "(file)", f"cannot read it: {error.strerror or error}")


def input_text(file: Path) -> str:
    """The text of an input file; one that is not a regular file (a FIFO, whose open would wait for a writer
    forever; a device) or cannot be read is an ``InputError``. ``UnicodeDecodeError`` is the caller's."""
    import stat

    try:
        mode = file.stat().st_mode
        if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
            raise InputError(file, "(file)", f"{kind}, not a regular file: not opened (it could wait forever)")
        return file.read_text()
    except OSError as error:
        raise unreadable(file, error) from None


def keyword(expression: str | None) -> Callable[[str], bool]:
    """Whether a cell id matches a pytest ``-k`` expression (each name in it a substring of the id, whatever the
    case, as pytest matches)."""
    if not expression:
        return lambda _: True
    from _pytest.mark.expression import Expression

    try:
        compiled = Expression.compile(expression)
    except SyntaxError as error:  # pytest's ParseError before 8.4
        raise InputError("command line", "-k", str(error)) from None
    return lambda cell_id: compiled.evaluate(lambda name, **_: name.lower() in cell_id.lower())


def unknown_id(item: str, known: list[str], what: str = "id") -> str:
    """``unknown case 'sinn' (did you mean 'sin'?; known: add, sin)``: for an id that is not one of ``known``."""
    import difflib

    close = difflib.get_close_matches(item, known, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    listed = ", ".join(known[:30]) + (" …" if len(known) > 30 else "")
    return f"unknown {what} {item!r}{hint} (known: {listed})"


def foreign_threads() -> list[threading.Thread]:
    """The threads still running that are not daemons (Python waits for them at exit), but the main one."""
    main = threading.main_thread()
    return [t for t in threading.enumerate() if t is not main and not t.daemon and t.is_alive()]


def leave(code: int) -> NoReturn:
    """Exit with ``code``. Python waits at exit for every thread not a daemon: one a case module started (at
    import, or in the reference the harness checks) that never ends would hold the finished run forever. Such
    threads are named in one warning line and not waited for (atexit handlers run, output flushed, ``os._exit``).
    Once the atexit handlers have run, SIGINT and SIGTERM are ignored: Python gives a signal its default action
    again before it tears its modules down (a second and more with torch imported), and a signal then would end
    the finished command by that signal instead of with ``code``."""
    foreign = foreign_threads()
    if foreign:
        names = ", ".join(t.name for t in foreign)
        print(f"warning: {len(foreign)} thread(s) still running at exit ({names}): not waited for", file=sys.stderr)
    atexit._run_exitfuncs()  # a signal meanwhile is still only noted (harness/interrupt.py)
    if threading.current_thread() is threading.main_thread():
        for each in (signal.SIGINT, signal.SIGTERM):
            signal.signal(each, signal.SIG_IGN)
    if not foreign:
        sys.exit(code)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
