"""Signals, named once: the name of a number, the signal a negative exit code stands for, which ones kill a rank.

Launchers, shells and the kernel report a child's death by number (``exitcode: -9``), by name (``SIGKILL``) or in
words (``Segmentation fault``); every reader and rule turns them into one name here. SIGABRT is not fatal in this
sense: PyTorch's watchdog aborts every rank with it after a timeout, so it says nothing about who failed first.
"""

from __future__ import annotations

import re
import signal

# The signals that end a rank without a Python traceback: the kernel's or the scheduler's kill and native crashes.
FATAL = frozenset({"SIGKILL", "SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE"})

# The words a shell, Python's faulthandler or Open MPI print for a signal instead of its name.
BY_WORDS = {"Segmentation fault": "SIGSEGV", "Bus error": "SIGBUS", "Illegal instruction": "SIGILL",
            "Floating point exception": "SIGFPE"}


# Windows has no signals: a process that faults in native code ends with the exception's NTSTATUS code (Windows'
# ntstatus.h, documented in [MS-ERREF] 2.3.1), which launchers print as its exit code (MS-MPI's mpiexec as "%#x",
# 0xc0000005) and programs' handlers and CPython's faulthandler in words ("Windows fatal exception: access violation",
# Python/faulthandler.c). Each as the signal its fault raises on Linux (the C runtime's signal() maps them alike).
BY_NTSTATUS = {0xC0000005: "SIGSEGV",  # STATUS_ACCESS_VIOLATION
               0xC00000FD: "SIGSEGV",  # STATUS_STACK_OVERFLOW
               0xC000001D: "SIGILL",  # STATUS_ILLEGAL_INSTRUCTION
               0xC0000094: "SIGFPE",  # STATUS_INTEGER_DIVIDE_BY_ZERO
               0xC000008E: "SIGFPE"}  # STATUS_FLOAT_DIVIDE_BY_ZERO
BY_WINDOWS_WORDS = {"access violation": "SIGSEGV", "stack overflow": "SIGSEGV", "illegal instruction": "SIGILL",
                    "int divide by zero": "SIGFPE", "float divide by zero": "SIGFPE"}


def name(number: int) -> str | None:
    """``SIGKILL`` for 9; None for a number no signal has here."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return None


def of_exitcode(code: int) -> str | None:
    """The signal a launcher's negative exit code stands for (-6: SIGABRT); None for a normal exit code."""
    return name(-code) if code < 0 else None


# Python's default SIGINT handler (signal.default_int_handler) raises this in the main thread: a rank that prints it
# was interrupted, it did not fail.
INTERRUPTED = "KeyboardInterrupt"

# Who sends each stop signal, in words (torch 2.13's torch/distributed/elastic): the agent turns a SIGTERM, SIGINT,
# SIGHUP or SIGQUIT of its own into SignalException (multiprocessing/api.py, _terminate_process_handler), logs
# "Received <n> death signal, shutting down workers" and sends that same signal to every worker still running
# (agent/server/api.py, run; LocalElasticAgent._shutdown, PContext.close: "Sending process <pid> closing signal
# <name>"); after a worker's failure it sends SIGTERM, with the same line, to the workers still running
# (multiprocessing/api.py, SubprocessContext._poll: self.close(); agent/server/api.py, _invoke_run: _stop_workers).
# A worker that died of SIGTERM with no such line for its PID was stopped by someone else.
ORIGIN = {
    "SIGINT": "Ctrl-C in the terminal that ran the job (the terminal sends SIGINT to each of its foreground processes; "
              "torchrun's agent passes it on to its workers)",
    "SIGTERM": "a request to stop from outside the job: a scheduler's time limit or preemption (scancel, a pod's "
               "deletion), a container's stop or a person's kill",
    "SIGHUP": "the terminal that ran the job closed (a dropped SSH session without nohup, tmux or screen)",
}

_DEATH = re.compile(r"Received (?:Signals\.)?(\w+) death signal")


def death_signal(text: str) -> str | None:
    """The signal torchrun's agent says it received (``Received 2 death signal``: SIGINT), or None."""
    m = _DEATH.search(text)
    if m is None:
        return None
    return name(int(m[1])) if m[1].isdigit() else m[1] if m[1].startswith("SIG") else None
