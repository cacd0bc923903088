#!/bin/bash
# Session 14 end: the reader alone (2bd6155 = base14r, the merge = merged14), two rounds with the order swapped.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
uptime | tee $OUT/env.txt
python3 -m compileall -q ncclcheck .device/base14r/ncclcheck .device/merged14/ncclcheck
timeout 190 python3 tools/bench_analyze.py --only chatty --chatty-mib 512 --runs 15 --engines hyperscan \
  --baseline .device/base14r --baseline .device/merged14 2>&1 | tail -14 | tee $OUT/reader-round1.txt
timeout 190 python3 tools/bench_analyze.py --only chatty --chatty-mib 512 --runs 15 --engines hyperscan \
  --baseline .device/merged14 --baseline .device/base14r 2>&1 | tail -14 | tee $OUT/reader-round2.txt
