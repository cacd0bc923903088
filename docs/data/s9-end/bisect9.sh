#!/bin/bash
set -u
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
python3 -m compileall -q ncclcheck .device/*/ncclcheck
timeout 400 python3 tools/bench_analyze.py --only chatty --chatty-mib 512 --runs 9 --engines hyperscan \
  --baseline .device/base70 --baseline .device/b-typed --baseline .device/b-scale --baseline .device/b-frames \
  --baseline .device/b-stated --baseline .device/merged 2>&1 | tail -20 | tee $OUT/reader.txt
