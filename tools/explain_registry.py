"""Every config class the installed transformers ships, built by explain (issue 43's registry property).

For each ``model_type`` of transformers' own registry (``CONFIG_MAPPING``): the class's default config, scaled down
(``scaled``: at most two layers, tiny widths; the default itself where the scaled one is refused), saved with
``save_pretrained`` (transformers' own JSON, its ``{"__float__": "Infinity"}`` included), read back as
``explain --config`` reads it (``source.load``, no cache) and asked about the whole model's count under every
strategy flag and with none. Each model type ends as one of:
- built: transformers built it and every question was answered;
- refused: transformers could not build it, and explain's one warning line quotes transformers' own error;
- failed: anything else (an exception of ours, a warning of more than one line): a defect.

``tests/test_explain_registry.py`` checks a model type of each shape (``SAMPLE``) in ``make test``, and that the
sample holds every shape of the installed registry; this runs all of it (804 model
types in transformers 5.23: one to two hours on 2 cores under load, most under a second each, a few minutes for
the largest defaults; docs/explain.md records the last walk's counts and refusals).
Prints one line per model type (its outcome, time and, where not built, why), then the counts; ``--json FILE``
keeps each result with its time.

The model types run in processes of ``CHUNK`` types each under ``prlimit --as`` (the default for more than one
type), one process at a time; where a process dies (killed for memory, a crash in native code) its types not yet
done run again one type a process, so that the one that died takes only itself down and is listed as such;
``--from TYPE`` resumes an interrupted run, and ``--jsonl FILE`` appends each result as it comes.

``--shapes`` lists the model types by shape (``shape``: the class that builds the config and whether it holds towers,
experts, an encoder and a decoder), ``--sample`` runs ``SAMPLE``, a model type of each.

Usage: python tools/explain_registry.py [--only TYPE ... | --sample] [--from TYPE] [--json FILE] [--jsonl FILE]
       [--no-isolate] [--as-limit BYTES] [--timeout S] [--shapes]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ncclcheck.explain.core import explain, size_table  # noqa: E402
from ncclcheck.explain.frommodel import _AUTO_CLASSES, _build_errors, _shrunk_dict, one_line  # noqa: E402
from ncclcheck.explain.models import Model, merge  # noqa: E402
from ncclcheck.explain.ops import STRATEGIES  # noqa: E402
from ncclcheck.explain.source import load  # noqa: E402

# Layer counts a config may hold; lists as long as one of them (layer_types, per-layer windows) are cut alike.
LAYER_KEYS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers", "decoder_layers",
              "num_encoder_layers", "num_decoder_layers", "depth", "text_layers", "vision_layers")
SMALL_LAYERS = 2
BUILT, REFUSED, FAILED = "built", "refused", "failed"
AS_LIMIT = 6_000_000_000  # bytes of address space each model type's process may map
TIMEOUT = 900  # seconds a model type may take (the largest defaults, on the meta device, take minutes)
NOT_BUILT = "could not build this model"  # the words of source.load's warning when transformers fails


def model_types() -> list[str]:
    """Every model type the installed transformers registers, sorted."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    return sorted(CONFIG_MAPPING.keys())


# A family's shape: the class that builds its config (the first of explain's auto classes whose mapping names the
# model type, else the tower's own model class) and what the default config holds: sub-configs (towers), experts, an
# encoder and a decoder. One model type of each shape is the sample ``make test`` runs (``SAMPLE``).
TOWER = "own class"
NO_DEFAULT = "no default config"
EXPERTS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")


def _builder(model_type: str) -> str:
    import transformers

    for name in _AUTO_CLASSES:
        auto = getattr(transformers, name, None)
        names = getattr(getattr(auto, "_model_mapping", None), "_model_mapping", {})
        if model_type in names:
            return name
    return TOWER


def _holds(d: dict, found: set[str]) -> set[str]:
    for k in EXPERTS:
        n = d.get(k)
        if isinstance(n, int) and not isinstance(n, bool) and n > 1:
            found.add("experts")
    if d.get("is_encoder_decoder") is True:
        found.add("encoder-decoder")
    for v in d.values():
        if isinstance(v, dict) and "model_type" in v:
            found.add("towers")
            _holds(v, found)
    return found


