#!/usr/bin/env bash
# Record the rendezvous store's client failing to reach the store, as tests/data/launchers/torchrun/<case>/.
#
#   store_wrong_port  one node, `torchrun --standalone --nproc-per-node 2` (gloo on CPU, LOGLEVEL=INFO): its agent
#                     hosts the store, but each worker connects to a port where nothing listens (store_job.py with
#                     STORE_PORT, as nodes given different ports): refused, retried until init_process_group's 8 s
#                     timeout; torchrun reports both workers failed. TORCH_DISTRIBUTED_DEBUG=DETAIL with
#                     TORCH_CPP_LOG_LEVEL=INFO: c10d's trace lines say each refusal ("is not yet listening (errno: 111
#                     - Connection refused), will retry").
#   store_not_a_store the second node of a two-node job (`--nnodes 2 --node-rank 1`, static rendezvous, its join
#                     timeout 8 s by --rdzv-conf) given a store address of no node of the job (--master-addr
#                     10.255.255.1): on the recording VM its network's gateway accepts any TCP connection, so the
#                     agent's store client connects to something that is no TCPStore ("Ping failed, invalid value
#                     returned from server"), retries until the timeout, and the agent fails itself in its rendezvous
#                     (its own traceback through agent.run and _rendezvous) before any worker starts.
# console.log is the whole console (the agent's and the workers' lines); WHAT.txt, written by hand, says what the run did.
#
# usage: tools/launchers/torchrun_store.sh [OUT_DIR] [CASE ...]   (default: tests/data/launchers/torchrun, both)
set -euo pipefail
default_cases=(store_wrong_port store_not_a_store)
# shellcheck source=tools/launchers/torchrun_args.sh
. "$(dirname "$0")/torchrun_args.sh" "$@"
for case in "${cases[@]}"; do
  dir=$out/$case
  rm -rf "$dir"; mkdir -p "$dir"
  set +e
  if [ "$case" = store_wrong_port ]; then
    LOGLEVEL=INFO TORCH_DISTRIBUTED_DEBUG=DETAIL TORCH_CPP_LOG_LEVEL=INFO STORE_PORT=9 \
      "$venv/bin/torchrun" --standalone --nproc-per-node 2 \
      tools/launchers/store_job.py >"$dir/console.log" 2>&1
  else
    LOGLEVEL=INFO "$venv/bin/torchrun" --nnodes 2 --node-rank 1 --nproc-per-node 1 --master-addr 10.255.255.1 \
      --master-port 29990 --rdzv-conf timeout=8 tools/launchers/store_job.py >"$dir/console.log" 2>&1
  fi
  rc=$?
  set -e
  printf 'torchrun exit status %s\n' "$rc" >"$dir/exit_status.txt"
  sed -i "s#$root/##g; s#$venv/##g" "$dir"/*.log
done
