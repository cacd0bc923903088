#!/usr/bin/env bash
# Record a main process evaluating alone while the others wait for it in the store, as
# tests/data/launchers/torchrun/busy_store_<case>/ (issue 41, "a slow rank is not a dead one"; job/storewait.py):
# tools/launchers/busy_store_job.py under torchrun (gloo on CPU, 2 processes, one node, store timeout 4 s); rank 0
# evaluates for 8 s while rank 1 waits in the store and gives up.
#   console  the console as a user pastes it (no --tee: rank 0's lines name no rank)
#   tee      with --tee 3 (every line tagged [defaultN]:)
#
# usage: tools/launchers/busy_store.sh [OUT_DIR] [CASE ...]   (default: tests/data/launchers/torchrun, all)
set -euo pipefail
default_cases=(console tee)
# shellcheck source=tools/launchers/torchrun_args.sh
. "$(dirname "$0")/torchrun_args.sh" "$@"
port=29980
for case in "${cases[@]}"; do
  dir=$out/busy_store_$case
  rm -rf "$dir"; mkdir -p "$dir"
  port=$((port + 1))
  tee=()
  [ "$case" = tee ] && tee=(--tee 3)
  set +e
  JOB_TIMEOUT=4 prlimit --as=6000000000 -- "$venv/bin/torchrun" --nnodes 1 --nproc-per-node 2 --master-port $port \
    "${tee[@]}" tools/launchers/busy_store_job.py >"$dir/console.log" 2>&1
  rc=$?
  set -e
  echo "torchrun exit status $rc" >"$dir/exit_status.txt"
  find "$dir" -type f -name '*.log' -exec sed -i "s#$root/##g" {} +
done
