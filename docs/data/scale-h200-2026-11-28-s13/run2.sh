#!/bin/bash
# h-scale (session 13, issue 42), second call: the main process's CPU by stage (stages.py, process_time wrappers, 16
# workers) at 100,000 ranks as node logs, each tree twice, order swapped; then node logs alone in eight rounds (ab.py).
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
{ python3 -c 'import sys, multiprocessing as m; print(sys.version, m.get_start_method(), __import__("os").cpu_count())'; nproc; uptime; } | tee $OUT/env2.txt
python3 -m compileall -q .device/scale13/ncclcheck .device/base13/ncclcheck
cd .device/scale13
python3 -c "import sys; sys.path.insert(0, 'tools'); import bench_ranks as b; from concurrent.futures import ProcessPoolExecutor as P; p = P(16); b.write_job('/tmp/j13', 100000, 100, p); p.shutdown()"
for order in "../base13 ." ". ../base13"; do for t in $order; do
  echo "== $t $(cut -d' ' -f1 /proc/loadavg)"; PYTHONPATH=$t timeout 60 python3 stages.py /tmp/j13 16 /tmp/out-$(basename $(realpath $t)).json
done; done 2>&1 | tee $OUT/stages.txt
cmp /tmp/out-base13.json /tmp/out-scale13.json && echo "stages: JSON identical" | tee -a $OUT/stages.txt
AB_NODES=8 AB_BUDGET=230 timeout 290 python3 ab.py ../base13 2>&1 | tee $OUT/ab2.txt
uptime | tee -a $OUT/env2.txt
