"""How long `ncclcheck explain --config` takes and how much memory it holds, cold and warm (``make bench-explain``).

Each figure is the median of fresh processes of this interpreter, run interleaved (bare import, cold, warm, ...)
so that machine noise hits them alike:
- bare: ``python -c "import torch, transformers"``, the floor of anything that builds a model with transformers;
- class: ``python -c "import gc; gc.disable(); import torch, transformers; transformers.LlamaForCausalLM"``, the
  floor of anything that builds this model (its modeling module and what that imports: transformers' model
  machinery, torch._dynamo, sympy...), with the collector off as the CLI runs (it saves ~15% of a cold import);
- cold: explain with an empty table cache (the model built on the meta device, its gradient-ready order learnt);
- warm: explain again with the table in the cache (no torch imported);
- help: ``ncclcheck --help``, the start-up every command pays (issue 43: warm within 1.5x of it).
Peak memory is the process's maximum resident set (``wait4``). Configs: a three-layer Llama (the ground truth's)
and Llama-3-8B's public config.

``--tree DIR`` runs another checkout's ncclcheck (for before/after figures); its cache flags are ignored by trees
that have no cache, so their warm runs are cold ones.

Usage: python tools/bench_explain_speed.py [--runs 5] [--tree DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRUTH_CONFIG = os.path.join(ROOT, "tests", "data", "explain", "truth", "ddp-llama-w2.json")
LLAMA3_8B = {"architectures": ["LlamaForCausalLM"], "attention_bias": False, "bos_token_id": 128000,
             "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336,
             "max_position_embeddings": 8192, "model_type": "llama", "num_attention_heads": 32,
             "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
             "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 128256}
# Runs the CLI from the tree given as the first argument (sys.path first, ahead of an editable install's finder).
CLI = ("import sys, importlib.machinery\ntree = sys.argv.pop(1)\nif tree:\n    sys.path.insert(0, tree)\n"
       "    sys.meta_path.insert(0, importlib.machinery.PathFinder)\nfrom ncclcheck.cli import main\nmain()")
BARE = "import torch, transformers"
WARM_TARGET = 1.5  # a warm explain (the table from the cache) takes at most this many times ncclcheck --help


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system: steadier than wall time on a busy machine) and peak resident
    memory (bytes) of one fresh process, which must succeed."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        _, status, usage = os.wait4(p.pid, 0)
        seconds = time.perf_counter() - start
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            err.seek(0)
            raise SystemExit(f"explain failed ({p.returncode}): {err.read().decode(errors='replace')[-500:]}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def bench(config: str, arch: str, runs: int, tree: str) -> dict[str, tuple[float, float, int]]:
    """Medians of bare, class, cold and warm runs for one config."""
    explain = [sys.executable, "-c", CLI, tree, "explain", "--config", config, "--numel", "17304696", "--op",
               "ALLREDUCE"]
    out: dict[str, list[tuple[float, float, int]]] = {"bare": [], "class": [], "cold": [], "warm": [], "help": []}
    with tempfile.TemporaryDirectory() as warm_cache:
        env = {**os.environ, "NCCLCHECK_CACHE_DIR": warm_cache}
        env.pop("NCCLCHECK_NO_CACHE", None)
        measure(explain, env)  # fills the warm cache
        for _ in range(runs):
            out["bare"].append(measure([sys.executable, "-c", BARE], env))
            out["class"].append(measure([sys.executable, "-c", f"import gc; gc.disable(); {BARE}; transformers.{arch}"],
                                        env))
            with tempfile.TemporaryDirectory() as empty:
                out["cold"].append(measure(explain, {**env, "NCCLCHECK_CACHE_DIR": empty}))
            out["warm"].append(measure(explain, env))
            out["help"].append(measure([sys.executable, "-c", CLI, tree, "--help"], env))
    return {k: tuple(statistics.median(x[i] for x in v) for i in range(3)) for k, v in out.items()}  # type: ignore


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="fresh processes of each kind (median reported)")
    ap.add_argument("--tree", default="", help="another checkout's root to run instead of this one")
    args = ap.parse_args()
    with open(TRUTH_CONFIG, encoding="utf-8") as f:
        small = json.load(f)["config"]
    with tempfile.TemporaryDirectory() as tmp:
        configs = {}
        for name, cfg in (("3-layer Llama", small), ("Llama-3-8B", LLAMA3_8B)):
            path = os.path.join(tmp, name.replace(" ", "-") + ".json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(cfg, f)
            configs[name] = (path, cfg["architectures"][0])
        print(f"explain --config, median of {args.runs} fresh processes each (interleaved); "
              f"code: {args.tree or ROOT}")
        print("wall s / CPU s / peak MiB")
        print(f"{'config':14} {'bare import':>22} {'class import':>22} {'cold':>22} {'warm':>22} {'--help':>22} "
              f"{'cold/bare':>9} {'cold/class':>10} {'warm/bare':>9} {'warm/help':>9}  (ratios of CPU time)")
        worst = 0.0
        for name, (path, arch) in configs.items():
            r = bench(path, arch, args.runs, args.tree)

            def cell(k: str, r: dict = r) -> str:
                return f"{r[k][0]:6.2f} / {r[k][1]:5.2f} / {r[k][2] / 2**20:4.0f}"

            print(f"{name:14} {cell('bare'):>22} {cell('class'):>22} {cell('cold'):>22} {cell('warm'):>22} "
                  f"{cell('help'):>22} {r['cold'][1] / r['bare'][1]:9.2f} {r['cold'][1] / r['class'][1]:10.2f} "
                  f"{r['warm'][1] / r['bare'][1]:9.2f} {r['warm'][1] / r['help'][1]:9.2f}")
            worst = max(worst, r["warm"][1] / r["help"][1])
    print(f"warm / --help (CPU): at most {worst:.2f}, target {WARM_TARGET}")
    return 0 if worst <= WARM_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
