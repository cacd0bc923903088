"""A vision-language model asked with --module (issue 43, section 2): the factory's model is a transformers model, so
its config gives an example input and the gradient-ready order is observed in a pass, not inferred; the rebuilt DDP
buckets of the recorded bucket_cap_mb=1 run of Qwen2.5-VL are then named first, as with --config."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from needs import torch_and_transformers

from ncclcheck.explain.core import MATCH, explain
from ncclcheck.explain.models import merge, model_from_dict

torch_and_transformers()

sys.path.insert(0, str(Path(__file__).parent.parent / "tools"))
import bench_explain  # noqa: E402

RUN = Path(__file__).parent / "data" / "explain" / "truth" / "ddp_cap1-qwen25vl-w2.json"


def test_a_vision_language_model_from_a_module_has_its_order_observed_and_its_rebuilt_buckets_named():
    run = {**json.loads(RUN.read_text()), "module": "qwen25vl:build"}
    table = bench_explain.table_for(run, "transformers")
    assert table.origin == "module" and table.ready_how.startswith("observed")
    m = merge(model_from_dict(run["config"], run["model"]), batch=run["batch"], seq=run["seq"],
              world_size=run["world_size"])
    cap = run["layout"]["bucket_cap_mb"]
    buckets = [c for c in bench_explain.cases(run) if c["truth"]["kind"] == "ddp_bucket"]
    assert len(buckets) >= 3  # the first iteration's bucket and the rebuilt ones
    for c in bench_explain.cases(run):
        for strategy in ("ddp", None):
            e = explain(c["numel_in"], m, c["numel_out"], c["op"], "float32", strategy, table, cap)
            first = next((x for x in e.candidates if x.exact and x.verdict == MATCH), None)
            assert bench_explain.right(first, c["truth"]), (strategy, c["op"], c["numel_in"], c["truth"]["what"])
