#!/bin/bash
# h-scale's end: the scale at 8,192 to 131,072 ranks (files, node logs), 262,144 as 2,048 node logs and their merge;
# the session's start (93891a9, ../scale-base) at 100,000 first, in the same call.
set -u
python3 -m pip install -q --no-index --break-system-packages ../../.whl/dev/*.whl 2>&1 | tail -1
python3 -c 'import sys, os, multiprocessing as m; print(sys.version, m.get_start_method(), os.cpu_count())' | tee $OUT/env.txt
python3 -m compileall -q ncclcheck ../scale-base/ncclcheck
timeout 440 python3 tools/bench_ranks.py --sizes 8192,32768,100000,131072 --shapes files,nodes \
  --baseline ../scale-base --baseline-sizes 100000 --big 262144 --big-nodes 2048 2>&1 | tee $OUT/ranks.txt
