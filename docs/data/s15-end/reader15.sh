#!/bin/bash
# Session 15 end: the reader alone (c18eb8a = base15r, the merge = merged15), two rounds with the order swapped.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
uptime | tee $OUT/env.txt
python3 -m compileall -q ncclcheck .device/base15r/ncclcheck .device/merged15/ncclcheck
timeout 190 python3 tools/bench_analyze.py --only chatty --chatty-mib 512 --runs 15 --engines hyperscan \
  --baseline .device/base15r --baseline .device/merged15 2>&1 | tail -14 | tee $OUT/reader-round1.txt
timeout 190 python3 tools/bench_analyze.py --only chatty --chatty-mib 512 --runs 15 --engines hyperscan \
  --baseline .device/merged15 --baseline .device/base15r 2>&1 | tail -14 | tee $OUT/reader-round2.txt
