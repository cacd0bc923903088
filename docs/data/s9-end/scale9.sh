#!/bin/bash
set -u
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
python3 -m compileall -q .device/merged/ncclcheck
cd .device/merged && timeout 400 python3 tools/bench_ranks.py --sizes 8192,100000 --shapes files,nodes --big 262144 --big-nodes 2048 \
  2>&1 | tail -40 | tee $OUT/ranks.txt
