#!/usr/bin/env bash
# Record torchrun's agent failing in its own rendezvous after its workers failed, as
# tests/data/launchers/torchrun/<case>/.
#
# Both: two agents of one job (`--nnodes 2 --rdzv-backend c10d`, one worker each, gloo on CPU, LOGLEVEL=INFO so that
# the agents say what they do), started 2 s apart on one VM: the first agent hosts the rendezvous' TCPStore (the
# endpoint's port) and, the first to join, runs global rank 0. One agent has `--max-restarts 0` and its worker raises
# at step 3 (worker.py raise R); the other has `--max-restarts 3`, so that when its worker loses its peer it restarts
# its worker group and rendezvous again. The agent without restarts reports its worker's failure and, ending, shuts
# the rendezvous down (torch/distributed/launcher/api.py: rdzv_handler.shutdown() unless a signal ended it).
#   rdzv_store_lost  the first agent (the store's host) is the one without restarts (worker.py raise 0): its store
#                    ends with it, and the second agent's re-rendezvous raises RendezvousConnectionError ("The
#                    connection to the C10d store has failed") over the store's "Failed to recv, got 0 bytes".
#   rdzv_closed      the second agent is the one without restarts (worker.py raise 1): the store lives on in the
#                    first agent, which finds the rendezvous closed: RendezvousClosedError.
# node0.console.log is the first agent's, node1.console.log the second's.
#
# usage: tools/launchers/torchrun_rdzv.sh [OUT_DIR] [CASE ...]   (default: tests/data/launchers/torchrun, both)
set -euo pipefail
default_cases=(rdzv_store_lost rdzv_closed)
# shellcheck source=tools/launchers/torchrun_args.sh
. "$(dirname "$0")/torchrun_args.sh" "$@"
port=29970
for case in "${cases[@]}"; do
  dir=$out/$case
  rm -rf "$dir"; mkdir -p "$dir"
  port=$((port + 1))
  if [ "$case" = rdzv_store_lost ]; then none=0; else none=1; fi  # the agent without restarts, and its rank
  agents=()
  for n in 0 1; do
    restarts=$([ "$n" = "$none" ] && echo 0 || echo 3)
    LOGLEVEL=INFO setsid "$venv/bin/torchrun" --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d \
      --rdzv-endpoint 127.0.0.1:$port --rdzv-id "$case" --max-restarts "$restarts" --tee 3 \
      tools/launchers/worker.py raise "$none" >"$dir/node$n.console.log" 2>&1 &
    agents+=($!)
    sleep 2  # the first agent hosts the rendezvous' store and joins first
  done
  set +e; wait "${agents[0]}"; rc0=$?; wait "${agents[1]}"; rc1=$?; set -e
  printf 'node0 torchrun exit status %s (--max-restarts %s)\nnode1 torchrun exit status %s (--max-restarts %s)\n' \
    "$rc0" "$([ "$none" = 0 ] && echo 0 || echo 3)" "$rc1" "$([ "$none" = 1 ] && echo 0 || echo 3)" \
    >"$dir/exit_status.txt"
  sed -i "s#$root/##g" "$dir"/*.log
done
