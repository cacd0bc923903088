"""Every fixture's analyze-log answer written to a folder, and two such folders compared.

A refactor that must not change behaviour (issue 40) is checked this way: `golden.py write before/` on the old
code, `golden.py write after/` on the new, `golden.py compare before/ after/` lists every input whose JSON, human
report or exit code differs. Each input under tests/data (every file and every folder but explain's) and the
bundled example is read twice, in-process: `--json` and the plain report at 120 columns without colour.

    python tools/golden.py write /tmp/golden/before
    python tools/golden.py compare /tmp/golden/before /tmp/golden/after
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
SKIP = {"explain", "expected", "expected4", "expected_failures", "hosts"}
# A blind set (tests/data/blind_threads*, its README) is read by bench_truth alone, never by a fixture tool
BLIND = "blind_threads"


def inputs() -> list[Path]:
    """Every fixture input, files and folders, in a fixed order."""
    found: list[Path] = [ROOT / "examples" / "incident-8rank"]
    for top in sorted(DATA.iterdir()):
        if top.name in SKIP or top.name.startswith(BLIND) or not top.is_dir():
            continue
        for path in sorted(top.rglob("*")):
            if path.suffix in {".py", ".sh", ".md"}:
                continue
            found.append(path)
    return found


def _name(path: Path) -> str:
    rel = path.relative_to(ROOT).as_posix()
    return rel.replace("/", "__") + "." + hashlib.sha1(rel.encode()).hexdigest()[:6]


def write(out: Path) -> None:
    os.environ.update({"NO_COLOR": "1", "COLUMNS": "120", "TERM": "dumb"})
    from typer.testing import CliRunner

    from ncclcheck.cli import app

    out.mkdir(parents=True, exist_ok=True)
    runner = CliRunner()
    os.chdir(ROOT)
    paths = inputs()
    for i, path in enumerate(paths):
        rel = path.relative_to(ROOT).as_posix()
        for mode, extra in (("json", ["--json"]), ("text", [])):
            result = runner.invoke(app, ["analyze-log", rel, "--jobs", "1", *extra])
            text = f"exit {result.exit_code}\n--- stdout\n{result.stdout}--- stderr\n{result.stderr}"
            (out / f"{_name(path)}.{mode}").write_text(text)
        if i % 100 == 0:
            print(f"{i}/{len(paths)}", file=sys.stderr)


def compare(a: Path, b: Path) -> int:
    names = sorted({p.name for p in a.iterdir()} | {p.name for p in b.iterdir()})
    differ = 0
    for name in names:
        left, right = a / name, b / name
        if not left.exists() or not right.exists():
            print(f"only in {'after' if left.exists() is False else 'before'}: {name}")
            differ += 1
        elif left.read_text() != right.read_text():
            print(f"differs: {name}")
            differ += 1
    print(f"{len(names)} outputs compared, {differ} differ")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("out", type=Path)
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.cmd == "write":
        write(args.out)
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
