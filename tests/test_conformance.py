"""Real excerpts from public bug reports: extracted records must equal the sidecar JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CONFORMANCE, run

from ncclcheck.render.json_out import record_json

FIELDS = ("rank", "global_rank", "pg", "seq", "op_type", "numel_in", "numel_out", "tensor_shape",
          "timeout_ms", "ran_for_ms", "last_enqueued", "last_completed")
# The corpus lives outside the repository, next to the checkout (../shared/conformance); NCCLCHECK_CONFORMANCE
# points elsewhere.
CORPUS = Path(os.environ.get("NCCLCHECK_CONFORMANCE") or CONFORMANCE)
CASES = sorted(CORPUS.glob("*.log")) if CORPUS.is_dir() else []
ABSENT = (f"conformance corpus not found: no *.log in {CORPUS}; every real-log excerpt check skipped "
          "(put the corpus at ../shared/conformance or set NCCLCHECK_CONFORMANCE to its folder)")


@pytest.mark.parametrize("log", CASES or [pytest.param(None, id="corpus-absent", marks=pytest.mark.skip(reason=ABSENT))],
                         ids=lambda p: p.stem)
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


def test_an_absent_corpus_is_reported_with_its_place(tmp_path):
    """A clone without the corpus says where it was looked for and what was skipped, in pytest's summary."""
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", __file__,
                        "-k", "test_records_match"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "NCCLCHECK_CONFORMANCE": str(tmp_path / "nowhere")}, cwd=Path(__file__).parent)
    assert r.returncode == 0, r.stdout
    assert f"conformance corpus not found: no *.log in {tmp_path / 'nowhere'}" in " ".join(r.stdout.split())
