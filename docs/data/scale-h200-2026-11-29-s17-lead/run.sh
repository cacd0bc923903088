#!/bin/bash
# lead (session 17): the merged tree (trial) against 0dbcc5d, per-rank files and node logs at 100,000 ranks
set -u
export PYTHONUNBUFFERED=1
T0=$SECONDS
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
{ python3 -c 'import sys, multiprocessing as m; print(sys.version, m.get_start_method(), __import__("os").cpu_count())'; nproc; uptime; } | tee $OUT/env.txt
python3 -m compileall -q .device/final17/ncclcheck .device/base17/ncclcheck
cp .device/final17/ab.py .device/final17.sh $OUT/
( cd .device/final17 && AB_BUDGET=330 timeout 420 python3 ab.py ../base17 2>&1 | tee $OUT/ab.txt )
echo "all done at $((SECONDS - T0)) s" | tee -a $OUT/env.txt; uptime | tee -a $OUT/env.txt
