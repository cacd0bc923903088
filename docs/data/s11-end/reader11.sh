#!/bin/bash
# Session 11's end, second call: the reader alone, more runs (af9d927 = baseaf, the merge = merged).
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
uptime | tee $OUT/env2.txt
python3 -m compileall -q ncclcheck .device/baseaf/ncclcheck .device/merged/ncclcheck
timeout 400 python3 tools/bench_analyze.py --only chatty --chatty-mib 512 --runs 21 --engines hyperscan \
  --baseline .device/baseaf --baseline .device/merged 2>&1 | tail -14 | tee $OUT/reader2.txt
