"""Whose line it is: the process a line of one input names, by its prefixes and tags.

A line says whose it is in many ways: torchrun's ``[rank3]:`` (also mangled by a paste), its ``[default3]:`` (the
rank on its node, the global rank where a line carries both), a collector's node label before it (pdsh's "node1: "),
a launcher's own tag (Open MPI's ``[1,3]<stderr>:``), a framework's tag further along (Lightning's ``[rank: 3] ``),
a PID the launcher paired with a rank (Ray's ``(RayTrainWorker pid=5665)``), a record glued after a progress bar, or
the input's file name. :class:`Processes` keeps what one input's lines have told so far and gives each line one
shared :class:`Who`; the tags themselves are declared by the sources (evidence/formats/).
"""

from __future__ import annotations

import re

from ncclcheck.evidence import formats, localranks
from ncclcheck.evidence.formats.collectors import MASTER, NODE_LABEL, node_label
from ncclcheck.evidence.formats.errors import PY_ERROR
from ncclcheck.evidence.formats.torchrun import GLUED_TAG, LOCAL_TAG, RANK_TAG, TAG
from ncclcheck.evidence.types import Who, WorkMention

# What precedes a record's text: a collector's own prefix (pdsh's "worker-4: ", a CRI timestamp, "[time] node4 ")
# when torchrun's tag follows it, then the tags the sources and the collectors' wrappers put before a line
# (``formats.PREFIXES``: torchrun's, Open MPI's, Ray's actor, Lightning's, Determined's) and a paste's quoting marks,
# none of any source's.
PREFIX = re.compile(r"^(?:.{0,160}?(?=" + TAG.pattern + r"))?(?:\s*(?:" + formats.PREFIX_TEXT + r"|>|`+|\*\*))+\s?")
_TRACEBACK_PARTS = ("Traceback", "File ", "During handling", "The above exception", "^", "~", "[")