def shape(model_type: str) -> str:
    """The model type's shape: its builder and, in this order, towers, experts, encoder-decoder where it has them
    (``AutoModelForCausalLM+experts``); ``NO_DEFAULT`` where its config class has no default config."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    try:
        d = CONFIG_MAPPING[model_type]().to_dict()
    except _build_errors():
        return NO_DEFAULT
    held = _holds(d, set())
    return "+".join([_builder(model_type), *(k for k in ("towers", "experts", "encoder-decoder") if k in held)])


# A model type of each shape of transformers 5.23's registry (``--shapes`` lists every shape's model types), the
# quickest of those tried (0.2-5 s each on the 2-core VM, nemo_speechlm 28 s: its shape's only one); the first
# sample's (llama, bert, t5, vit, whisper, qwen2_moe, clip, blip_text_model) kept.
SAMPLE = {
    "AutoModel": ("vit",),
    "AutoModel+encoder-decoder": ("moonshine",),
    "AutoModel+experts": ("openai_privacy_filter",),
    "AutoModel+towers": ("clip",),
    "AutoModel+towers+encoder-decoder": ("dia",),
    "AutoModelForCausalLM": ("llama", "bert"),
    "AutoModelForCausalLM+encoder-decoder": ("whisper",),
    "AutoModelForCausalLM+experts": ("qwen2_moe",),
    "AutoModelForCausalLM+towers": ("git",),
    "AutoModelForCausalLM+towers+encoder-decoder": ("musicgen_melody",),
    "AutoModelForCausalLM+towers+experts": ("llama4",),
    "AutoModelForImageTextToText+encoder-decoder": ("udop",),
    "AutoModelForImageTextToText+experts": ("mistral4",),
    "AutoModelForImageTextToText+towers": ("llava",),
    "AutoModelForImageTextToText+towers+encoder-decoder": ("vision-encoder-decoder",),
    "AutoModelForImageTextToText+towers+experts": ("aria",),
    "AutoModelForSeq2SeqLM+encoder-decoder": ("t5",),
    "AutoModelForSeq2SeqLM+experts+encoder-decoder": ("switch_transformers",),
    "AutoModelForSeq2SeqLM+towers": ("qwen2_audio",),
    "AutoModelForSeq2SeqLM+towers+encoder-decoder": ("encoder-decoder",),
    "AutoModelForSeq2SeqLM+towers+experts": ("nemo_speechlm",),
    NO_DEFAULT: ("nougat",),
    TOWER: ("blip_text_model",),
    f"{TOWER}+encoder-decoder": ("pop2piano",),
    f"{TOWER}+experts": ("step3p5",),
    f"{TOWER}+towers": ("colpali",),
    f"{TOWER}+towers+encoder-decoder": ("rag",),
    f"{TOWER}+towers+experts": ("qwen3_omni_moe",),
}


def _fewer_layers(d: dict) -> dict:
    out = dict(d)
    for k, v in d.items():
        if isinstance(v, dict):
            out[k] = _fewer_layers(v)
    for k in LAYER_KEYS:
        n = d.get(k)
        if isinstance(n, int) and not isinstance(n, bool) and n > SMALL_LAYERS:
            out[k] = SMALL_LAYERS
            for key, v in d.items():
                if isinstance(v, list) and len(v) == n and key not in LAYER_KEYS:
                    out[key] = v[:SMALL_LAYERS]
    return out


def scaled(model_type: str) -> list[object]:
    """The model type's default config scaled down, then the default itself (each a config object; the scaled
    one left out where the config class refuses it)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    cls = CONFIG_MAPPING[model_type]
    default = cls()
    out: list[object] = []
    try:
        out.append(cls.from_dict(_fewer_layers(_shrunk_dict(default.to_dict()))))
    except _build_errors():
        pass
    return [*out, default]


def ask(folder: str) -> tuple[str, str]:
    """Explain's answer for the config saved in ``folder``: (outcome, why)."""
    loaded = load(Model(), config=folder, use_cache=False)
    if loaded.table is None:
        refusal = [w for w in loaded.warnings if NOT_BUILT in w]
        if len(refusal) == 1 and "\n" not in refusal[0]:
            return REFUSED, refusal[0].partition(f"{NOT_BUILT}: ")[2].removesuffix("; the built-in layouts are used "
                                                                                  "instead")
        return FAILED, f"no table and no one-line refusal: {loaded.warnings}"
    table = loaded.table
    shape = merge(loaded.model, world_size=4, batch=2, seq=16, tp=2)
    n = sum(p.numel for p in table.params) or 1
    for strategy in (None, *STRATEGIES):
        explain(n, shape, strategy=strategy, table=table)
    size_table(shape, ("float32", "bfloat16"), table)
    return BUILT, table.source


def check(model_type: str) -> tuple[str, str]:
    """One model type's outcome and why: the scaled config first; the default where the scaled one is refused."""
    try:
        configs = scaled(model_type)
    except _build_errors() as exc:
        return REFUSED, f"the config class has no default config: {type(exc).__name__}: {one_line(exc)}"
    outcome, why = FAILED, ""
    for config in configs:
        with tempfile.TemporaryDirectory() as folder:
            try:
                config.save_pretrained(folder)  # type: ignore[attr-defined]
                outcome, why = ask(folder)
            except Exception as exc:  # noqa: BLE001 (a tool that lists every defect rather than stopping at one)
                frame = traceback.extract_tb(exc.__traceback__)[-1]
                return FAILED, f"{type(exc).__name__}: {exc} ({frame.filename}:{frame.lineno})"
        if outcome == BUILT:
            break
    return outcome, why


