"""The start-up cache (ncclcheck/startcache.py) makes the same patterns and dataclasses as compiling afresh.

Each run is its own process (``install`` replaces the compilers for the rest of the process): one without the cache,
one that fills it, one that reads it, and one over a damaged file. Each prints every pattern and dataclass the
analyze-log modules define, and the patterns are also held ``==`` (same program) to the compiler's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = r"""
import dataclasses, inspect, json, re, sys
from ncclcheck import startcache
if sys.argv[1] == "on":
    startcache.install()
    startcache._added[0] = 0
import ncclcheck.job.analyze, ncclcheck.job.records, ncclcheck.job.runs, ncclcheck.job.verdict  # analyze-log's
from ncclcheck.evidence.types import Loc
seen, unlike = {}, []
for name, module in sorted(sys.modules.items()):
    if not name.startswith("ncclcheck"):
        continue
    for attr, value in sorted(vars(module).items()):
        if isinstance(value, re.Pattern):
            seen[f"{name}.{attr}"] = [value.pattern if isinstance(value.pattern, str) else repr(value.pattern),
                                      value.flags, value.groups, sorted(value.groupindex.items())]
            if sys.argv[1] == "on" and startcache._state["compile"](value.pattern, value.flags) != value:
                unlike.append(f"{name}.{attr}")
        elif isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == name:
            seen[f"{name}.{attr}"] = [str(inspect.signature(value)), repr(value.__init__.__annotations__),
                                      [m for m in ("__eq__", "__hash__", "__repr__", "__setattr__") if m in vars(value)]]
a, b = Loc("x.log", 3), Loc("x.log", 3)
try:
    a.line = 4
    frozen = False
except dataclasses.FrozenInstanceError:
    frozen = True
behaves = [a == b, hash(a) == hash(b), repr(a), frozen]
added = startcache._added[0] if sys.argv[1] == "on" else None
if sys.argv[1] == "on":
    startcache.keep()
print(json.dumps({"seen": seen, "unlike": unlike, "behaves": behaves, "added": added}))
"""


def _run(mode: str, cache: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NCCLCHECK_CACHE_DIR": str(cache)}
    env.pop("NCCLCHECK_NO_CACHE", None)
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, env=env, cwd=ROOT,
                          check=True)
    return json.loads(done.stdout)


def test_kept_patterns_and_dataclasses_are_the_compilers_own(tmp_path: Path) -> None:
    fresh = _run("off", tmp_path)
    filled = _run("on", tmp_path)
    kept = list(tmp_path.glob("start-*.marshal"))
    read = _run("on", tmp_path)
    assert len(fresh["seen"]) > 300 and fresh["behaves"] == [True, True, "Loc(file='x.log', line=3)", True]
    assert len(kept) == 1 and filled["added"] > 500  # every pattern and method compiled the first time, and kept
    assert read["added"] == 0  # the second run compiled none of them itself
    for run in (filled, read):
        assert run["unlike"] == []
        assert run["seen"] == fresh["seen"] and run["behaves"] == fresh["behaves"]


def test_a_damaged_file_compiles_as_before(tmp_path: Path) -> None:
    fresh = _run("off", tmp_path)
    _run("on", tmp_path)
    (kept,) = tmp_path.glob("start-*.marshal")
    kept.write_bytes(kept.read_bytes()[: 1000])
    damaged = _run("on", tmp_path)
    assert damaged["unlike"] == [] and damaged["seen"] == fresh["seen"] and damaged["added"] > 500
