"""A live stack inside a framework's own collective: the frame families of ``framewaits.toml`` and their step.

DeepSpeed ZeRO-3 and FSDP gather a module's parameters from every rank in a pre-hook of its forward (and backward):
the collective is issued asynchronously, and the rank's main thread waits on its handle or on the GPU inside the
framework's frames, with no torch.distributed call on its stack. A stack dumped there (py-spy's, Python's
faulthandler's, a snapshot's) waits for the group's other members in that gather, which every rank must run the
same number of times; the family's step says what makes one rank run it fewer times (job/wording.py puts it among
the next steps; job/spied.py says the process waits in it).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ncclcheck.evidence.frdump import Frame
from ncclcheck.job.model import Job
from ncclcheck.ranks import rank_phrase

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

TABLE = Path(__file__).with_name("framewaits.toml")


@dataclass(frozen=True)
class Family:
    """One framework's frames that wait in a collective of its own: where (files, functions), which op, the step."""

    id: str
    files: tuple[str, ...]
    functions: frozenset[str]
    op: str
    name: str
    fix: str
    source: str


@functools.cache
def families() -> tuple[Family, ...]:
    """The table of frame families (framewaits.toml)."""
    data = tomllib.loads(TABLE.read_text())
    return tuple(Family(f["id"], tuple(f["files"]), frozenset(f["functions"]), f["op"], f["name"], f["fix"],
                        f["source"]) for f in data["family"])


def family_of(frames: Sequence[Frame]) -> tuple[Family, Frame] | None:
    """The family the frames are inside and its innermost frame (a method's name bare, without its class)."""
    for f in frames:
        path = f.file.replace("\\", "/")
        for fam in families():
            if f.name.rsplit(".", 1)[-1] in fam.functions and any(part in path for part in fam.files):
                return fam, f
    return None


def frame_steps(job: Job) -> tuple[str, ...]:
    """One step a family that some main thread waits in: the ranks (or the dumps no rank is named for) and the fix."""
    found: dict[str, tuple[Family, list[int], int]] = {}
    for s in job.ranks:
        if s.live is not None and s.live.threads and (hit := family_of(s.live.threads[0].frames)) is not None:
            found.setdefault(hit[0].id, (hit[0], [], 0))[1].append(s.rank)
    for u in job.facts.unranked_stacks:
        if u.threads and (hit := family_of(u.threads[0].frames)) is not None:
            fam, ranks, n = found.get(hit[0].id, (hit[0], [], 0))
            found[fam.id] = (fam, ranks, n + 1)
    out = []
    for fam, ranks, unranked in found.values():
        dumped = (f"{unranked} dumped processes" if unranked > 1 else "the dumped process") + " no line ranks"
        who = " and ".join(x for x in (rank_phrase(sorted(ranks)) if ranks else "", dumped if unranked else "") if x)
        out.append(f"The main thread of {who} waits in {fam.name}: {fam.fix}")
    return tuple(out)