def isolated(model_types: list[str], as_limit: int, timeout: int) -> dict[str, tuple[str, str]]:
    """``check`` of each model type in a process of its own chunk, its address space capped (the imports, most of
    a small type's time, paid once a chunk): a chunk that dies (killed for memory, a crash in native code) or runs
    past ``timeout`` a type is run again one type a process, so that the type that died fails alone, and says so."""
    cmd = ["prlimit", f"--as={as_limit}", "--", sys.executable, os.path.abspath(__file__), "--no-isolate",
           "--result", "--only", *model_types]
    out: dict[str, tuple[str, str]] = {}
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout * len(model_types), check=False)
        stdout, stderr, why = done.stdout, done.stderr, f"the process ended with exit {done.returncode}"
    except subprocess.TimeoutExpired as exc:
        stdout, stderr = _text(exc.stdout), _text(exc.stderr)
        why = f"ran past {timeout} s"
    for line in stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            out[r["model_type"]] = (r["outcome"], r["why"])
    rest = [t for t in model_types if t not in out]
    if len(rest) == 1 and len(model_types) == 1:
        tail = " | ".join(stderr.strip().splitlines()[-2:])
        return {rest[0]: (FAILED, f"{why} and no result: {tail}")}
    for t in rest:
        out.update(isolated([t], as_limit, timeout))
    return out


def _text(b: bytes | str | None) -> str:
    return b.decode(errors="replace") if isinstance(b, bytes) else b or ""


CHUNK = 20  # model types a process


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", help="these model types only")
    ap.add_argument("--sample", action="store_true", help="the sample only (a model type of each shape)")
    ap.add_argument("--shapes", action="store_true", help="list each shape's model types and build nothing")
    ap.add_argument("--from", dest="start", help="the model types from this one on (alphabetically)")
    ap.add_argument("--json", help="write every model type's result to this file")
    ap.add_argument("--jsonl", help="append each model type's result to this file as it comes")
    ap.add_argument("--no-isolate", action="store_true", help="run every model type in this process")
    ap.add_argument("--as-limit", type=int, default=AS_LIMIT, help="bytes of address space a model type may map")
    ap.add_argument("--timeout", type=int, default=TIMEOUT, help="seconds a model type may take")
    ap.add_argument("--result", action="store_true", help=argparse.SUPPRESS)  # one JSON line: isolated()'s channel
    args = ap.parse_args()
    types = args.only or ([t for ts in SAMPLE.values() for t in ts] if args.sample else model_types())
    if args.shapes:
        shapes: dict[str, list[str]] = {}
        for t in types:
            shapes.setdefault(shape(t), []).append(t)
        for k, ts in sorted(shapes.items()):
            print(f"{k} ({len(ts)}): {' '.join(ts)}")
        return 0
    if args.start:
        types = [t for t in types if t >= args.start]
    isolate = not args.no_isolate and len(types) > 1
    results = {}
    start = time.perf_counter()
    for chunk in (types[i:i + CHUNK] for i in range(0, len(types), CHUNK)):
        t0 = time.perf_counter()
        if isolate:
            got = isolated(chunk, args.as_limit, args.timeout)
            seconds = round((time.perf_counter() - t0) / len(chunk), 2)  # the chunk's time, shared
            timed = {t: (*got[t], seconds) for t in chunk}
        else:
            timed = {}
            for t in chunk:
                t0 = time.perf_counter()
                outcome, why = check(t)
                timed[t] = (outcome, why, round(time.perf_counter() - t0, 2))
                if args.result:
                    print(json.dumps({"model_type": t, "outcome": outcome, "why": why}), flush=True)
        for t, (outcome, why, seconds) in timed.items():
            results[t] = {"outcome": outcome, "why": why, "seconds": seconds}
            if args.result:
                continue
            print(f"{t}: {outcome} ({seconds} s){'' if outcome == BUILT else ': ' + why}", flush=True)
            if args.jsonl:
                with open(args.jsonl, "a", encoding="utf-8") as f:
                    f.write(json.dumps({"model_type": t, **results[t]}) + "\n")
    counts = {k: sum(r["outcome"] == k for r in results.values()) for k in (BUILT, REFUSED, FAILED)}
    print(f"{len(types)} model types in {time.perf_counter() - start:.0f} s: " +
          ", ".join(f"{v} {k}" for k, v in counts.items()))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1, sort_keys=True)
    return 1 if counts[FAILED] else 0


if __name__ == "__main__":
    raise SystemExit(main())
