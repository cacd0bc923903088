#!/usr/bin/env bash
# Record uneven data as tests/data/launchers/torchrun/uneven_<case>/ (issue 41 §5): tools/launchers/uneven_job.py
# under torchrun (gloo on CPU, 2 processes, one node, gloo timeout 10 s), `--log-dir <case>/logs --redirects 3 --tee 3`.
# 25 samples split by rank, 2 a batch: rank 0 holds 7 batches, rank 1 6.
#   lines_barrier  each rank prints "epoch 0 batch i/n"; after its loop a rank waits in dist.barrier()
#   lines_metric   the same, with an all_reduce of the epoch's one-element loss after the loop
#   tqdm_barrier   a tqdm bar per rank instead of the prints, then the barrier
#
# usage: tools/launchers/uneven.sh [OUT_DIR] [CASE ...]   (default: tests/data/launchers/torchrun, all)
set -euo pipefail
default_cases=(lines_barrier lines_metric tqdm_barrier)
# shellcheck source=tools/launchers/torchrun_args.sh
. "$(dirname "$0")/torchrun_args.sh" "$@"
port=29940
for case in "${cases[@]}"; do
  dir=$out/uneven_$case
  rm -rf "$dir"; mkdir -p "$dir"
  port=$((port + 1))
  set +e
  JOB_TIMEOUT=10 "$venv/bin/torchrun" --nnodes 1 --nproc-per-node 2 --master-port $port --log-dir "$dir/logs" \
    --redirects 3 --tee 3 tools/launchers/uneven_job.py ${case%%_*} ${case#*_} >"$dir/console.log" 2>&1
  rc=$?
  set -e
  echo "torchrun exit status $rc" >"$dir/exit_status.txt"
  sed -i "s#$root/##g" "$dir/console.log"
  find "$dir/logs" -type f -exec sed -i "s#$root/##g" {} +
done
