"""Ground truth from real training runs: every collective size DDP, FSDP1, FSDP2 and tensor parallelism produced.

The fixtures hold what tools/explain_runs.py recorded on 4 GPUs (flight recorder) for small transformers models:
the config, the parameters as registered, the layout the framework chose and every collective's sizes. Each distinct
(op, NumelIn, NumelOut, dtype) must be explained exactly, by the true layout, ranked first, and no candidate may be
of a kind the op cannot carry.
"""

from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path

import pytest

from ncclcheck.explain.core import COINCIDENCE, explain, generic
from ncclcheck.explain.models import merge, model_from_dict
from ncclcheck.explain.params import parameters
from ncclcheck.transfer import DTYPE_BYTES

RUNS = sorted((Path(__file__).parent / "data" / "explain" / "runs").glob("*.json"))
PARAMS = sorted((Path(__file__).parent / "data" / "explain" / "params").glob("*.json"))

# Flight-recorder dtype names (c10 scalar types) and torch names.
DTYPES = {"Float": "float32", "BFloat16": "bfloat16", "Half": "float16", "Long": "int64", "Int": "int32",
          "Byte": "uint8", "Double": "float64", "Char": "int8"}

# What each op can carry, written here independently of the code under test.
POSSIBLE = {
    "all_reduce": {"ddp_bucket", "zero_bucket", "tp_activation", "activation", "parameter", "layer", "model", "scalar",
                   "gradient_run"},
    "all_gather": {"fsdp_unit", "fsdp2_unit", "zero3_gather", "zero_partition", "tp_activation", "activation",
                   "scalar", "gather_run", "parameter"},
    "reduce_scatter": {"fsdp_unit", "fsdp2_unit", "zero3_bucket", "tp_activation", "activation", "gradient_run"},
    "broadcast": {"model", "parameter", "scalar", "activation", "buffers", "metadata"},
    "scatter": {"tp_shard"},
}


def _family(op: str) -> str:
    name = op.rpartition(":")[2].lower()
    for key, fam in (("all_reduce", "all_reduce"), ("allreduce", "all_reduce"), ("allgather", "all_gather"),
                     ("all_gather", "all_gather"), ("reduce_scatter", "reduce_scatter"), ("broadcast", "broadcast"),
                     ("scatter", "scatter")):
        if key in name:
            return fam
    raise AssertionError(f"op {op} not covered by this test")


def _numel(sizes) -> int:
    return sum(math.prod(s) for s in sizes)


def _strip(names) -> frozenset[str]:
    """Parameter names relative to their block (FSDP1 records them so)."""
    return frozenset(re.sub(r"^.*\.(layers|blocks)\.\d+\.", "", n) for n in names)


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def collectives(fx: dict) -> list[tuple[str, int, int, str]]:
    """The distinct (op, NumelIn, NumelOut, dtype) of a run."""
    out = []
    for c in fx["collectives"] or []:
        dtype = DTYPES.get(c["in_dtypes"][0], c["in_dtypes"][0]) if c["in_dtypes"] else "float32"
        key = (c["op"], _numel(c["in"]), _numel(c["out"]), dtype if dtype in DTYPE_BYTES else "uint8")
        if key not in out:
            out.append(key)
    return out


