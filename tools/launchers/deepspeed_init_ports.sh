#!/bin/bash
# Two processes of one world of 2, each given its own MASTER_PORT: DeepSpeed's init_distributed never completes
# (tests/data/launchers/deepspeed/init_ports). DeepSpeed's logger is put at INFO, its level by default before 0.17.
# usage: deepspeed_init_ports.sh PYTHON > console.log 2>&1   (PYTHON: an environment with torch and deepspeed)
py=${1:?usage: deepspeed_init_ports.sh PYTHON}
job='
import datetime, logging
import deepspeed
deepspeed.utils.logger.setLevel(logging.INFO)
for h in deepspeed.utils.logger.handlers:
    h.setLevel(logging.INFO)
deepspeed.init_distributed(dist_backend="gloo", timeout=datetime.timedelta(seconds=60))
print("group started")
'
for r in 0 1; do
  env RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29641 + r)) DS_ACCELERATOR=cpu \
    PYTHONUNBUFFERED=1 timeout 25 "$py" -c "$job" &
done
wait
