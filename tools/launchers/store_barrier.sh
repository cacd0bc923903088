#!/usr/bin/env bash
# Record ranks waiting in c10d's store-based barrier for a process that never reached a new group's creation, as
# tests/data/launchers/torchrun/store_barrier_<case>/ (job/storebarrier.py): tools/launchers/store_barrier_job.py
# under torchrun (gloo on CPU, 3 processes, one node, TORCH_DIST_INIT_BARRIER=1); the last rank sleeps 40 s before
# new_group while the others make the group without it and wait in the barrier, which gives up after the group's 25 s timeout.
#   console  the console as a user pastes it (no --tee)
#
# usage: tools/launchers/store_barrier.sh [OUT_DIR] [CASE ...]   (default: tests/data/launchers/torchrun, all)
set -euo pipefail
default_cases=(console)
# shellcheck source=tools/launchers/torchrun_args.sh
. "$(dirname "$0")/torchrun_args.sh" "$@"
port=29990
for case in "${cases[@]}"; do
  dir=$out/store_barrier_$case
  rm -rf "$dir"; mkdir -p "$dir"
  port=$((port + 1))
  set +e
  TORCH_DIST_INIT_BARRIER=1 HOLD_S=40 GROUP_TIMEOUT_S=25 prlimit --as=6000000000 -- "$venv/bin/torchrun" --nnodes 1 \
    --nproc-per-node 3 --master-port $port tools/launchers/store_barrier_job.py >"$dir/console.log" 2>&1
  rc=$?
  set -e
  echo "torchrun exit status $rc" >"$dir/exit_status.txt"
  find "$dir" -type f -name '*.log' -exec sed -i "s#$root/##g" {} +
done
