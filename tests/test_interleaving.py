"""A launcher's console interleaves its ranks' lines in any order its pipes deliver them, each rank's own lines in
the order that rank printed them. Every such interleaving of every multi-rank console kept here must give the same
records and the same verdict. The launcher's own lines keep their place: its banner comes before any rank prints,
its report of failed workers (stopping the others, the exit codes, the failure table) after they have exited."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from analysed import analysed
from conftest import DATA, run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncclcheck.job.model import Analysis

CONSOLES = sorted([*(DATA / "real4").glob("*/console.log"), *(DATA / "failures").glob("*/console.log"),
                   *(DATA / "real_gloo").glob("*/console.log")])
_TAG = re.compile(r"^\[(?:default|rank)(\d+)\]:")


def _streams(text: str) -> tuple[list[str], list[list[str]], list[str]]:
    """The launcher's banner, each rank's tagged lines, and the launcher's report after the workers exited."""
    by: dict[str, list[str]] = {}
    for line in text.splitlines(keepends=True):
        m = _TAG.match(line)
        by.setdefault(m[1] if m else "launcher", []).append(line)
    launcher = by.pop("launcher", [])
    end = next((k for k, line in enumerate(launcher) if _REPORT.search(line)), len(launcher))
    return launcher[:end], list(by.values()), launcher[end:]


_REPORT = re.compile(r"Sending process \d+ closing signal|failed \(exitcode|^Traceback|ChildFailedError|"
                     r"Received Signals\.")


def _summary(path: Path) -> tuple:
    return _summarised(run(path))


def _summarised(a: Analysis) -> tuple:
    records = sorted((r.global_rank, r.rank, r.seq, r.op_type, r.numel_in, r.numel_out) for r in a.records)
    return records, a.verdict.kind.value, a.verdict.culprit_ranks, a.verdict.waiting_ranks


# Each console is interleaved in its own test, so that every one is (a draw over all of them left some to chance) and
# xdist shares them out; what varies is the order in which the ranks' runs of 1 to 4 lines arrive, and a few
# orders of each console find what many do (300 examples over all the consoles before: about 9 each, twice the time).
@pytest.mark.parametrize("console", CONSOLES, ids=lambda p: str(p.parent.relative_to(DATA)))
@settings(max_examples=4, deadline=None, derandomize=True,  # the same examples in CI and here
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_interleaving_of_a_console_gives_the_same_records_and_verdict(console, data, tmp_path_factory):
    text = console.read_text(encoding="utf-8", errors="replace")
    head, streams, tail = _streams(text)
    out: list[str] = list(head)
    while any(streams):
        live = [s for s in streams if s]
        pick = data.draw(st.integers(0, len(live) - 1))
        take = data.draw(st.integers(1, 4))
        out += live[pick][:take]
        del live[pick][:take]
    mixed = tmp_path_factory.mktemp("mix") / "console.log"
    mixed.write_text("".join(out + tail), encoding="utf-8")
    # the console as kept: analysed once a session (tests/analysed.py), not once an example
    assert _summary(mixed) == _summarised(analysed(console)), console.parent.name


def test_there_are_consoles_to_interleave():
    assert len(CONSOLES) >= 20
