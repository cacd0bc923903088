"""Real excerpts from public bug reports: extracted records must equal the sidecar JSON."""

from __future__ import annotations

import json

import pytest
from conftest import CONFORMANCE, run

from ncclcheck.render.json_out import record_json

FIELDS = ("rank", "global_rank", "pg", "seq", "op_type", "numel_in", "numel_out", "tensor_shape",
          "timeout_ms", "ran_for_ms", "last_enqueued", "last_completed")
CASES = sorted(CONFORMANCE.glob("*.log")) if CONFORMANCE.is_dir() else []


@pytest.mark.skipif(not CASES, reason="../shared/conformance is not present")
@pytest.mark.parametrize("log", CASES, ids=lambda p: p.stem)
def test_records_match(log):
    """Every record field equals the expected one (or an accepted alternative for corrupted text)."""
    expected = json.loads(log.with_suffix(".json").read_text())
    got = [record_json(r) for r in run(log).records]
    assert len(got) == len(expected["records"])
    alternatives = expected.get("acceptable_alternatives", {})
    for i, (g, want) in enumerate(zip(got, expected["records"], strict=True)):
        for field in FIELDS:
            ok = [want[field], *alternatives.get(f"records[{i}].{field}", [])]
            assert g[field] in ok, (i, field, g[field], want[field])
