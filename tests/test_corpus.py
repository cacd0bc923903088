"""The project's own excerpt corpus (tests/data/corpus): real pastes from other projects' bug reports.

Same sidecar schema as the shared conformance set. Every excerpt's timeout records must equal
the sidecar's ``records``; dump signals listed under ``other`` must be found too. Run this file
as a script to print how many excerpts are read exactly right (the figure in the README).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import DATA, run

from ncclcheck.render.json_out import pg_json, record_json

CORPUS = DATA / "corpus"
CASES = sorted(CORPUS.glob("*.log"))
FIELDS = ("rank", "global_rank", "pg", "seq", "op_type", "numel_in", "numel_out", "tensor_shape",
          "timeout_ms", "ran_for_ms", "last_enqueued", "last_completed")


def mismatches(log: Path) -> list[str]:
    """Every way the analysis of one excerpt differs from its sidecar (empty when exactly right)."""
    expected = json.loads(log.with_suffix(".json").read_text())
    analysis = run(log)
    got = [record_json(r) for r in analysis.records]
    want = expected["records"]
    out = []
    if len(got) != len(want):
        out.append(f"{len(got)} records, expected {len(want)}")
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        out += [f"records[{i}].{f}: {g[f]!r} != {w[f]!r}" for f in FIELDS if g[f] != w[f]]
    return out + _other_mismatches(expected.get("other", {}), analysis.scans)


def _other_mismatches(other: dict, scans) -> list[str]:
    """Non-record facts the sidecar lists under ``other`` (each list checked only when present)."""
    out = []
    seen = [(d.who.rank, pg_json(d.pg), d.from_rank, d.last_enqueued, d.last_completed)
            for scan in scans for d in scan.dump_signals]
    for s in other.get("dump_signals", []):
        key = (s["global_rank"], s["pg"], s["from_rank"], s["last_enqueued"], s["last_completed"])
        if seen.count(key) != s.get("occurrences", 1):
            out.append(f"dump signal {key}: seen {seen.count(key)} times")
    if "errors" in other:
        kinds = [e.kind.value for scan in scans for e in scan.errors]
        want = {e["kind"]: e["count"] for e in other["errors"]}
        got = {k: kinds.count(k) for k in set(kinds)}
        if got != want:
            out.append(f"error events {got} != {want}")
    beats = [(h.who.rank, h.kind, h.seconds) for scan in scans for h in scan.heartbeats]
    for h in other.get("heartbeats", []):
        if (h["global_rank"], h["kind"], h["seconds"]) not in beats:
            out.append(f"heartbeat {h} not found")
    if "mismatches" in other:
        pairs = [{"rank_a": m.rank_a, "rank_b": m.rank_b} for scan in scans for m in scan.mismatches]
        if pairs != other["mismatches"]:
            out.append(f"mismatches {pairs} != {other['mismatches']}")
    if "dump_events" in other:
        events = [{"global_rank": e.who.rank, "kind": e.kind, "include_stack": e.include_stack,
                   "only_active": e.only_active}
                  for scan in scans for e in scan.dump_events]
        if events != other["dump_events"]:
            out.append(f"dump events {events} != {other['dump_events']}")
    return out


def test_corpus_is_large_and_varied():
    """At least 25 excerpts, from at least 15 projects, with negative controls among them."""
    sides = [json.loads(p.with_suffix(".json").read_text()) for p in CASES]
    assert len(sides) >= 25
    assert len({s["source"]["repo"] for s in sides}) >= 15
    assert sum(1 for s in sides if not s["records"]) >= 5


@pytest.mark.parametrize("log", CASES, ids=lambda p: p.stem)
def test_excerpt_read_exactly(log):
    """Records (and dump signals) extracted from the excerpt equal the hand-written sidecar."""
    assert mismatches(log) == []


def main() -> int:
    """Print per-excerpt results and the score."""
    right = 0
    for log in CASES:
        problems = mismatches(log)
        right += not problems
        print(("ok    " if not problems else "WRONG ") + log.stem)
        for p in problems:
            print("        " + p)
    print(f"{right}/{len(CASES)} excerpts read exactly right")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    sys.exit(main())
