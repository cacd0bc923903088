"""Every module-level pattern of the package searches a hostile 1 MiB line in linear time.

The patterns are found by walking the package's modules: every ``re.Pattern`` held at module level, inside tuples,
lists, dicts and dataclasses (the cause catalogue's). Each is fed lines made of what its loops loop on: long runs of
single characters and of every literal word in the pattern (with and without separators), none of which matches at
the end. Every shape is timed at 16 KiB; the two worst are timed again at 128 KiB and 1 MiB and must take under a
generous second per MiB, or grow about as the line does: a quadratic pattern takes minutes there (one of 63 KB took
13 s), a linear one milliseconds.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import pkgutil
import re
import sys
import time
from pathlib import Path

import pytest

import ncclcheck

try:
    import re._parser as sre_parse  # type: ignore[import-not-found]
except ImportError:  # Python 3.10
    import sre_parse  # type: ignore[no-redef]

MiB = 1 << 20
PER_MIB_S = 1.0
CHARS = " \t0a:[(.-_/,=|\"'xSZ"


def _walk(obj: object, where: str, seen: set[int], out: dict[str, re.Pattern]) -> None:
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, re.Pattern):
        out.setdefault(where, obj)
    elif isinstance(obj, (tuple, list, set, frozenset)):
        for i, x in enumerate(obj):
            _walk(x, f"{where}[{i}]", seen, out)
    elif isinstance(obj, dict):
        for k, x in obj.items():
            _walk(x, f"{where}[{k!r}]", seen, out)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            _walk(getattr(obj, f.name), f"{where}.{f.name}", seen, out)


_TORCH = re.compile(r"^(?:import|from) torch\b", re.M)


def patterns() -> dict[str, re.Pattern]:
    """Every module's patterns, each named where a module holds it by name where one does (a source's declarations,
    formats' ``behind``, hold many again). The modules this walk imports are taken out of ``sys.modules`` again, and a
    module that imports torch when imported (the benchmark's runner, which holds no pattern) is left alone: other
    tests import them under their own conditions (torch missing, a fresh import)."""
    out: dict[str, re.Pattern] = {}
    seen: set[int] = set()
    before = set(sys.modules)
    mods = []
    for m in pkgutil.walk_packages(ncclcheck.__path__, "ncclcheck."):
        spec = importlib.util.find_spec(m.name)
        if m.name.endswith("__main__") or spec is None or spec.origin is None:
            continue  # running it is what importing it does
        if _TORCH.search(Path(spec.origin).read_text()):
            assert "re.compile" not in Path(spec.origin).read_text(), f"{m.name} holds patterns: test them"
            continue
        mods.append((m.name, importlib.import_module(m.name)))
    for plain in (True, False):
        for name_, mod in mods:
            for name, value in vars(mod).items():
                if isinstance(value, re.Pattern) is plain:
                    _walk(value, f"{name_}.{name}", seen, out)
    for name in set(sys.modules) - before:
        del sys.modules[name]
    return out


PATTERNS = patterns()


def _literals(p: re.Pattern) -> set[str]:
    """The literal runs of a pattern: what a hostile line repeats so that every loop after them is tried."""
    words: set[str] = set()
    text = p.pattern.decode("latin-1") if isinstance(p.pattern, bytes) else p.pattern

    def go(items) -> None:
        cur: list[str] = []
        for op, av in items:
            name = str(op)
            if name == "LITERAL":
                cur.append(chr(av))
                continue
            if cur:
                words.add("".join(cur))
            cur = []
            if name == "SUBPATTERN":
                go(av[-1])
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                go(av[2])
            elif name == "BRANCH":
                for b in av[1]:
                    go(b)
            elif name in ("ASSERT", "ASSERT_NOT"):
                go(av[1])
            elif name == "ATOMIC_GROUP":
                go(av)
        if cur:
            words.add("".join(cur))

    go(sre_parse.parse(text, p.flags & ~re.UNICODE if isinstance(p.pattern, bytes) else p.flags))
    return {w for w in words if w.strip()}


def units(p: re.Pattern) -> list[str]:
    """What each hostile line of ``p`` repeats: one character of CHARS, or one of its literal words bare or followed
    by a separator, a digit or a letter."""
    return list(CHARS) + [u for w in sorted(_literals(p)) for u in (w, w + " ", w + "1 ", w + "a")]


def line(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def shapes(p: re.Pattern, n: int) -> list[str]:
    return [line(u, n) for u in units(p)]


def _timed(p: re.Pattern, line: str) -> float:
    """The CPU time of one search, this thread's own: other processes on a loaded machine do not stretch it as they
    stretch the wall clock (under xdist on two busy cores, patterns that take 0.3 s took over a second)."""
    data = line.encode("latin-1", "replace") if isinstance(p.pattern, bytes) else line
    start = time.thread_time()
    p.search(data)
    return time.thread_time() - start


def test_the_walk_finds_the_catalogue_and_the_parsers():
    names = set(PATTERNS)
    assert len(names) > 150
    assert any(n.startswith("ncclcheck.job.causes.CATALOGUE[") and n.endswith(".pattern") for n in names)
    assert "ncclcheck.evidence.formats.errors.STORE_FAIL" in names and "ncclcheck.evidence.formats.errors._CUDA_ASSERT" in names


def test_a_quadratic_pattern_is_caught():
    """The test's own yardstick: the store-failure pattern as it was (a leading lazy ``.*?``) fails it."""
    old = re.compile(r"(?:TCPStore|\[c10d\]|c10d store|[Ss]ocket).*?(Failed to recv.*|Broken pipe.*)")
    line = {n: next(s for s in shapes(old, n) if s.startswith("[c10d]")) for n in (4 << 10, 16 << 10)}
    small, large = (min(_timed(old, line[n]) for _ in range(2)) for n in (4 << 10, 16 << 10))
    assert large > 8 * small  # four times the line, sixteen times the time: a linear pattern takes four


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_every_pattern_is_linear_on_a_hostile_line(name):
    """Every shape at 16 KiB, the two worst at 128 KiB and at 1 MiB (there, those whose growth is still to be told):
    a quadratic pattern fails at a size where it still fails fast (each step is 8 or 64 times the line, 64 or 4096
    times the time). Only the lines timed are built (a pattern's 271 shapes built at 1 MiB to time two of them were a
    quarter of the test's time)."""
    p = PATTERNS[name]
    shape = units(p)
    took = {i: _timed(p, line(u, 16 << 10)) for i, u in enumerate(shape)}
    worst = sorted(took, key=took.__getitem__, reverse=True)[:2]
    told: set[int] = set()
    for size in (16 << 10, 128 << 10, MiB):
        budget = PER_MIB_S * max(size / MiB, 1 / 4)
        if size == MiB:
            # A shape that took under a 64th of the budget at 128 KiB stays under it at 1 MiB even if its time grows
            # as the square of the line (a cubic pattern loops (n/L)^3 times: minutes at 128 KiB), and a shape
            # over the budget at 128 KiB has had its growth told there: only the others are timed at 1 MiB. Eight
            # times the line never grows the time less at a smaller size than at a larger one (a bounded repeat of
            # width W costs about n * min(n, W)), so a growth told linear from 16 to 128 KiB stays linear after it.
            # Nine in ten of the worst shapes are that fast, and timing them at 1 MiB was a third of the test's time;
            # the slow linear ones (a bounded ``[\w.-]{1,120}`` tried at every start, 5 s at 1 MiB) most of the rest.
            worst = [i for i in worst if took[i] * 64 >= budget and i not in told]
            if not worst:
                break
        if size > 16 << 10:
            before, took = took, {i: _timed(p, line(shape[i], size) + "\x00") for i in worst}
        for i in worst:
            hostile = line(shape[i], size) + "\x00"
            if took[i] >= budget and size > 16 << 10:
                # Over the budget, a linear pattern with a large constant (a bounded ``.{1,200}`` tried at every
                # start, 3 us a character at 1 MiB): the growth decides. Eight times the line costs a linear
                # pattern about eight times the time, a quadratic one sixty-four. The eighth of the line was timed
                # at the last step and is timed once more; both lines are timed again only where the growth looks
                # quadratic (a hiccup does not come back twice; a quadratic pattern does).
                short = line(shape[i], size // 8) + "\x00"
                ref = min(before[i], _timed(p, short))
                if took[i] >= 24 * ref:
                    took[i] = min(took[i], _timed(p, hostile), _timed(p, hostile))
                    ref = min(ref, _timed(p, short), _timed(p, short))
                assert took[i] < 24 * ref, (f"{name}: {took[i]:.2f} s on {size >> 10} KiB of {line(shape[i], 16)!r}..., "
                                            f"{took[i] / ref:.0f}x the time on an eighth of it (quadratic)")
                told.add(i)
                continue
            if took[i] >= budget:  # a hiccup does not come back twice; a quadratic pattern does
                took[i] = min(took[i], _timed(p, hostile), _timed(p, hostile))
            assert took[i] < budget, f"{name}: {took[i]:.2f} s on {size >> 10} KiB of {line(shape[i], 16)!r}... (quadratic?)"
