"""Benchmark: ways to find the lines of a block that hold any of the reader's keep words, on real blocks.

Every candidate that is installed searches the same 2 MiB blocks (cut at their last newline, as the reader cuts
them) of a corpus for ``reader.WHOLE_WORDS`` and must find the very lines the word-by-word search finds:

* StringZilla's ``find``, word by word, each search moving past its hit's line (the stringzilla engine);
* Hyperscan, every word and the rest of its line as one expression; and the reader's own pass, which finds the
  anchors' triggers' lines in the same pass;
* ahocorasick-rs (``pip install ahocorasick-rs``): every match of every word, in Rust;
* pyahocorasick (``pip install pyahocorasick``): a text automaton, so each block is decoded first;
* one ``re`` alternation of the words (a few blocks only: it is slow).

Usage: python tools/bench_words.py DIR [--files 4]   (DIR: a corpus of *.log, e.g. .bench/chatty-512mib-64r)
Prints milliseconds per block (best of three passes over all blocks) and whether the lines found are the same; and
how many pieces of 2 and 3 bytes a greedy cover of the words takes (the searches a cheaper pure-Python scheme would
need, before checking each hit).
"""

from __future__ import annotations

import argparse
import glob
import importlib
import os
import re
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ncclcheck.evidence import reader  # noqa: E402

WORDS = reader.WHOLE_WORDS
Search = Callable[[bytearray], list[int]]


def blocks_of(files: list[str]) -> list[bytearray]:
    out = []
    for f in files:
        with open(f, "rb") as fh:
            while block := fh.read(reader.BLOCK):
                out.append(bytearray(block[: block.rfind(b"\n") + 1]))
    return out


def line_starts(buf: bytearray, offsets: list[int]) -> list[int]:
    """The start of the line of each offset, once each, in order."""
    return sorted({buf.rfind(b"\n", 0, at) + 1 for at in offsets})


def word_by_word(buf: bytearray) -> list[int]:
    find = reader._sz.Str(buf).find
    hits = []
    for word in WORDS:
        at = find(word, 0, len(buf))
        while at != -1:
            hits.append(at)
            at = find(word, buf.find(b"\n", at) + 1, len(buf))
    return line_starts(buf, hits)


def hyperscan_words() -> Search:
    """Every word and the rest of its line as one expression (the words alone, as the other candidates search)."""
    words = b"|".join(b"".join(b"\\x%02x" % c for c in word) for word in WORDS)
    database = reader._hs.Database(mode=reader._hs.HS_MODE_BLOCK)
    database.compile(expressions=[b"(?:" + words + rb")[^\n]*\n"], ids=[0], elements=1, flags=[0])

    def search(buf: bytearray) -> list[int]:
        ends: list[int] = []
        database.scan(buf, match_event_handler=lambda _id, _start, end, _flags, _ctx: ends.append(end - 1))
        return line_starts(buf, ends)

    return search


def hyperscan_reader(buf: bytearray) -> list[int]:
    """The reader's own pass: the words and the anchors' triggers together (the keep words' lines returned)."""
    return line_starts(buf, [end - 1 for end in reader._hs_lines(reader._hs_database(), buf, len(buf))[0]])


def greedy_cover(n: int) -> list[bytes]:
    """Pieces of ``n`` bytes such that every word holds one, each chosen to cover the most words left: how few
    searches a cheaper set of pieces would take (each then to be checked for a whole word at every hit)."""
    left, pieces = set(WORDS), []
    while left:
        counts: dict[bytes, int] = {}
        for word in left:
            for piece in {word[i: i + n] for i in range(len(word) - n + 1)}:
                counts[piece] = counts.get(piece, 0) + 1
        piece = max(sorted(counts), key=counts.__getitem__)  # the first in byte order among equals
        pieces.append(piece)
        left = {w for w in left if piece not in w}
    return pieces


def candidates() -> dict[str, Search]:
    out: dict[str, Search] = {}
    if reader._sz is not None:
        out["stringzilla, word by word"] = word_by_word
    if reader._hs is not None:
        out["hyperscan, one expression"] = hyperscan_words()
        out["hyperscan, + triggers"] = hyperscan_reader
    try:
        ac_rs = importlib.import_module("ahocorasick_rs")
    except ImportError:
        print("ahocorasick-rs not installed", file=sys.stderr)
    else:
        automaton = ac_rs.BytesAhoCorasick(list(WORDS))
        out["ahocorasick-rs"] = lambda buf: line_starts(buf, [s for _, s, _ in automaton.find_matches_as_indexes(buf)])
    try:
        pyac = importlib.import_module("ahocorasick")
    except ImportError:
        print("pyahocorasick not installed", file=sys.stderr)
    else:
        text_automaton = pyac.Automaton()
        for i, word in enumerate(WORDS):
            text_automaton.add_word(word.decode("latin-1"), i)
        text_automaton.make_automaton()
        out["pyahocorasick"] = lambda buf: line_starts(
            buf, [end for end, _ in text_automaton.iter(buf.decode("latin-1"))])
    alternation = re.compile(b"|".join(map(re.escape, WORDS)))
    out["re alternation"] = lambda buf: line_starts(buf, [m.start() for m in alternation.finditer(buf)])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("--files", type=int, default=4)
    args = ap.parse_args()
    blocks = blocks_of(sorted(glob.glob(os.path.join(args.corpus, "*.log")))[: args.files])
    reference = [line_starts(b, [end - 1 for end in reader._found_ends(b, len(b))]) for b in blocks]
    print(f"{len(blocks)} blocks of {args.corpus}, {len(WORDS)} words, "
          f"{sum(map(len, reference)) / len(blocks):.2f} lines kept a block")
    for n in (2, 3):
        cover = greedy_cover(n)
        print(f"a greedy cover of the words by {n}-byte pieces: {len(cover)} searches ({b', '.join(cover[:4]).decode()}, ...)")
    for name, search in candidates().items():
        sample = blocks if name != "re alternation" else blocks[:4]
        same = all(search(b) == r for b, r in zip(sample, reference, strict=False))  # the re alternation: 4 blocks
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            for b in sample:
                search(b)
            best = min(best, time.perf_counter() - start)
        print(f"{name:28} {best / len(sample) * 1e3:7.2f} ms a block  {len(sample) * reader.BLOCK / best / 1e9:5.2f} GB/s"
              f"  {'same lines' if same else 'DIFFERENT LINES'}")


if __name__ == "__main__":
    main()
