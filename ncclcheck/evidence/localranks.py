"""Which global rank torchrun's ``[default3]:`` is: the lines of one console that state it, and nothing else.

torchrun's tee prefix is ``[${role_name}${local_rank}]:`` (torch/distributed/elastic/agent/server/
local_elastic_agent.py): the rank on its node, not in the job. On a console of several nodes every node has its
``[default0]:``. The agent gives its node's workers consecutive global ranks, ``base_global_rank + local_rank``
(api.py ``_assign_worker_ranks``), so one line that states one worker's global rank places every local tag of that
agent's console. Lines that state it:

- a line that carries both tags, ``[default3]:[rank3]:`` (PyTorch 2.2+ prefixes a worker's own lines with its rank);
- the agent's rendezvous result at ``LOGLEVEL=INFO`` (api.py ``_rendezvous``: ``local_ranks=[0, 1]`` then
  ``global_ranks=[2, 3]``, one line each, the node's workers in the same order);
- NCCL's init line of the process behind the tag (init.cc: ``comm 0x… rank R nRanks N nNodes …``): R is the rank in
  that communicator, the global rank where the communicator is the world's; only the largest communicator of the
  console is taken, and the tags' offsets must agree (a subgroup's ranks do not fit one offset);
- torchrun's failure table (``rank : 5 (local_rank: 1)``, elastic/multiprocessing/errors), read by formats/elastic.py;
- where the console's agent holds the whole world: ``--nnodes 1`` (its command line or launch configs), or a world
  size that the console's own local tags fill (NCCL's ``nRanks``, the agent's ``global_world_sizes``).

Where none of them says it, the tag stays a local rank on its node (the input, or the collector's label) and the
global rank is unknown. Statements that disagree (two agents' lines in one console without a label) place nothing.
"""

from __future__ import annotations

import re

# NCCL's init line (src/init.cc), also its "ncclCommInitRank… comm 0x… rank R nranks N … Init START/COMPLETE".
_NCCL_INIT = re.compile(r"NCCL INFO (?:ncclCommInit\w* )?comm 0x[0-9a-fA-F]+ rank (?P<rank>\d+) n[Rr]anks (?P<n>\d+)")
# The agent's rendezvous result (torch/distributed/elastic/agent/server/api.py), each list on its own line.
_RDZV = re.compile(r"\b(?P<key>local_ranks|global_ranks|global_world_sizes)=\[(?P<list>[\d, ]*)\]")
WORDS = ("anks ", "_ranks=", "global_world_sizes=")  # the cheap test before the patterns: "nRanks ", "nranks "


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


class Placement:
    """What one console's lines state of its local tags' global ranks, gathered as they come, decided at its end."""

    def __init__(self) -> None:
        self.pairs: set[tuple[int, int]] = set()  # (local tag, global rank) from a line that states both
        self._nccl: dict[int, set[tuple[int, int]]] = {}  # communicator size -> (local tag, rank in it)
        self._locals: dict[str, list[int]] = {}  # the agent's last local_ranks=[…], by the collector's label
        self.node_pairs: list[tuple[str, int, int]] = []  # (label, local, global) from a labelled agent's lines
        self.worlds: set[int] = set()  # world sizes the console's launcher or NCCL states

    def line(self, text: str, tag: int | None, label: str | None) -> None:
        """Read one line for a statement; ``tag`` is the line's local tag, ``label`` a collector's node label."""
        if tag is not None and "anks " in text and (m := _NCCL_INIT.search(text)):
            self._nccl.setdefault(int(m["n"]), set()).add((tag, int(m["rank"])))
            return
        if "=[" not in text or (m := _RDZV.search(text)) is None:
            return
        values = _ints(m["list"])
        key = label or ""
        if m["key"] == "local_ranks":
            self._locals[key] = values
        elif m["key"] == "global_world_sizes":
            self.worlds.update(values)
        elif (local := self._locals.pop(key, None)) is not None and len(local) == len(values):
            for lr, gr in zip(local, values, strict=True):
                if label:
                    self.node_pairs.append((label, lr, gr))
                else:
                    self.pairs.add((lr, gr))

    def offset(self, tags: set[int], nnodes: set[int], worlds: set[int]) -> int | None:
        """The first global rank of this console's agent (its local tags ``tags``), where its lines state it and
        agree; ``nnodes`` and ``worlds``: the node counts and world sizes the rest of the console stated."""
        offsets = {g - lr for lr, g in self.pairs}
        if not offsets and self._nccl:  # the largest communicator's ranks, where no launcher's line states one
            offsets = {g - lr for lr, g in self._nccl[max(self._nccl)]}
        if len(offsets) == 1:
            found = offsets.pop()
            return found if found >= 0 else None
        if offsets:
            return None  # statements that disagree: two agents' lines, or a subgroup's ranks
        # The whole world on this console's agent: its first global rank is 0.
        worlds = worlds | self.worlds
        if nnodes == {1} or tags and len(worlds) == 1 and worlds == {len(tags)} and max(tags) + 1 == len(tags):
            return 0
        return None
