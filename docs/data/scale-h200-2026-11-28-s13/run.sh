#!/bin/bash
# h-scale (session 13, issue 42): 3de2d91 (base13) and this branch (scale13) in turn on the same jobs (ab.py, the
# twelfth session's with node logs in six rounds), order swapped from round to round, on one host's CPU cores.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
{ python3 -c 'import sys, multiprocessing as m; print(sys.version, m.get_start_method(), __import__("os").cpu_count())'; nproc; uptime; } | tee $OUT/env.txt
python3 -m compileall -q .device/scale13/ncclcheck .device/base13/ncclcheck
cd .device/scale13 && AB_BUDGET=${AB_BUDGET:-340} timeout 405 python3 ab.py ../base13 2>&1 | tee $OUT/ab.txt
uptime | tee -a $OUT/env.txt
