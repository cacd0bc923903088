"""The failure catalogue's data: one TOML file per cause in job/catalogue/, read and checked once.

A cause is data, not code: how it is matched (a pattern on the lines the ranks printed, the kinds of typed events it
is), why it happens, the fix and the check that confirm it, what to do next (its action class and why), its public
source, the page's prose and its example lines. Adding a cause is adding one file; causes.py matches,
docs/failures.md is generated from these files (tools/failures_page.py) and the example-line tests read them. A file
that does not say what a cause must (a key unknown or missing, a value of the wrong type, a pattern that does not
compile, a kind that is not its file's name, an action none of ACTIONS) stops the import with one line naming the file
and the problem.

The catalogue is read in ``order``: a device or memory error is the root of the NCCL and store errors it causes, a
set-up error comes before the timeouts that follow it, and a lost peer is the consequence of something else. A cause
without ``order`` is never matched from its file: causes.py names it by a rule of its own (NCCL failing without a
reason, a kill with no traceback, a job stopped from outside).
"""

from __future__ import annotations

import hashlib
import marshal
import os
import re
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ncclcheck import cachedir
from ncclcheck.evidence.linear import then

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

FOLDER = Path(__file__).with_name("catalogue")

SETUP = "setup"  # the communicator or the host: nothing ran yet, or NCCL could not build a transport
NETWORK = "network"  # a transport failed or a peer vanished while the job ran
LAUNCHER = "launcher"  # rendezvous, store and launcher: no rank is the culprit
DEVICE = "device"  # a CUDA error on one rank's GPU
MEMORY = "memory"  # GPU or host memory
PROGRAM = "program"  # the ranks' own calls disagree: different collectives, sizes or settings
HOST = "host"  # the host or the scheduler ended the ranks on a node
LATE = "late"  # ranks waited for one rank to reach NCCL's set-up: that rank was slow, stuck or dead
FAMILIES = (SETUP, PROGRAM, NETWORK, LAUNCHER, LATE, DEVICE, HOST, MEMORY)

# The typed events a cause may be read from as such, besides its pattern on the lines the ranks printed: a host's
# or a scheduler's record by its kind (evidence/hostlog.py), TORCH_DISTRIBUTED_DEBUG=DETAIL's mismatch report.
RECORDS = frozenset({"oom_killed", "scheduler_oom", "xid", "segfault", "pcie_error", "evicted", "node_failure",
                     "preempted", "killed_by_scheduler"})
EVENTS = frozenset({"mismatch"})
SIGNALS = frozenset({"SIGBUS", "SIGSEGV", "SIGILL", "SIGFPE", "SIGKILL", "SIGABRT", "SIGTERM"})
TABLES = frozenset({"xids"})  # a table the page generates under a cause from its own module (job/xids.py)
# What to do next, one class a verdict (issue 44): change the program, change a setting of the job or its hosts, take
# a node out of the scheduler's pool, run it again as it is, or bring what decides between them. job/actions.py
# decides the verdicts that are no cause of the catalogue, and a cause's exceptions the evidence decides.
FIX_CODE, FIX_CONFIG, DRAIN_NODE, RESTART, COLLECT_MORE = ACTIONS = (
    "fix-code", "fix-config", "drain-node", "restart", "collect-more")


class CatalogueError(ValueError):
    """A cause file that cannot be read as a cause: its message names the file and the problem."""


@dataclass(frozen=True)
class Example:
    """A line the cause is read from, and where that line (or its shape) comes from."""

    line: str
    source: str
    context: str | None = None  # why the line is the cause only beside the failure it explains (a warning)


@dataclass(frozen=True)
class Page:
    """What docs/failures.md says of the cause beyond its fields: how it is read where no pattern says it, notes,
    and the reference paragraph (its ``{source}`` is the cause's source)."""

    read: str | None
    notes: str | None
    reference: str
    table: str | None = None


@dataclass(frozen=True)
class Cause:
    """One class of failure: how to recognise it, why it happens, how to fix and confirm it, where that was seen."""

    kind: str
    family: str
    title: str
    pattern: re.Pattern[str]  # over the lines the ranks and launchers printed; matches nothing where it has none
    why: str
    fix: tuple[str, ...]
    source: str
    probe: bool = False
    order: int | None = None
    check: str = ""
    alternatives: tuple[str, ...] = ()  # the pattern's alternatives, each a regular expression
    written: tuple[str, ...] = ()  # the same as people read them (``A.*B`` for a first/then pair)
    records: tuple[str, ...] = ()
    events: tuple[str, ...] = ()
    signals: tuple[str, ...] = ()
    echo: bool = False  # what a peer's death also causes: skipped where a rank was killed or stopped without a word
    # The matched line is said about its rank, not by it ([match] culprit): a program cause then names that rank.
    culprit: bool = False
    page: Page | None = None
    examples: tuple[Example, ...] = ()
    action: str = COLLECT_MORE  # one of ACTIONS: what to do where this cause is the verdict's ([action] class)
    action_why: str = ""  # why that action, in words ([action] why)
    host: bool = False  # the host's CUDA stack or settings, the same for every rank there: the ranks whose lines
    # show it are where it was seen, never culprits (`host = true`)
    # What a set-up cause's ranks could not set up, for the summary ("could not set up NCCL"): a library other than
    # NCCL (gloo's pairs, MPI's transport, a framework's socket) prints some of a cause's lines (`sets_up`).
    sets_up: str = "NCCL"


