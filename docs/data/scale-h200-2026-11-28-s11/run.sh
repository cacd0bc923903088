#!/bin/bash
# h-scale (session 11, issue 42): af9d927 (baseaf) and this branch (scale11) in turn on the same jobs (ab.py, the
# eighth session's script), order swapped in round 2, on one host's CPU cores.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
{ python3 -c 'import sys, multiprocessing as m; print(sys.version, m.get_start_method(), __import__("os").cpu_count())'; nproc; uptime; } | tee $OUT/env.txt
python3 -m compileall -q .device/scale11/ncclcheck .device/baseaf/ncclcheck
cd .device/scale11 && AB_BUDGET=370 timeout 400 python3 ab.py ../baseaf 2>&1 | tee $OUT/ab.txt
uptime | tee -a $OUT/env.txt
