"""Signals, named once: the name of a number, the signal a negative exit code stands for, which ones kill a rank.

Launchers, shells and the kernel report a child's death by number (``exitcode: -9``), by name (``SIGKILL``) or in
words (``Segmentation fault``); every reader and rule turns them into one name here. SIGABRT is not fatal in this
sense: PyTorch's watchdog aborts every rank with it after a timeout, so it says nothing about who failed first.
"""

from __future__ import annotations

import signal

# The signals that end a rank without a Python traceback: the kernel's or the scheduler's kill and native crashes.
FATAL = frozenset({"SIGKILL", "SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE"})

# The words a shell, Python's faulthandler or Open MPI print for a signal instead of its name.
BY_WORDS = {"Segmentation fault": "SIGSEGV", "Bus error": "SIGBUS", "Illegal instruction": "SIGILL",
            "Floating point exception": "SIGFPE"}


def name(number: int) -> str | None:
    """``SIGKILL`` for 9; None for a number no signal has here."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return None


def of_exitcode(code: int) -> str | None:
    """The signal a launcher's negative exit code stands for (-6: SIGABRT); None for a normal exit code."""
    return name(-code) if code < 0 else None
