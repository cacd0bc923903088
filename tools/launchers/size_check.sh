#!/usr/bin/env bash
# Record a collective's own size check as tests/data/launchers/torchrun/size_<case>/ (issue 41 section 5):
# tools/launchers/size_job.py under torchrun (gloo on CPU, 2 processes, one node, gloo timeout 10 s, --tee 3); rank 1
# passes a buffer of the wrong size, raises in the check and leaves; rank 0 waits in the collective and loses it.
#   gather   all_gather_into_tensor, rank 1's output one input long
#   scatter  reduce_scatter_tensor, rank 1's output as long as its input
#
# usage: tools/launchers/size_check.sh [OUT_DIR] [CASE ...]   (default: tests/data/launchers/torchrun, all)
set -euo pipefail
default_cases=(gather scatter)
# shellcheck source=tools/launchers/torchrun_args.sh
. "$(dirname "$0")/torchrun_args.sh" "$@"
port=29980
for case in "${cases[@]}"; do
  dir=$out/size_$case
  rm -rf "$dir"; mkdir -p "$dir"
  port=$((port + 1))
  set +e
  JOB_TIMEOUT=10 prlimit --as=6000000000 -- "$venv/bin/torchrun" --nnodes 1 --nproc-per-node 2 --master-port $port \
    --tee 3 tools/launchers/size_job.py "$case" >"$dir/console.log" 2>&1
  rc=$?
  set -e
  echo "torchrun exit status $rc" >"$dir/exit_status.txt"
  sed -i "s#$root/##g" "$dir/console.log"
done
