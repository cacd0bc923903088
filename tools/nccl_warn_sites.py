"""Derive NCCL's WARN sites from its own source: every ``WARN("format", ...)`` call, its file, line and format string.

NCCL logs a fatal condition with its WARN macro (src/include/debug.h: ``#define WARN(...) ncclDebugLogInternal(
NCCL_LOG_WARN, NCCL_ALL, __FILE__, __func__, __LINE__, __VA_ARGS__)``), which prints ``host:pid:tid [dev]
file.cc:LINE NCCL WARN <text>`` since 2.3: the source file is the layer that failed (job/layers.toml maps files to
layers). A WARN text quoted without its header, or kept by PyTorch after ``Last error:`` (ncclGetLastError), is
found by its format string instead: this tool turns each format into a bounded regex and writes them, with the file
and the releases each was seen in, to ncclcheck/job/warn_sites.json, which job/layers.py reads.

    python tools/nccl_warn_sites.py [--repo /work/.mirror/NVIDIA+nccl/repo] [--out ncclcheck/job/warn_sites.json]

The repository is a clone (or a bare mirror) of https://github.com/NVIDIA/nccl; the releases read are the last
patch release of each minor version from 2.3 on (the tags ``vX.Y.Z-N``). A format is kept when its first line holds
a literal run of at least ``MIN_KEY`` characters: a format of conversions alone (``"%s"``) or a word (``"Cuda
failure '%s'"`` of include/checks.h is kept, its file is a header whose printed file is the caller's) says nothing
by itself. Only the format's first line is kept: a WARN text of several lines is read a line at a time.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path("/work/.mirror/NVIDIA+nccl/repo")
OUT = Path(__file__).resolve().parent.parent / "ncclcheck" / "job" / "warn_sites.json"
MIN_KEY = 12
_TAG = re.compile(r"^v(\d+)\.(\d+)\.(\d+)-(\d+)$")
_SOURCE = re.compile(r"\.(?:cc|cu|h|c|cpp)$")
_CALL = re.compile(r"\bWARN\(")
# A printf conversion (C's): flags, width, precision, length, the conversion.
_CONV = re.compile(r"%[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|z|j|t|L)?([diouxXeEfgGcsp%])")
# <inttypes.h>'s format macros between literals ("%" PRIx64): the conversion they stand for.
_PRI = re.compile(r"PRI([diouxX])(?:8|16|32|64|PTR|MAX)")
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'", "r": ""}
# Each conversion as a bounded class: the regex stays linear, and a text that NCCL cut or a paste wrapped still
# matches up to where it holds.
_AS_REGEX = {"d": r"-?\d{1,20}", "i": r"-?\d{1,20}", "u": r"\d{1,20}", "o": r"[0-7]{1,22}",
             "x": r"(?:0x)?[0-9a-fA-F]{1,20}", "X": r"(?:0x)?[0-9a-fA-F]{1,20}", "p": r"(?:0x[0-9a-fA-F]{1,16}|\(nil\))",
             "e": r"[-+\d.eE]{1,30}", "E": r"[-+\d.eE]{1,30}", "f": r"[-+\d.eE]{1,30}", "g": r"[-+\d.eEinfa]{1,30}",
             "G": r"[-+\d.eEINFA]{1,30}", "c": r".", "s": r".{0,300}?", "%": "%"}


def releases(repo: Path) -> list[str]:
    """The last patch release tag of each minor version from 2.3 on, oldest first."""
    tags = subprocess.run(["git", "-C", str(repo), "tag"], capture_output=True, text=True, check=True).stdout.split()
    last: dict[tuple[int, int], tuple[tuple[int, int, int, int], str]] = {}
    for t in tags:
        if (m := _TAG.match(t)) and (int(m[1]), int(m[2])) >= (2, 3):
            v = (int(m[1]), int(m[2]), int(m[3]), int(m[4]))
            if v > last.get(v[:2], ((0, 0, 0, 0), ""))[0]:
                last[v[:2]] = (v, t)
    return [t for _, (_, t) in sorted(last.items())]


def _files(repo: Path, tag: str) -> list[str]:
    out = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "--name-only", tag, "--", "src"],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    return [f for f in out if _SOURCE.search(f) and "/nvtx" not in f]


def _show(repo: Path, tag: str, path: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "show", f"{tag}:{path}"], capture_output=True, check=True
                          ).stdout.decode("utf-8", "replace")


def _literal(body: str) -> str:
    """A C string literal's body with its escapes resolved."""
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m[1], m[1]), body)


