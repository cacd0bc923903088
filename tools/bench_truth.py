"""How often analyze-log gives the verdict a public thread confirmed: right/total over tests/data/public_threads.

Each case is a log as it was posted (``NN-project-issue-slug.log``) and a sidecar JSON written from the thread, not
from ncclcheck: the verdict kind (a list where the posted log cannot decide between two), the catalogue cause (null
where the catalogue has none for it: not compared), the culprit ranks (global; [] where the thread shows none) and
a regex the report's fix text must match (its next steps, the cause's fixes and the findings' fixes). The log is
read in-process through the same analyze function and JSON renderer as ``ncclcheck analyze-log --json``.

    python tools/bench_truth.py [-v] [--corpus DIR] [CASE ...]

``--corpus`` scores another folder of the same layout (a blind set, tests/data/blind_threads4, is scored this way
before and after rules are written); a folder without KNOWN_MISSES.md has no known misses.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from ncclcheck.evidence.reader import resolve
from ncclcheck.job.analyze import analyze
from ncclcheck.render.json_out import analysis_json

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "public_threads"
MISSES = CORPUS / "KNOWN_MISSES.md"
FIELDS = ("source", "project", "confirmation", "kind", "cause", "culprit_ranks", "fix")
_MISS = re.compile(r"^- `([^`]+)`: (.+)$")


def known_misses(corpus: Path = CORPUS) -> dict[str, str]:
    """The cases analyze-log gets wrong today and the mechanism that misses each (KNOWN_MISSES.md, one place)."""
    misses = corpus / MISSES.name
    if not misses.exists():
        return {}
    return {m[1]: m[2] for line in misses.read_text().splitlines() if (m := _MISS.match(line))}


def cases(corpus: Path = CORPUS) -> list[Path]:
    """Every case's log, in file-name order."""
    return sorted(corpus.glob("*.log"))


def truth(log: Path) -> dict:
    """The sidecar of one case, checked for its fields."""
    t = json.loads(log.with_suffix(".json").read_text())
    missing = [f for f in FIELDS if f not in t]
    if missing:
        raise ValueError(f"{log.with_suffix('.json').name}: missing {', '.join(missing)}")
    return t


def verdict_of(log: Path) -> dict:
    """The verdict object of ``analyze-log --json`` for one file."""
    problems: list[str] = []
    sources = resolve([str(log)], lambda e: problems.append(str(e)))
    if problems:
        raise ValueError(f"{log.name}: {'; '.join(problems)}")
    return analysis_json(analyze(sources, workers=1))["verdict"]


def fix_text(v: dict) -> str:
    """What the report tells the user to do: next steps, the cause's fixes, the findings' fixes."""
    cause = v["cause"] or {}
    return "\n".join([*v["next_steps"], *cause.get("fix", []), *(f["fix"] or "" for f in v["findings"])])


def differences(log: Path, verdict: dict | None = None) -> list[str]:
    """What the verdict got wrong against the thread's truth, one phrase each; empty when right. ``verdict`` is the
    log's verdict object where the caller has it already (the tests share one analysis of each input)."""
    t, v = truth(log), verdict if verdict is not None else verdict_of(log)
    out = []
    kinds = t["kind"] if isinstance(t["kind"], list) else [t["kind"]]
    if v["kind"] not in kinds:
        out.append(f"kind {v['kind']} (thread: {' or '.join(kinds)})")
    got_cause = (v["cause"] or {}).get("kind")
    if t["cause"] is not None and got_cause != t["cause"]:
        out.append(f"cause {got_cause or 'none'} (thread: {t['cause']})")
    if v["culprit_ranks"] != t["culprit_ranks"]:
        out.append(f"culprits {v['culprit_ranks']} (thread: {t['culprit_ranks']})")
    if not re.search(t["fix"], fix_text(v), re.IGNORECASE):
        out.append(f"fix text lacks /{t['fix']}/")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="cases whose file name contains one of these")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each case's verdict summary too")
    ap.add_argument("--corpus", type=Path, default=CORPUS, help="the folder of cases (default: %(default)s)")
    args = ap.parse_args(argv)
    logs = [p for p in cases(args.corpus) if not args.names or any(n in p.name for n in args.names)]
    misses = known_misses(args.corpus)
    right = 0
    projects = set()
    for log in logs:
        projects.add(truth(log)["project"])
        diff = differences(log)
        right += not diff
        print(f"{'right' if not diff else 'WRONG'}  {log.stem}" + (f": {'; '.join(diff)}" if diff else ""))
        if diff and log.stem in misses:
            print(f"       known miss: {misses[log.stem]}")
        if args.verbose:
            print(f"       {verdict_of(log)['summary']}")
    print(f"\n{right}/{len(logs)} right ({len(projects)} projects)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
