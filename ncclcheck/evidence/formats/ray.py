"""Ray Train (2.x, TorchTrainer): which worker process is which global rank.

Ray puts the actor and its PID before each line a worker prints ("(RayTrainWorker pid=5665) ..."), never the rank;
the rank comes from Ray's own lines that pair a PID with it: the controller's table when the worker group starts
("- (ip=192.0.2.2, pid=5494) world_rank=0, local_rank=0, node_rank=0") and each worker's "Setting up process group
for: env:// [rank=0, world_size=4]". A line Ray merged across workers ("... [repeated 4x across cluster]") stands for
several processes and names none. Recorded with tools/launchers/python_launchers.sh (tests/data/launchers/ray/).

A worker whose process died without an error of its own is reported by the controller, not by the worker: Ray's
actor error lists the actor ("class_name: RayTrainWorker", "pid: 19369", ...) and then "The actor is dead because
its worker process has died. Worker exit type: SYSTEM_ERROR" (the worker's connection to Ray ended without the worker
saying it would exit: a kill by signal or a crash). Ray Train groups the workers' errors under "[Rank 1 Error
Snippet]:" (poll.py's get_error_string; "[Rank 0,2 Error Snippet]:" where ranks' errors differ only in numbers).
The dead worker is the one of the PID the actor error names, or else the one rank of the snippet it stands in.
"""

from __future__ import annotations

import re

# Lines that pair a worker's PID with its global rank: (pattern, group of the PID, group of the rank).
PID_RANKS = (
    (re.compile(r"\(ip=[\d.]+, pid=(\d+)\) world_rank=(\d+), local_rank="), 1, 2),
    (re.compile(r"^\(RayTrainWorker pid=(\d+)[^)]*\) Setting up process group for: \S+ \[rank=(\d+), world_size="),
     1, 2),
)
# The actor and PID of the process a line is from (a worker's, the controller's, any actor's).
PID_TAG = re.compile(r"^\(\w+ pid=(\d+)(?:, ip=[\d.]+)?\)")
MERGED = "across cluster]"
# The controller's report of a worker that died without an error of its own ("SYSTEM_ERROR": Ray's exit type for a
# worker that went away unannounced), cut before Ray's list of what may have caused it.
DIED = re.compile(r"The actor is dead because its worker process has died\. Worker exit type: SYSTEM_ERROR"
                  r"(?:(?!Some common causes).)*")
SNIPPET = re.compile(r"\[Rank ([\d,]+) Error Snippet\]:")
ACTOR_PID = re.compile(r"^(?:\(\w+ pid=\d+[^)]*\) ?)?\s+pid: (\d+)\s*$")
WORDS = ("world_rank=", "Setting up process group for", "worker process has died", "Error Snippet]")


class Deaths:
    """One input's Ray actor errors, read in order: the worker a "worker process has died" line is about."""

    def __init__(self) -> None:
        self._snippet: list[int] = []  # the ranks of the error snippet being read
        self._pid: int | None = None  # the PID of the actor error being read

    def feed(self, text: str) -> tuple[int | None, list[int], str] | None:
        """(the dead worker's PID, the snippet's ranks, Ray's words) for a death line; None for any other line."""
        if "Error Snippet]" in text and (m := SNIPPET.search(text)):
            self._snippet = [int(r) for r in m[1].split(",")]
            self._pid = None
        elif "pid: " in text and (m := ACTOR_PID.match(text)):
            self._pid = int(m[1])
        elif "worker process has died" in text and (m := DIED.search(text)):
            return self._pid, self._snippet, m[0].strip()
        return None
