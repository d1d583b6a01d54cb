"""SIGINT and SIGTERM as Ctrl-C, for every command of the command line and for a run of the matrix under plain
pytest: the first signal raises ``KeyboardInterrupt`` in the main thread, so the command cleans up as Ctrl-C makes
it (its child processes stopped, every finished record written), and it exits 130. A SIGTERM after that (a
supervisor's next try) is only noted: it does not cut the clean-up short (SIGKILL does). Once the command has
returned, either signal is only noted. It imports only the standard library and harness/errors.py: the command line
sets these before it imports anything else."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from harness.errors import EXIT_INTERRUPTED

SIGNALS = (signal.SIGINT, signal.SIGTERM)
REDELIVER_S = 0.05  # a lost interrupt is delivered again this long after Python dropped it
_received: list[int] | None = None  # the signals that interrupted the command ``run`` runs (None: none runs)


def install() -> None:
    """SIGINT and SIGTERM interrupt this process from now on (``interrupt``), none of them lost (``keep_lost``)."""
    for each in SIGNALS:
        signal.signal(each, interrupt)
    keep_lost()


def keep_lost() -> None:
    """A ``KeyboardInterrupt`` raised where Python cannot raise it is lost: in a weakref callback (importlib runs
    one for each module lock while modules import) Python prints "Exception ignored in ..." and goes on, as if no
    signal had come. From now on such a one is not printed, and SIGINT is delivered to this process again a moment
    later, where it lands; any other unraisable exception goes to the hook found."""
    found = sys.unraisablehook
    if getattr(found, "keeps_lost_interrupts", False):
        return

    def hook(unraisable: Any) -> None:
        if not isinstance(unraisable.exc_value, KeyboardInterrupt):
            found(unraisable)
            return
        again = threading.Timer(REDELIVER_S, os.kill, (os.getpid(), signal.SIGINT))
        again.daemon = True
        again.start()

    hook.keeps_lost_interrupts = True  # type: ignore[attr-defined]
    sys.unraisablehook = hook


def interrupt(signum: int, frame: Any) -> None:
    """Raise ``KeyboardInterrupt`` where the main thread is; a SIGTERM after this one is only noted."""
    if _received is not None:
        _received.append(signum)
    signal.signal(signal.SIGTERM, noted)
    raise KeyboardInterrupt


def noted(signum: int, frame: Any) -> None:
    """A signal while the process stops already: said, and nothing else."""
    name = signal.Signals(signum).name
    print(f"harness: {name}: stopping already, cleaning up (SIGKILL ends it now)", file=sys.stderr)


def check() -> None:
    """Raise ``KeyboardInterrupt`` again if a signal has interrupted the command ``run`` runs: the first can be
    lost where C code catches every exception (torch's import of numpy, which it then goes on without)."""
    if _received:
        raise KeyboardInterrupt


def run(command: Callable[[], int]) -> int:
    """``command``'s exit status, SIGINT and SIGTERM interrupting it: 130 once either has, whatever it returned
    (pytest's own status for a session interrupted before it started is 2) or raised (Python 3.11 raises a
    ``KeyboardInterrupt`` met while a class is made as a ``RuntimeError``). Either signal after it has returned is
    only noted."""
    global _received
    _received = []
    install()
    try:
        code = command()
    except Exception:
        if not _received:
            raise
        code = EXIT_INTERRUPTED
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    finally:
        for each in SIGNALS:
            signal.signal(each, noted)
        interrupted, _received = bool(_received), None
    _forget_interrupts()
    return EXIT_INTERRUPTED if interrupted else code


def _forget_interrupts() -> None:
    """CPython remembers a ``KeyboardInterrupt`` that left code it ran from a string (``exec``, ``eval``:
    dataclasses and namedtuple make their methods so), caught since or not, and ``python -m`` then ends by SIGINT
    instead of with its exit status. Running a string clears that memory."""
    exec("")


class TimeUp(BaseException):
    """``time_limit``'s seconds are up (a BaseException: a user's own ``except Exception`` does not swallow it);
    its argument is the limit."""


@contextmanager
def time_limit(seconds: float, notice_after: float, notice: Callable[[], str]) -> Iterator[None]:
    """In the main thread (where SIGALRM is delivered; elsewhere no limit): ``notice()``'s line on stderr after
    ``notice_after`` seconds (none where the limit comes first), then ``TimeUp`` at ``seconds``: a user's code that
    hangs (a case module's import, its check) is one line, not a run that waits forever."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noticed = notice_after >= seconds

    def time_up(signum: int, frame: Any) -> None:
        nonlocal noticed
        if noticed:
            raise TimeUp(seconds)
        noticed = True
        print(notice(), file=sys.stderr, flush=True)
        signal.setitimer(signal.ITIMER_REAL, seconds - notice_after)

    previous = signal.signal(signal.SIGALRM, time_up)
    signal.setitimer(signal.ITIMER_REAL, seconds if noticed else notice_after)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
