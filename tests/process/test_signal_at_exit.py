"""A signal while Python tears a finished command down (its modules freed, a second and more with torch imported)
ended the command by that signal, not with its status; docs/exit-statuses.md says it is only noted."""

import subprocess
import sys
import textwrap


def test_a_signal_while_python_tears_a_finished_command_down_leaves_its_status():
    """Python gives SIGINT its default action back before it frees its modules (a second and more with torch):
    a Ctrl-C then ended the finished command by SIGINT, not with its status (docs/exit-statuses.md: only noted)."""
    program = textwrap.dedent(
        """
        import os, signal
        from harness import interrupt
        from harness.errors import leave

        class KillsAtTeardown:
            def __del__(self):
                os.kill(os.getpid(), signal.SIGINT)

        KEPT = KillsAtTeardown()  # freed with this module, after the signal handlers are gone
        leave(interrupt.run(lambda: 0))
        """
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (done.returncode, done.stderr)