def truth(fx: dict, op: str, n_in: int, n_out: int) -> tuple[set[str], frozenset[str] | None] | None:
    """The kind (and parameters) the recorded layout says this collective is; None when the layout does not say."""
    fam, ws, layout = _family(op), fx["world_size"], fx["layout"]
    shapes = {name: shape for name, shape, _ in fx["params"]}
    if n_in == 1 and fam == "all_reduce" or (fam, n_in, n_out) == ("all_gather", 1, ws):
        return {"scalar"}, None
    if fx["strategy"] == "ddp" and fam == "all_reduce":
        for call in layout["bucket_calls"]:
            if call["numel"] == n_in:
                return {"ddp_bucket"}, frozenset(generic(call["params"]))
    if fx["strategy"] == "ddp" and fam == "broadcast":
        total = sum(math.prod(s) for s in shapes.values())
        bufs = sum(math.prod(s) for _, s, _ in fx.get("buffers") or [])
        rebuilt = 1 + max(call["index"] for call in layout["bucket_calls"])
        if n_in == total + bufs:
            return {"model"}, None
        if n_in == bufs:
            return {"buffers"}, None
        if n_in in (2 * sum(len(s) for s in shapes.values()), len(shapes) + 1, rebuilt):
            return {"metadata"}, None
    if fx["strategy"] == "fsdp1":
        for u in layout["flat_params"]:
            if (fam, n_in, n_out) in (("all_gather", u["sharded"], u["padded"]),
                                      ("reduce_scatter", u["padded"], u["sharded"])):
                return {"fsdp_unit"}, _strip(u["fqns"])
    if fx["strategy"] == "fsdp2":
        for u in layout["units"]:
            shard = sum(-(-shapes[p][0] // ws) * math.prod(shapes[p][1:]) for p in u["params"])
            if (fam, n_in, n_out) in (("all_gather", shard, shard * ws), ("reduce_scatter", shard * ws, shard)):
                return {"fsdp2_unit"}, _strip(u["params"])
    if fx["strategy"] == "tp" and fam == "all_reduce" and n_in == fx["batch"] * fx["seq"] * fx["config"]["hidden_size"]:
        return {"tp_activation"}, None
    if fx["strategy"] == "tp" and fam == "scatter":
        shards = set()
        for name, shape in shapes.items():
            style = next((v for k, v in layout["plan"].items() if f".{k}." in name), None)
            if style == "colwise":
                shards.add(-(-shape[0] // ws) * math.prod(shape[1:]))
            elif style == "rowwise" and len(shape) == 2:
                shards.add(shape[0] * -(-shape[1] // ws))
        if n_in in shards:
            return {"tp_shard"}, None
    if fx["strategy"] == "tp" and fam == "broadcast" and n_in in {math.prod(s) for s in shapes.values()}:
        return {"parameter"}, None  # a replicated parameter distributed from rank 0
    return None


def _model(fx: dict):
    m = model_from_dict(fx["config"], fx["model"])
    return merge(m, batch=fx["batch"], seq=fx["seq"], world_size=fx["world_size"],
                 tp=fx["world_size"] if fx["strategy"] == "tp" else None)


CASES = [(p.stem, key) for p in RUNS for key in collectives(_load(p))]


def test_fixtures_present_and_complete():
    """Every strategy ran, every rank saw the same collectives, and the parameters match explain's layout."""
    fixtures = [_load(p) for p in RUNS]
    assert {f["strategy"] for f in fixtures} == {"ddp", "fsdp1", "fsdp2", "tp"}
    for f in fixtures:
        assert f["ranks_agree"], f["model"]
        assert f["collectives"], f"{f['strategy']}-{f['model']}: no collectives recorded"
        mine = [[p.name, list(p.shape)] for p in parameters(_model(f))]
        assert mine == [[n, s] for n, s, _ in f["params"]], f"{f['strategy']}-{f['model']}"


@pytest.mark.parametrize("path", PARAMS, ids=lambda p: p.stem)
def test_parameter_layouts_match_transformers(path):
    """Names, shapes and order of every family's parameters as transformers 5 builds them."""
    fx = _load(path)
    mine = [[p.name, list(p.shape)] for p in parameters(model_from_dict(fx["config"], path.name))]
    assert mine == [[n, s] for n, s, _ in fx["params"]]


@pytest.mark.parametrize(("run", "key"), CASES, ids=[f"{r}:{k[0]}:{k[1]}:{k[2]}" for r, k in CASES])
def test_real_collective_is_explained_first(run, key):
    fx = _load(RUNS[[p.stem for p in RUNS].index(run)])
    op, n_in, n_out, dtype = key
    expected = truth(fx, op, n_in, n_out)
    assert expected is not None, f"the recorded layout does not say what {key} is"
    kinds, params = expected
    e = explain(n_in, _model(fx), n_out, op, dtype)
    assert e.matches, f"no exact match for {key}"
    first = e.matches[0]
    assert kinds & set(first.kinds), (first.kinds, first.description)
    if params is not None:
        assert _strip(first.params) == params or frozenset(generic(first.params)) == params, first.description
    assert first.verdict != COINCIDENCE
    fam = _family(op)
    for c in e.matches:
        assert set(c.kinds) <= POSSIBLE[fam], f"{c.kinds} claimed for a {fam}"


def test_report_counts():
    """The figures the README states: distinct real sizes, named exactly and first, coincidences flagged."""
    first = flagged = 0
    for run, (op, n_in, n_out, dtype) in CASES:
        fx = _load(RUNS[[p.stem for p in RUNS].index(run)])
        e = explain(n_in, _model(fx), n_out, op, dtype)
        expected = truth(fx, op, n_in, n_out)
        if expected and e.matches and expected[0] & set(e.matches[0].kinds):
            first += 1
        flagged += sum(1 for c in e.matches if c.verdict == COINCIDENCE)
    distinct = {(_family(op), n_in, n_out) for _, (op, n_in, n_out, _) in CASES}
    assert (len(CASES), len(distinct), first, flagged) == (71, 48, 71, 35)


def _hf_table(fx: dict):
    from ncclcheck.explain.frommodel import available

    if not (available("transformers") and available("torch")):
        pytest.skip("transformers is not installed (make test installs it)")
    return _built(json.dumps(fx["config"], sort_keys=True), fx["model"])


@functools.cache
def _built(config: str, model: str):
    """A run's table, built once a session (a frozen Table, read only): the 71 collectives come from 10 runs."""
    from ncclcheck.explain.frommodel import table_from_config

    return table_from_config(json.loads(config), f"{model}/config.json")


@pytest.mark.parametrize("path", RUNS, ids=lambda p: p.stem)
def test_the_models_own_table_equals_what_the_gpu_run_registered(path):
    fx = _load(path)
    assert [[p.name, list(p.shape)] for p in _hf_table(fx).params] == [[n, s] for n, s, _ in fx["params"]]


def test_every_nccl_collective_is_explained_first_from_the_models_own_table():
    """The same 71 NCCL collectives, with the table transformers builds instead of the built-in layout."""
    wrong = []
    for run, (op, n_in, n_out, dtype) in CASES:
        fx = _load(RUNS[[p.stem for p in RUNS].index(run)])
        kinds, params = truth(fx, op, n_in, n_out)
        e = explain(n_in, _model(fx), n_out, op, dtype, None, _hf_table(fx))
        first = e.matches[0] if e.matches else None
        if first is None or not kinds & set(first.kinds) or params is not None and not (
                _strip(first.params) == params or frozenset(generic(first.params)) == params):
            wrong.append((run, op, n_in, first.description if first else "no match"))
        assert all(set(c.kinds) <= POSSIBLE[_family(op)] for c in e.matches), (run, op, n_in)
    assert wrong == []
