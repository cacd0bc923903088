#!/usr/bin/env bash
# Record a main process busy alone as tests/data/launchers/torchrun/busy_<case>/ (issue 41 section 4, "a slow rank is
# not a dead one"): tools/launchers/busy_main_job.py under torchrun (gloo on CPU, 4 processes, one node, gloo timeout
# 10 s); rank 0 works for 25 s while ranks 1-3 wait in a collective and time out.
#   tokenize  rank 0's "Running tokenizer on dataset" bar, the others in dist.barrier(); the console as a user pastes
#             it (no --tee: no [defaultN]: tags) and, with --log-dir --redirects 3 --tee 3, one file per rank
#   eval      rank 0's "Evaluating" bar, the others in an all_reduce, the console with --tee 3
#   loop      rank 0's bar with no description drawn with ncols=0 (its counts alone), the others in a broadcast from
#             rank 0; the console without --tee
#
# usage: tools/launchers/busy_main.sh [OUT_DIR] [CASE ...]   (default: tests/data/launchers/torchrun, all)
set -euo pipefail
default_cases=(tokenize eval loop)
# shellcheck source=tools/launchers/torchrun_args.sh
. "$(dirname "$0")/torchrun_args.sh" "$@"
port=29960
for case in "${cases[@]}"; do
  dir=$out/busy_$case
  rm -rf "$dir"; mkdir -p "$dir"
  port=$((port + 1))
  set +e
  if [ "$case" = tokenize ]; then
    JOB_TIMEOUT=10 prlimit --as=6000000000 -- "$venv/bin/torchrun" --nnodes 1 --nproc-per-node 4 --master-port $port \
      tools/launchers/busy_main_job.py "$case" >"$dir/console.log" 2>&1
    port=$((port + 1))
    JOB_TIMEOUT=10 prlimit --as=6000000000 -- "$venv/bin/torchrun" --nnodes 1 --nproc-per-node 4 --master-port $port \
      --log-dir "$dir/logs" --redirects 3 --tee 3 tools/launchers/busy_main_job.py "$case" >"$dir/tee-console.log" 2>&1
  elif [ "$case" = loop ]; then
    JOB_TIMEOUT=10 prlimit --as=6000000000 -- "$venv/bin/torchrun" --nnodes 1 --nproc-per-node 4 --master-port $port \
      tools/launchers/busy_main_job.py "$case" >"$dir/console.log" 2>&1
  else
    JOB_TIMEOUT=10 prlimit --as=6000000000 -- "$venv/bin/torchrun" --nnodes 1 --nproc-per-node 4 --master-port $port \
      --tee 3 tools/launchers/busy_main_job.py "$case" >"$dir/console.log" 2>&1
  fi
  rc=$?
  set -e
  echo "torchrun exit status $rc" >"$dir/exit_status.txt"
  find "$dir" -type f -name '*.log' -exec sed -i "s#$root/##g" {} +
done