_NOTHING = re.compile(r"(?!)")
_TOP = {"kind": str, "order": int, "family": str, "title": str, "why": str, "fix": list, "check": str, "source": str,
        "probe": bool, "match": dict, "page": dict, "example": list, "action": dict, "host": bool, "sets_up": str}
_REQUIRED = ("kind", "family", "title", "why", "fix", "check", "source", "page", "action")
_MATCH = {"lines": list, "records": list, "events": list, "signals": list, "echo": bool, "culprit": bool}
_PAGE = {"read": str, "notes": str, "reference": str, "table": str}
_EXAMPLE = {"line": str, "source": str, "context": str}
_ACTION = {"class": str, "why": str}


def _keys(where: str, table: dict[str, Any], allowed: Mapping[str, type], required: tuple[str, ...] = ()) -> None:
    for key, value in table.items():
        if key not in allowed:
            raise CatalogueError(f"{where}: unknown key {key!r} (known: {', '.join(allowed)})")
        if not isinstance(value, allowed[key]) or isinstance(value, bool) is not (allowed[key] is bool):
            raise CatalogueError(f"{where}: {key} must be of type {allowed[key].__name__}")
    missing = [k for k in required if k not in table]
    if missing:
        raise CatalogueError(f"{where}: missing {', '.join(missing)}")


def _strings(where: str, values: list[Any], allowed: frozenset[str] | None = None) -> tuple[str, ...]:
    if not all(isinstance(v, str) and v for v in values):
        raise CatalogueError(f"{where}: every entry must be a non-empty string")
    unknown = sorted(set(values) - allowed) if allowed is not None else []
    if unknown:
        raise CatalogueError(f"{where}: unknown {', '.join(unknown)} (known: {', '.join(sorted(allowed or ()))})")
    return tuple(values)


def _alternative(where: str, alt: Any) -> tuple[str, str]:
    """One alternative as (the regular expression, its text for people): a string, or ``{first, then}``: ``first``
    and later ``then`` on one line, scanned in linear time (evidence/linear.py)."""
    if isinstance(alt, str) and alt:
        return alt, alt
    if isinstance(alt, dict) and set(alt) == {"first", "then"} and all(isinstance(v, str) and v for v in alt.values()):
        first, second = (f"(?:{v})" if "|" in v else v for v in (alt["first"], alt["then"]))
        return then(alt["first"], alt["then"], lazy=False), f"{first}.*{second}"
    raise CatalogueError(f"{where}: an alternative is a pattern or {{ first = ..., then = ... }}, not {alt!r}")


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise CatalogueError(f"{path}: {e}") from None


def _table(path: Path, text: str) -> dict[str, Any]:
    try:
        table: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise CatalogueError(f"{path}: {e}") from None
    return table