def format_at(text: str, start: int) -> str | None:
    """The format string of the WARN call whose argument list starts at ``start``: its adjacent literals joined,
    an inttypes macro between them read as its conversion; None where the first argument is no literal."""
    i, parts = start, []
    while i < len(text):
        c = text[i]
        if c.isspace():
            i += 1
        elif c == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            parts.append(_literal(text[i + 1:j]))
            i = j + 1
        elif m := _PRI.match(text, i):
            parts.append(m[1])  # "%" PRIx64 -> "%x"
            i = m.end()
        else:
            break
    return "".join(parts) if parts else None


def sites(text: str) -> Iterator[tuple[int, str]]:
    """(line, format) of each WARN call of a source file."""
    for m in _CALL.finditer(text):
        if (fmt := format_at(text, m.end())) is not None:
            yield text.count("\n", 0, m.start()) + 1, fmt


def to_regex(fmt: str) -> tuple[str, str]:
    """(bounded regex, its longest literal run) of a format's first line."""
    first = fmt.split("\n", 1)[0].rstrip()
    out, literals, at = [], [], 0
    for m in _CONV.finditer(first):
        lit = first[at:m.start()]
        literals.append(lit)
        out.append(_escape(lit))
        out.append(_AS_REGEX[m[1]])
        at = m.end()
    tail = first[at:]
    literals.append(tail)
    out.append(_escape(tail))
    while out and out[-1] in ("", _AS_REGEX["s"]):  # a trailing "%s" (or nothing) constrains nothing
        out.pop()
    return "".join(out), max((x.strip() for x in literals), key=len)


def _escape(lit: str) -> str:
    """A literal run: spaces as a bounded run of whitespace (a paste may collapse or widen them)."""
    return r"\s{1,4}".join(re.escape(w) for w in lit.split(" ")) if lit.strip() else re.escape(lit)


def version(tag: str) -> str:
    m = _TAG.match(tag)
    assert m is not None
    return f"{m[1]}.{m[2]}.{m[3]}"


def collect(repo: Path, tags: list[str]) -> list[dict[str, Any]]:
    """Every format with a literal run of MIN_KEY characters: its regex and key, the files that WARN it (newest
    file:line of each) and the first and last release it is in."""
    found: dict[str, dict[str, Any]] = {}
    for tag in tags:
        for path in _files(repo, tag):
            text = _show(repo, tag, path)
            if "WARN(" not in text:
                continue
            for line, fmt in sites(text):
                pattern, key = to_regex(fmt)
                if len(key) < MIN_KEY:
                    continue
                site = found.setdefault(pattern, {"format": fmt.split("\n", 1)[0], "pattern": pattern, "key": key,
                                                  "files": {}, "first": version(tag), "last": version(tag)})
                site["files"][path.removeprefix("src/")] = line
                site["last"] = version(tag)
    return [dict(s, files=dict(sorted(s["files"].items()))) for s in sorted(found.values(), key=lambda s: s["pattern"])]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, default=REPO)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    tags = releases(args.repo)
    head = subprocess.run(["git", "-C", str(args.repo), "rev-parse", tags[-1]], capture_output=True, text=True,
                          check=True).stdout.strip()
    data = {
        "about": "NCCL's WARN sites: each format string's first line as a bounded regex, the source files that WARN "
                 "it (file: line in the newest release that has it) and the first and last release it is in. "
                 "Generated by tools/nccl_warn_sites.py from https://github.com/NVIDIA/nccl; do not edit by hand.",
        "source": f"https://github.com/NVIDIA/nccl/tree/{tags[-1]} ({head})",
        "releases": [version(t) for t in tags],
        "sites": collect(args.repo, tags),
    }
    args.out.write_text(json.dumps(data, indent=0, ensure_ascii=False) + "\n")
    print(f"{args.out}: {len(data['sites'])} formats from {len(tags)} releases ({data['releases'][0]} to "
          f"{data['releases'][-1]})")


if __name__ == "__main__":
    main()
