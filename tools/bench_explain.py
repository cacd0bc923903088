"""How often `ncclcheck explain` names the tensor a real collective carried (``make bench-explain``).

Reads the recorded runs in tests/data/explain/truth/ (tools/explain_runs.py: small transformers models of many
families trained under DDP, FSDP1, FSDP2 and TP on CPU with gloo, every collective labelled from the framework's
own layout). Each distinct (op, NumelIn, NumelOut) of a run is one case, explained as a user would: the run's
config.json (the table built by transformers when installed), the batch shape, the world size, the op as the
flight recorder names it and, in the second pass, the strategy. A case is right when the first match is of the
true kind and, where the truth names the parameters, holds exactly those (identical blocks alike). Also counted:
cases where a kind the strategy cannot form is claimed first, and random counts that no tensor forms (they must
stay "no exact match").
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import sys
import time
from collections import Counter, defaultdict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ncclcheck.explain.core import MATCH, explain, generic  # noqa: E402
from ncclcheck.explain.models import merge, model_from_dict  # noqa: E402
from ncclcheck.explain.ops import strategy_allows  # noqa: E402
from ncclcheck.explain.table import builtin_table  # noqa: E402

TRUTH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "data", "explain", "truth")
STRATEGY = {"ddp": "ddp", "ddp_cap1": "ddp", "ddp_unused": "ddp", "ddp_unused_cap1": "ddp", "ddp_static": "ddp",
            "fsdp1": "fsdp", "fsdp1_orig": "fsdp", "fsdp1_hybrid": "fsdp", "fsdp2": "fsdp2", "fsdp2_noreshard": "fsdp2",
            "hsdp": "fsdp2", "tp": "tp",
            # tools/explain_layout_runs.py: pipelines, 2-D TP x FSDP2, DeepSpeed ZeRO
            "pp_gpipe": "pp", "pp_1f1b": "pp", "tp_fsdp2": "tp+fsdp2", "zero1": "zero1", "zero2": "zero2",
            "zero3": "zero3", "zero2_small": "zero2"}
MODULES = os.path.join(os.path.dirname(TRUTH), "module")  # the user modules some runs trained (``--module``)
# The truth's kind, and the kinds explain may name for the same tensor.
SAME = {"metadata": {"metadata", "scalar"}, "scalar": {"scalar", "metadata"}}


def fixtures(folder: str = TRUTH) -> list[dict]:
    out = []
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        with open(path) as f:
            out.append(json.load(f))
    return out


_TABLES: dict[tuple[str, str], object] = {}


def table_for(fx: dict, source: str):
    """The parameter table a user would get: from the config with transformers, or the built-in layouts (one build
    per distinct config), with the run's own setup."""
    return customised(raw_table(fx, source), fx)


def raw_table(fx: dict, source: str):
    """The table of the run's model as built, before its setup (built once a process: the tests share it too)."""
    key = (source, json.dumps([fx["config"], fx.get("module")], sort_keys=True))
    if key not in _TABLES:
        if fx.get("module"):
            from ncclcheck.explain.frommodel import table_from_factory

            if MODULES not in sys.path:
                sys.path.insert(0, MODULES)
            _TABLES[key] = table_from_factory(fx["module"])
        elif source == "transformers":
            from ncclcheck.explain.frommodel import table_from_config

            _TABLES[key] = table_from_config(fx["config"], f"{fx['model']}/config.json")
        else:
            _TABLES[key] = builtin_table(model_from_dict(fx["config"], fx["model"]))
    return _TABLES[key]


def customised(table, fx: dict):
    """The run's own setup as a user states it: --wrap-policy as the run wrote it (else --block-class), the LoRA
    adapter config, --frozen."""
    from ncclcheck.explain.adapt import as_trained, freeze, with_blocks, with_lora

    if fx.get("wrap_policy"):
        table = as_trained(table, wrap_policy=fx["wrap_policy"])
    else:
        table = with_blocks(table, fx.get("block_classes") or ())
    if fx.get("adapter"):
        table = with_lora(table, fx["adapter"], "adapter_config.json")
    return freeze(table, fx.get("freeze") or ())


def cases(fx: dict) -> list[dict]:
    """One case per distinct (op, NumelIn, NumelOut); a barrier's empty record has no count to explain."""
    seen: dict[tuple, dict] = {}
    for c in fx["collectives"]:
        key = (c["op"], c["numel_in"], c["numel_out"])
        if c["numel_in"] and c.get("truth") and key not in seen:
            seen[key] = c
    return list(seen.values())


def right(first, truth: dict) -> bool:
    """The first match is the true tensor: of the true kind (or the same tensor under another name) and, where the
    truth names parameters (FSDP1 names them relative to the unit), exactly those."""
    if first is None or not set(first.kinds or (first.kind,)) & SAME.get(truth["kind"], {truth["kind"]}):
        return False
    want = truth.get("params")
    if not want or not first.params:
        return True
    # FSDP1's names are relative to the unit (``blocks.0.x`` inside ``layers.0``), and a user's module may hold its
    # blocks at the top (``blocks.0.x``): indices made generic alike on both sides
    got = tuple(generic(["." + n])[0][1:] for n in first.params)
    want = [generic(["." + n])[0][1:] for n in want]
    if truth["kind"].startswith("tp_") or truth["kind"] == "zero_broadcast":  # every tensor of that size; one named
        return set(got) <= set(want)
    if truth["kind"] in ("ddp_bucket", "zero_bucket", "zero3_bucket"):  # a bucket is the set of its gradients
        got, want = tuple(sorted(got)), sorted(want)
    return len(got) == len(want) and all(g == t or g.endswith("." + t) for g, t in zip(got, want, strict=False))


