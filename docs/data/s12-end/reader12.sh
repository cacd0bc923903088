#!/bin/bash
# Session 12 end: the reader alone (85f0bf6 = base12, the merge 9f30585 = merged12).
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
uptime | tee $OUT/env2.txt
python3 -m compileall -q ncclcheck .device/base12/ncclcheck .device/merged12/ncclcheck
timeout 400 python3 tools/bench_analyze.py --only chatty --chatty-mib 512 --runs 21 --engines hyperscan \
  --baseline .device/base12 --baseline .device/merged12 2>&1 | tail -14 | tee $OUT/reader2.txt
