"""NCCL's RAS report as JSON (``ncclras -f json``), read as the text report it holds.

``ncclras -f json`` (NCCL 2.28 and later; src/ras/client_support.cc, ``rasDumpCommsToJSON``) writes the same state
the text report summarises, but raw: the NCCL, CUDA runtime and driver versions, then per communicator its hash, size,
every rank that answered (host, PID, CUDA device, ``status.init_state`` and ``status.async_error`` as ncclResult_t
codes, ``collective_counts`` per operation) and every rank that did not (``missing_ranks``, with ``unresponsive`` and
``considered_dead``). The text client draws its sections from that same state: a communicator is INCOMPLETE when
ranks are missing, ERROR when a rank's init or asynchronous state is an error (neither ``ncclSuccess`` nor
``ncclInProgress``), MISMATCH when its ranks' counts of one operation differ.

So that one meaning serves both, the JSON is turned into the lines the text client prints for those sections (its
own wording, formats/ncclras.py reads them), each numbered with the JSON line that states it (the communicator's
``hash``, a rank's ``rank``), and fed to the same parser as any log: a verdict from either form cites the file the
user gave. Recorded: tests/data/gpu/nccl232/hang/ras/status_{live,dead}.json beside their text reports.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

SUCCESS, IN_PROGRESS = 0, 7  # ncclResult_t: ncclSuccess, ncclInProgress (nccl.h): the two states that are no error


def looks_like(head: bytes) -> bool:
    """Whether the first bytes are an ncclras JSON report: an object that opens with ``nccl_version`` and
    ``communicators`` among its first keys (jsonWriteHeader's order)."""
    text = head.lstrip()[:1024]
    return text.startswith(b"{") and b'"nccl_version"' in text and b'"communicators' in text


class ReportError(ValueError):
    """The input looked like an ncclras JSON report but is not one that can be read."""


def lines(data: bytes) -> list[tuple[int, bytes]]:
    """The text report's lines, each with the number of the JSON line that states it."""
    try:
        return list(_lines(data))
    except (TypeError, ValueError, AttributeError) as exc:  # a field of another type than NCCL writes
        if isinstance(exc, ReportError):
            raise
        raise ReportError(f"an ncclras JSON report with a field NCCL does not write ({exc})") from exc


def _lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(f"an ncclras JSON report that is not valid JSON ({exc})") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("communicators"), list):
        raise ReportError("an ncclras JSON report without its communicators list")
    at = _Lines(data.decode("utf-8").splitlines())
    yield at.find('"nccl_version"'), f"NCCL version {doc.get('nccl_version', '')}".encode()
    if "cuda_runtime_version" in doc:
        yield (at.find('"cuda_runtime_version"'),
               f"CUDA runtime version {doc['cuda_runtime_version']}, driver version {doc.get('cuda_driver_version')}"
               .encode())
    dead: set[tuple[str, int]] = set()
    for i, comm in enumerate(doc["communicators"]):
        if not isinstance(comm, dict):
            raise ReportError(f"communicator {i} of the ncclras JSON report is not an object")
        yield from _communicator(i, comm, at, dead)
    if dead:
        n = len(dead)
        yield at.last, (f"  {n} job process{'es are' if n > 1 else ' is'} considered dead (unreachable via the RAS "
                        f"network)").encode()


class _Lines:
    """The JSON's lines, searched forward in document order (a key's next occurrence is the one being read)."""

    def __init__(self, text: list[str]) -> None:
        self._text = text
        self._next = 0
        self.last = len(text)

    def find(self, needle: str) -> int:
        for k in range(self._next, len(self._text)):
            if needle in self._text[k]:
                self._next = k + 1
                return k + 1
        return self._next or 1


def _communicator(i: int, comm: dict[str, Any], at: _Lines, dead: set[tuple[str, int]]) -> Iterator[tuple[int, bytes]]:
    """The INCOMPLETE, ERROR and MISMATCH sections of one communicator, as the text client words them."""
    name = f"#0-{i} ({str(comm.get('hash', '0')).removeprefix('0x').zfill(16)})"
    head = at.find('"hash"')
    ranks = [(at.find('"rank"'), r) for r in comm.get("ranks", ()) if isinstance(r, dict)]
    missing = [(at.find('"rank"'), r) for r in comm.get("missing_ranks", ()) if isinstance(r, dict)]
    if missing:
        yield head, f"{name} INCOMPLETE".encode()
        yield head, f"  Missing communicator data from {_count(len(missing), 'rank')}".encode()
        for n, r in missing:
            yield n, f"  Rank {r.get('rank')} -- {_where(r)}".encode()
            if (r.get("status") or {}).get("considered_dead"):
                dead.add((str(r.get("host")), int(r.get("pid", -1))))
    for key, said in (("init_state", "Initialization error"), ("async_error", "Asynchronous error")):
        failed = [(n, r) for n, r in ranks if (r.get("status") or {}).get(key, SUCCESS) not in (SUCCESS, IN_PROGRESS)]
        if failed:
            yield head, f"{name} ERROR".encode()
            k = len(failed)
            yield head, f"  {said}{'s' if k > 1 else ''} on {_count(k, 'rank')}".encode()
            yield from ((n, f"  Rank {r.get('rank')} -- {_where(r)}".encode()) for n, r in failed)
    ops = [op for op in _ops(ranks) if len({(r.get("collective_counts") or {}).get(op) for _, r in ranks}) > 1]
    if ops:
        yield head, f"{name} MISMATCH".encode()
    for op in ops:
        yield head, f"  Communicator ranks have different {op} operation counts".encode()
        for n, r in ranks:
            count = (r.get("collective_counts") or {}).get(op, 0)
            has = f"has launched up to operation {count}" if count else "has not launched any operations"
            yield n, f"  Rank {r.get('rank')} {has} -- {_where(r)}".encode()


def _ops(ranks: list[tuple[int, dict[str, Any]]]) -> list[str]:
    """Every operation any rank counts, in the report's order."""
    seen: dict[str, None] = {}
    for _, r in ranks:
        seen.update(dict.fromkeys(r.get("collective_counts") or {}))
    return list(seen)


def _where(rank: dict[str, Any]) -> str:
    """Where a rank runs, as the text client says it; a rank whose process RAS does not know says so."""
    if rank.get("pid", -1) < 0 or rank.get("host") in (None, "", "unknown"):
        return "[process information not found]"
    return f"GPU {rank.get('cuda_dev')} managed by process {rank.get('pid')} on node {rank.get('host')}"


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n > 1 else ''}"
