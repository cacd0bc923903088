#!/bin/bash
# h-scale (session 12, issue 42): 85f0bf6 (base12) and this branch (scale12) in turn on the same jobs (ab.py, the
# eighth session's script with node logs in four rounds), order swapped from round to round, on one host's CPU cores.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
{ python3 -c 'import sys, multiprocessing as m; print(sys.version, m.get_start_method(), __import__("os").cpu_count())'; nproc; uptime; } | tee $OUT/env.txt
python3 -m compileall -q .device/scale12/ncclcheck .device/base12/ncclcheck
cd .device/scale12 && AB_BUDGET=330 timeout 395 python3 ab.py ../base12 2>&1 | tee $OUT/ab.txt
uptime | tee -a $OUT/env.txt