def read_cause(path: Path, data: dict[str, Any] | None = None) -> Cause:
    """One cause file, checked: a CatalogueError names the file and what is wrong (``data``: its TOML already
    parsed)."""
    where = str(path)
    if data is None:
        data = _table(path, _text(path))
    _keys(where, data, _TOP, _REQUIRED)
    if data["kind"] != path.stem:
        raise CatalogueError(f"{where}: kind {data['kind']!r} is not the file's name")
    if data["family"] not in FAMILIES:
        raise CatalogueError(f"{where}: family {data['family']!r} is none of {', '.join(FAMILIES)}")
    match = data.get("match", {})
    _keys(f"{where} [match]", match, _MATCH)
    if ("order" in data) != bool(match):
        raise CatalogueError(f"{where}: a cause with an order has a [match], and only such a cause")
    alts = [_alternative(f"{where} [match] lines", a) for a in match.get("lines", [])]
    try:
        pattern = re.compile("|".join(a for a, _ in alts), re.IGNORECASE) if alts else _NOTHING
    except re.error as e:
        raise CatalogueError(f"{where} [match] lines: bad pattern: {e}") from None
    page = data["page"]
    _keys(f"{where} [page]", page, _PAGE, ("reference",))
    if data["source"] and "{source}" not in page["reference"]:
        raise CatalogueError(f"{where} [page] reference: it names no {{source}}")
    if page.get("table") is not None and page["table"] not in TABLES:
        raise CatalogueError(f"{where} [page] table: unknown {page['table']!r}")
    action = data["action"]
    _keys(f"{where} [action]", action, _ACTION, ("class", "why"))
    if action["class"] not in ACTIONS:
        raise CatalogueError(f"{where} [action] class: {action['class']!r} is none of {', '.join(ACTIONS)}")
    if not action["why"].strip():
        raise CatalogueError(f"{where} [action] why: say why this action")
    examples = []
    for i, ex in enumerate(data.get("example", []), 1):
        if not isinstance(ex, dict):
            raise CatalogueError(f"{where} [[example]] {i}: not a table")
        _keys(f"{where} [[example]] {i}", ex, _EXAMPLE, ("line", "source"))
        if not ex["line"].strip() or "\n" in ex["line"] or not ex["source"].strip():
            raise CatalogueError(f"{where} [[example]] {i}: a line is one non-empty line, with its source")
        examples.append(Example(ex["line"], ex["source"], ex.get("context")))
    if "order" in data and not examples:
        raise CatalogueError(f"{where}: a cause the catalogue matches has example lines ([[example]])")
    return Cause(
        kind=data["kind"], family=data["family"], title=data["title"], pattern=pattern, why=data["why"],
        fix=_strings(f"{where} fix", data["fix"]), source=data["source"], probe=data.get("probe", False),
        order=data.get("order"), check=data["check"], alternatives=tuple(a for a, _ in alts),
        written=tuple(text for _, text in alts),
        records=_strings(f"{where} [match] records", match.get("records", []), RECORDS),
        events=_strings(f"{where} [match] events", match.get("events", []), EVENTS),
        signals=_strings(f"{where} [match] signals", match.get("signals", []), SIGNALS), echo=match.get("echo", False),
        culprit=match.get("culprit", False),
        page=Page(page.get("read"), page.get("notes"), page["reference"], page.get("table")),
        examples=tuple(examples), action=action["class"], action_why=action["why"], host=data.get("host", False),
        sets_up=data.get("sets_up", "NCCL"))


def read_catalogue(folder: Path = FOLDER) -> tuple[Cause, ...]:
    """Every cause of the folder: those matched in order first (in that order), then the rest by kind. Two causes of
    one order, or two files claiming one signal, are an error naming both."""
    paths = sorted(folder.glob("*.toml"))
    causes = [read_cause(p, data) for p, data in zip(paths, _tables(paths), strict=True)]
    if not causes:
        raise CatalogueError(f"{folder}: no cause files (*.toml)")
    for attr in ("order", "signals"):
        seen: dict[object, str] = {}
        for c in causes:
            values = (c.order,) if attr == "order" and c.order is not None else c.signals if attr == "signals" else ()
            for v in values:
                if v in seen:
                    raise CatalogueError(f"{folder / (c.kind + '.toml')}: {attr} {v} is also {seen[v]}.toml's")
                seen[v] = c.kind
    return tuple(sorted(causes, key=lambda c: (c.order is None, c.order or 0, c.kind)))


def tables(paths: list[Path]) -> list[dict[str, Any]]:
    """TOML files of the job's data (job/statements.py's table too), parsed once for each version of the files: see
    :func:`_tables`."""
    return _tables(paths)


def _tables(paths: list[Path]) -> list[dict[str, Any]]:
    """The files' TOML, parsed (pure Python: ~30 ms for the catalogue, a tenth of analyze-log's start-up) once for
    each version of the files and kept in the cache folder (ncclcheck/cachedir.py) as ``marshal`` data, plain
    tables, lists and strings: what is loaded from it is checked as a file is (:func:`read_cause`)."""
    texts = [_text(p) for p in paths]
    folder = cachedir.directory()
    if folder is None:
        return [_table(p, t) for p, t in zip(paths, texts, strict=True)]
    digest = hashlib.sha256(repr((marshal.version, tomllib.__name__, [(p.name, t) for p, t in zip(paths, texts,
                                                                                             strict=True)])).encode())
    kept = os.path.join(folder, f"catalogue-{digest.hexdigest()[:24]}.marshal")
    try:
        with open(kept, "rb") as fh:
            tables = marshal.loads(fh.read())
        if isinstance(tables, list) and len(tables) == len(paths) and all(isinstance(t, dict) for t in tables):
            return tables
    except (OSError, EOFError, ValueError, TypeError):
        pass  # none kept yet, or damaged: parsed again
    tables = [_table(p, t) for p, t in zip(paths, texts, strict=True)]
    try:
        blob = marshal.dumps(tables)
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".catalogue-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
        os.replace(tmp, kept)
    except (OSError, ValueError):  # a folder that cannot be written, or a value marshal cannot keep (a TOML date)
        pass
    return tables
