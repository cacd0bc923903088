"""Ray Train (2.x, TorchTrainer): which worker process is which global rank.

Ray puts the actor and its PID before each line a worker prints ("(RayTrainWorker pid=5665) ..."), never the rank;
the rank comes from Ray's own lines that pair a PID with it: the controller's table when the worker group starts
("- (ip=192.0.2.2, pid=5494) world_rank=0, local_rank=0, node_rank=0") and each worker's "Setting up process group
for: env:// [rank=0, world_size=4]". A line Ray merged across workers ("... [repeated 4x across cluster]") stands for
several processes and names none. Recorded with tools/launchers/python_launchers.sh (tests/data/launchers/ray/).
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
WORDS = ("world_rank=", "Setting up process group for")