class Processes:
    """The processes one input's lines name, and what its lines have told of them so far."""

    def __init__(self, path_rank: int | None) -> None:
        self.path_rank = path_rank
        self._whos: dict[tuple[int | None, int | None], Who] = {}
        self._role_global: dict[int, int] = {}  # launcher tag N -> global rank, from lines that carry both
        # Behind a collector's node label ("node1: [default1]:", pdsh or srun -l running torchrun on each node): the
        # node's first global rank (-1 where its lines disagree), and the (label, local tag) pairs seen before it
        self._node_base: dict[str, int] = {}
        self._node_tags: set[tuple[str, int]] = set()
        self.pid_rank: dict[int, int] = {}  # a worker's PID -> its global rank, where the launcher pairs them
        self.placement = localranks.Placement()  # what the lines state of the local tags' global ranks
        self.tags: set[int] = set()  # the local tags seen without a collector's label

    def who(self, text: str) -> Who:
        """The process a line names."""
        ranks = RANK_TAG.findall(text, 0, 200) if text.find("rank", 0, 200) != -1 else None
        if not ranks and len(text) > 200 and (glued := GLUED_TAG.search(text)):
            ranks = [glued["rank"]]  # a record glued after a long line (a progress bar without its carriage return)
        if not ranks and (mark := formats.rank_mark(text)) is not None:
            ranks = [mark]  # a framework's tag further along (Lightning's "[rank: 3] ")
        role = LOCAL_TAG.match(text)
        node = None
        if role is None and "]:" in text[:90] and text[:1] != "[" and (label := NODE_LABEL.match(text)) and (
                role := LOCAL_TAG.match(text, label.end())) is not None and not role[0].startswith("[rank"):
            node = label[0]  # a collector's node label before torchrun's tag: "node1: [default1]:"
        tag = int(role["rank"]) if role is not None and not role[0].startswith("[rank") else None
        if any(map(text.__contains__, localranks.WORDS)):
            self.placement.line(text, tag if node is None else None, node if tag is not None else node_label(text))
            for label_, local, rank in self.placement.node_pairs:  # a labelled agent's rendezvous result
                self._node_tag(label_, local, rank)
            self.placement.node_pairs.clear()
        if tag is not None and node is None:
            self.tags.add(tag)
        if ranks:
            if node is not None and role is not None and text.startswith("[rank", role.end()):
                self._node_tag(node, int(role["rank"]), int(ranks[-1]))
            elif role and not role[0].startswith("[rank") and text.startswith("[rank", role.end()):
                # torchrun's "[default3]:[rank3]:": the launcher's tag is that process's, on its lines without one
                self._role_global.setdefault(int(role["rank"]), int(ranks[-1]))
                self.placement.pairs.add((int(role["rank"]), int(ranks[-1])))
            return self.one(int(ranks[-1]), self.path_rank)
        if node is not None and role is not None:
            base = self._node_base.get(node)
            if base is not None and base >= 0:
                return self.one(base + int(role["rank"]), self.path_rank)
            self._node_tags.add((node, int(role["rank"])))
            return self.one(None, self.path_rank)
        # A launcher's own tag of the global rank (Open MPI's; horovodrun's, behind its time stamp where it prints
        # one), at the line's start or behind a collector's header of its own (Determined's master: collectors.py)
        start = m.end() if not ranks and text.startswith("[") and (m := MASTER.match(text)) else 0
        if not ranks and (text.startswith("[", start) or "]<std" in text[start:start + 64]) \
                and (tagged := formats.rank_tag(text, start)) is not None:
            return self.one(tagged, self.path_rank)
        if not ranks and text.startswith("(") and (pid := formats.pid_tag(text)) in self.pid_rank:
            return self.one(self.pid_rank[pid], self.path_rank)  # Ray's worker, by its PID
        if role and int(role["rank"]) in self._role_global:
            return self.one(self._role_global[int(role["rank"])], self.path_rank)
        if self.path_rank is None and role:
            return self.one(None, int(role["rank"]))
        return self.one(None, self.path_rank)

    def _node_tag(self, node: str, local: int, rank: int) -> None:
        """torchrun gives the workers of one node consecutive global ranks (its first one plus the local rank), so
        one line that carries both tags behind a node's label places every local tag of that node."""
        base = self._node_base.setdefault(node, rank - local)
        if base != rank - local:
            self._node_base[node] = -1

    def place(self, offset: int | None, node: str) -> dict[Who, Who]:
        """Each process this input named only by its local tag, with its global rank where ``offset`` (the first
        global rank of the input's agent, ``Placement.offset``) is stated, else as a local rank on ``node``."""
        if self.path_rank is not None:
            return {}
        return {who: self.one(who.path_rank + offset, None) if offset is not None else
                Who(None, None, local_rank=who.path_rank, node=node) for who in list(self._whos.values())
                if who.global_rank is None and who.path_rank is not None}

    def one(self, global_rank: int | None, path_rank: int | None) -> Who:
        """One shared object per process: every line of a log names one of a few, and a job has millions of lines."""
        key = (global_rank, path_rank)
        who = self._whos.get(key)
        if who is None:
            who = self._whos[key] = Who(global_rank, path_rank)
        return who

    def node_rank(self, label: str, local: int | None) -> int | None:
        """The global rank of a node's local rank, where a line placed the node's first rank."""
        base = self._node_base.get(label, -1)
        return base + local if base >= 0 and local is not None else None

    def placed(self) -> set[int]:
        """The ranks of a node's local tags seen before a line placed them: those processes wrote here."""
        return {base + local for label, local in self._node_tags if (base := self._node_base.get(label, -1)) >= 0}

    def node_ranks(self, works: list[WorkMention]) -> tuple[dict[Who, Who], int]:
        """torchrun's ``[defaultN]:`` is the rank on its node, and torch 2.0-2.1 print no ``[rankN]:``: the job-wide
        rank is only the watchdog's ``[Rank K]``. Where every such process of this file names one K, and K is its
        node rank plus one offset for all of them (a node's ranks are consecutive), K is its global rank; a
        subgroup's ranks (every process naming the same few) do not fit that and are left alone. Also the offset: the
        first global rank of this file's node."""
        if self.path_rank is not None:
            return {}, 0
        named: dict[Who, set[int]] = {}
        for w in works:
            if w.who.global_rank is None and w.who.path_rank is not None and w.rank is not None:
                named.setdefault(w.who, set()).add(w.rank)
        offsets = {next(iter(ks)) - who.path_rank for who, ks in named.items() if len(ks) == 1}  # type: ignore[operator]
        if not named or any(len(ks) != 1 for ks in named.values()) or len(offsets) != 1:
            return {}, 0
        offset = offsets.pop()
        if offset < 0:
            return {}, 0
        return {who: self.one(who.path_rank + offset, None) for who in list(self._whos.values())
                if who.global_rank is None and who.path_rank is not None}, offset


def went_on(text: str) -> bool:
    """Whether a line a launcher tagged with its process's PID is that process going on with its work: not a part
    of a traceback, not an error line, not blank. An error its process outlived (a traceback logged with a warning,
    as Ray's controller does) is not how it ended."""
    body = PREFIX.sub("", text, count=1)
    line = body.strip()
    return bool(line) and not body[:1].isspace() and not line.startswith(_TRACEBACK_PARTS) and \
        PY_ERROR.match(line) is None
