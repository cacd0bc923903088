"""The job model and the verdict do work in proportion to the ranks (n log n at most), counted, not timed.

A synthetic mesh (tools/synth_job.py: tp groups of 8, dp groups across them, one straggler), as node logs and as
one file per rank with the rank only in its name, and torchrun node consoles after rank 0 raised (each agent's
failure table, with and without its closing signals: every silent rank asks every table), is read at two sizes;
the work of merging the records, building the job and deciding the verdict is the number of Python calls a
profiling hook sees. Its ranks are made an int subclass whose ``==`` is a Python call, so that a rank looked up in
a list (``rank in waiting``), which is C code and no call, counts once per element compared: the quadratic spots
of issue 42 were of that kind. Linear work grows 4x when the job does; the test fails above n log n (4.9x).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import os
import sys
from typing import Any

import pytest

from ncclcheck.evidence.reader import resolve
from ncclcheck.job.analyze import analyze_scans, read_all

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL, LARGE = 512, 2048


class Rank(int):
    """A rank whose comparisons for equality are calls the profiler sees; hashing stays int's."""

    __hash__ = int.__hash__

    def __eq__(self, other: object) -> bool:
        return int.__eq__(self, other)  # type: ignore[no-any-return]

    def __ne__(self, other: object) -> bool:
        return int.__ne__(self, other)  # type: ignore[no-any-return]


def _ranked(value: Any, name: str = "") -> Any:
    """The scans with every int field whose name says it is a rank made a :class:`Rank`."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _ranked(getattr(value, f.name), f.name) for f in dataclasses.fields(value) if f.init}
        return dataclasses.replace(value, **changes)
    if isinstance(value, tuple):
        return tuple(_ranked(v, name) for v in value)
    if isinstance(value, list):
        return [_ranked(v, name) for v in value]
    if type(value) is int and "rank" in name:
        return Rank(value)
    return value


def _scans(tmp: str, world: int, layout: str) -> list[Any]:
    """The mesh as node logs of 64 ranks, or one file per rank named for it with no ``[rankN]:`` prefix (torchrun's
    ``--log-dir``: the rank is only in the path)."""
    spec = importlib.util.spec_from_file_location("synth_job", os.path.join(ROOT, "tools", "synth_job.py"))
    assert spec is not None and spec.loader is not None
    synth = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(synth)
    folder = os.path.join(tmp, f"{layout}{world}")
    if layout == "nodes":
        synth.write_nodes(folder, 8, world // 8, world // 2 + 5, 40, 64)
    elif layout in ("agents", "tables"):  # torchrun consoles of 8 ranks, each with its failure table
        synth.write_agents(folder, 8, world // 8, 8, closing=layout == "agents")
    else:
        os.makedirs(folder)
        for r in range(world):
            inits, ends = synth.rank_lines(r, 8, world // 8, world // 2 + 5, 40)
            with open(os.path.join(folder, f"rank{r}.log"), "w", encoding="utf-8") as f:
                f.write("".join(line.split("]:", 1)[1] + "\n" for line in (*inits, *ends)))
    scans, _ = read_all(resolve([folder], lambda e: None), workers=1)
    return [_ranked(s) for s in scans]


def _work(scans: list[Any]) -> tuple[int, tuple[int, ...]]:
    """Python calls (functions, built-ins, a Rank's ``==``) made while the job is built and decided."""
    count = 0

    def hook(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(hook)
    try:
        analysis = analyze_scans(scans)
    finally:
        sys.setprofile(None)
    return count, analysis.verdict.culprit_ranks


def test_rank_compares_are_counted() -> None:
    """The instrument itself: a rank looked up in a list is a call per element compared, in a set one at most."""
    ranks = [Rank(r) for r in range(100)]
    count, _ = 0, None

    def hook(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        count += event == "call"

    sys.setprofile(hook)
    _ = Rank(99) in ranks
    sys.setprofile(None)
    listed, count = count, 0
    as_set = set(ranks)
    sys.setprofile(hook)
    _ = Rank(99) in as_set
    sys.setprofile(None)
    assert listed >= 100 and count <= 1


@pytest.mark.parametrize("layout", ["nodes", "files", "agents", "tables"])
def test_job_and_verdict_grow_at_most_n_log_n(tmp_path: Any, layout: str) -> None:
    small, culprit_small = _work(_scans(str(tmp_path), SMALL, layout))
    large, culprit_large = _work(_scans(str(tmp_path), LARGE, layout))
    if layout in ("nodes", "files"):
        assert culprit_small == (SMALL // 2 + 5,) and culprit_large == (LARGE // 2 + 5,)
    else:  # rank 0 raised; the others were stopped by their agents, or left out of their node's table
        assert culprit_small[0] == 0 and culprit_large[0] == 0
    bound = LARGE / SMALL * math.log(LARGE) / math.log(SMALL)
    assert large / small <= bound, f"work grew {large / small:.2f}x for {LARGE / SMALL:.0f}x the ranks " \
                                   f"({small:,} to {large:,} calls; n log n allows {bound:.2f}x)"
