#!/bin/bash
# h-linear's device run (issue 42): before (base47 = f94adbd) and after, one call
set -u
export PYTHONDONTWRITEBYTECODE=1
python3 -m pip install -q --no-index --break-system-packages ../../.whl/dev/*.whl 2>&1 | tail -1
python3 -m compileall -q ncclcheck ../base47/ncclcheck
{ nproc; python3 -V; python3 -c 'import hyperscan, stringzilla; print("hyperscan, stringzilla ok")'; uptime; } > $OUT/env.txt 2>&1
timeout 440 python3 tools/bench_ranks.py --sizes 8192,32768,100000,131072 --shapes files,nodes \
  --baseline ../base47 --baseline-sizes 8192,32768,100000 --big 262144 --big-nodes 2048 2>&1 | tee $OUT/ranks.txt
uptime >> $OUT/env.txt
