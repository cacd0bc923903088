"""glibc's own last words before it aborts a process (evidence/formats/glibc.py): a heap check, a malloc assertion or
a fortify failure is the process's failure, quoted as its stated reason with the native libraries' releases as the
first step; a SIGABRT the launcher reports for the rank is that rank's own abort, not the watchdog's.

The line forms are written from glibc's format strings (malloc/malloc.c's malloc_printerr in both its forms, 2.26 on
and up to 2.25; __malloc_assert; debug/fortify_fail.c); tests/data/crash/heap is a real double free under torchrun.
"""

from __future__ import annotations

import pytest
from conftest import DATA, run, run_text

from ncclcheck.evidence.formats import glibc

# (line as printed, the words the clue keeps): each message of every release, from malloc.c's malloc_printerr calls.
FORMS = (
    ("free(): invalid pointer", "free(): invalid pointer"),
    ("free(): corrupted unsorted chunks", "free(): corrupted unsorted chunks"),
    ("double free or corruption (out)", "double free or corruption (out)"),
    ("double free or corruption (fasttop)", "double free or corruption (fasttop)"),
    ("malloc(): corrupted top size", "malloc(): corrupted top size"),
    ("malloc(): unaligned tcache chunk detected", "malloc(): unaligned tcache chunk detected"),
    ("realloc(): invalid next size", "realloc(): invalid next size"),
    ("munmap_chunk(): invalid pointer", "munmap_chunk(): invalid pointer"),
    ("malloc_consolidate(): invalid chunk size", "malloc_consolidate(): invalid chunk size"),
    ("corrupted size vs. prev_size while consolidating", "corrupted size vs. prev_size while consolidating"),
    ("corrupted double-linked list", "corrupted double-linked list"),
    ("*** Error in `/usr/bin/python3': free(): invalid next size (fast): 0x00000000027c41f0 ***",
     "free(): invalid next size (fast)"),
    ("*** Error in `python': double free or corruption (!prev): 0x000055d0c1e6a010 ***",
     "double free or corruption (!prev)"),
    ("Fatal glibc error: malloc assertion failure in sysmalloc: (old_top == initial_top (av) && old_size == 0)",
     "Fatal glibc error: malloc assertion failure in sysmalloc: (old_top == initial_top (av) && old_size == 0)"),
    ("*** buffer overflow detected ***: terminated", "*** buffer overflow detected ***"),
    ("*** stack smashing detected ***: ./all_reduce_perf terminated", "*** stack smashing detected ***"),
)


@pytest.mark.parametrize(("line", "words"), FORMS)
def test_each_release_form_is_the_processs_own_failure_with_the_libraries_releases_first(line, words):
    assert glibc.message(line) == words
    v = run_text(f"{line}\nAborted (core dumped)\n").verdict
    assert (v.kind.value, v.culprit_ranks) == ("rank_failed_first", ())
    assert v.stated is not None and v.stated.source == "glibc" and v.stated.text == words
    assert "memory of the process corrupted" in v.stated.meaning
    assert "newer NCCL release" in v.next_steps[0] and "MALLOC_CHECK_=3" in v.next_steps[0]


def test_a_ranks_prefix_names_it_and_open_mpis_abort_block_stays_the_abort():
    text = ("[rank3]:free(): invalid pointer\n[node7:81234] *** Process received signal ***\n"
            "[node7:81234] Signal: Aborted (6)\n[node7:81234] Signal code:  (-6)\n")
    v = run_text(text).verdict
    assert (v.kind.value, v.culprit_ranks) == ("rank_failed_first", (3,))
    assert v.stated is not None and v.stated.source == "glibc" and v.stated.rank == 3


@pytest.mark.parametrize("line", [
    "the docs say free(): invalid pointer means a bad free",  # quoted in a sentence, not glibc's line
    "malloc(): ok",  # too short to be one of its findings
    "INFO double free or corruption checks enabled",
])
def test_words_that_are_not_glibcs_line_are_no_failure(line):
    assert glibc.message(line) is None
    assert run_text(f"{line}\n").verdict.kind.value == "no_failure"


def test_a_recorded_double_free_names_the_rank_torchrun_reports_aborted():
    """Real: rank 1 frees a chunk twice (tests/data/crash/README.md); glibc's line has no prefix, torchrun's table
    names rank 1's SIGABRT, and rank 0 only lost its peer."""
    v = run(DATA / "crash" / "heap" / "console.log").verdict
    assert (v.kind.value, v.culprit_ranks) == ("rank_failed_first", (1,))
    assert v.stated is not None and v.stated.text == "free(): double free detected in tcache 2"
    assert "glibc aborted it on its own check" in v.summary and '"free(): double free detected in tcache 2"' in v.summary
    assert "newer NCCL release" in v.next_steps[0]


def test_two_ranks_aborted_and_a_line_of_no_rank_names_neither():
    """glibc's line names no process: with two ranks dead of SIGABRT nothing says whose it was."""
    table = "".join(
        f"[{i}]:\n  time      : 2026-11-28_16:09:34\n  host      : localhost\n  rank      : {r} (local_rank: {r})\n"
        f"  exitcode  : -6 (pid: {100 + r})  (SIGABRT)\n  error_file: <N/A>\n"
        f"  traceback : Signal 6 (SIGABRT) received by PID {100 + r}\n" for i, r in enumerate((0, 1)))
    text = ("free(): invalid pointer\ntorch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
            "============================================================\ntrain.py FAILED\n"
            "------------------------------------------------------------\nFailures:\n" + table.split("[1]:")[0]
            + "------------------------------------------------------------\nRoot Cause (first observed failure):\n"
            + "[1]:" + table.split("[1]:")[1] + "============================================================\n")
    v = run_text(text).verdict
    assert v.culprit_ranks == () and "glibc aborted it" not in v.summary
    assert v.stated is not None and v.stated.source == "glibc"
