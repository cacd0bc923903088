"""Start WORLD ranks of worker.py without torchrun (a dead rank must not take the others down with it)."""

import os
import subprocess
import sys

scenario, world, port, logdir = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
os.makedirs(logdir, exist_ok=True)
here = os.path.dirname(os.path.abspath(__file__))
procs = []
for r in range(world):
    env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(world),
               MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    with open(os.path.join(logdir, f"rank{r}.log"), "w") as log:
        procs.append(subprocess.Popen([sys.executable, os.path.join(here, "worker.py"), scenario],
                                      env=env, stdout=log, stderr=subprocess.STDOUT))
for r, p in enumerate(procs):
    print(f"rank {r} exit {p.wait()}", flush=True)