def run(folder: str, source: str, with_strategy: bool, randoms: int, seed: int) -> dict:
    rng = random.Random(seed)
    tally: Counter = Counter()
    by_kind: dict[str, Counter] = defaultdict(Counter)
    by_model: dict[str, Counter] = defaultdict(Counter)
    wrong: list[str] = []
    impossible = 0
    false_random = random_total = 0
    built = 0.0
    for fx in fixtures(folder):
        t0 = time.perf_counter()
        table = table_for(fx, source)
        built += time.perf_counter() - t0
        tp = fx["layout"]["dp_tp"][1] if fx["layout"].get("dp_tp") else None
        m = merge(model_from_dict(fx["config"], fx["model"]), batch=fx["batch"], seq=fx["seq"],
                  world_size=fx["world_size"], tp=tp)
        strat = STRATEGY[fx["strategy"]]
        pipeline = (fx["layout"]["stages"], fx["layout"]["microbatches"]) if fx["layout"].get("stages") else None
        zero_cap = (fx["layout"].get("zero_config") or {}).get("reduce_bucket_size")
        cap = fx["layout"].get("bucket_cap_mb")
        mesh = tuple(fx["layout"]["mesh"]) if fx["layout"].get("mesh") else None
        unused = bool(fx["layout"].get("find_unused_parameters"))
        for c in cases(fx):
            # a byte tensor's dtype is kept: the flight recorder says uint8, and bytes are what it then counts
            e = explain(c["numel_in"], m, c["numel_out"], c["op"], c["dtype"] if c["dtype"].startswith(("float", "uint8"))
                        else "float32", strat if with_strategy else None, table, cap, mesh, unused,
                        pipeline=pipeline, reduce_bucket_size=zero_cap)
            first = next((x for x in e.candidates if x.exact and x.verdict == MATCH), None)
            ok = right(first, c["truth"])
            tally["right" if ok else "wrong"] += 1
            by_kind[c["truth"]["kind"]]["right" if ok else "wrong"] += 1
            by_model[fx["model"]]["right" if ok else "wrong"] += 1
            if first is not None and not strategy_allows(first.kind, strat):  # tp+fsdp2 allows both parts' kinds
                impossible += 1
            if not ok:
                wrong.append(f"{fx['strategy']}-{fx['model']}-w{fx['world_size']} {c['op']} {c['numel_in']}/"
                             f"{c['numel_out']} {c['dtype']}: truth {c['truth']['kind']} {c['truth'].get('what')}; "
                             f"first {first.kind + ': ' + first.description[:120] if first else 'no match'}")
        for _ in range(randoms):
            n = rng.randrange(10**5, 10**8) * 2 + 1
            e = explain(n, m, None, "nccl:all_reduce", "float32", strat if with_strategy else None, table, cap, mesh,
                        unused, pipeline=pipeline, reduce_bucket_size=zero_cap)
            random_total += 1
            false_random += any(x.exact and x.verdict == MATCH for x in e.candidates)
    total = tally["right"] + tally["wrong"]
    return {"source": source, "with_strategy": with_strategy, "cases": total, "right": tally["right"],
            "share": tally["right"] / total if total else 0.0, "impossible_first": impossible,
            "random_counts": random_total, "random_matched": false_random, "table_seconds": built,
            "by_kind": {k: dict(v) for k, v in sorted(by_kind.items())},
            "by_model": {k: dict(v) for k, v in sorted(by_model.items())}, "wrong": wrong}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--truth", default=TRUTH)
    ap.add_argument("--source", choices=("transformers", "built-in"), default="transformers")
    ap.add_argument("--randoms", type=int, default=20, help="random odd counts per run (must not match)")
    ap.add_argument("--show-wrong", type=int, default=20)
    ap.add_argument("--min-share", type=float, default=0.97)
    args = ap.parse_args()
    worst = 1.0
    for with_strategy in (True, False):
        r = run(args.truth, args.source, with_strategy, args.randoms, 1)
        worst = min(worst, r["share"])
        label = "with --strategy" if with_strategy else "without --strategy"
        print(f"{args.source} tables, {label}: true tensor first in {r['right']} of {r['cases']} cases "
              f"({100 * r['share']:.1f}%); a kind of another strategy first in {r['impossible_first']}; "
              f"random counts matched {r['random_matched']} of {r['random_counts']}; tables built in "
              f"{r['table_seconds']:.2f} s")
        for k, v in r["by_kind"].items():
            print(f"  {k:14} {v.get('right', 0):4} of {sum(v.values()):4}")
        for line in r["wrong"][:args.show_wrong]:
            print("  wrong:", line)
    return 0 if worst >= args.min_share else 1


if __name__ == "__main__":
    sys.exit(main())
