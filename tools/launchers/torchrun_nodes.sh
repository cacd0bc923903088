#!/usr/bin/env bash
# Record a lost node and restarts at torchrun's default log level, as tests/data/launchers/torchrun/<case>/.
#
# Both run tools/launchers/worker.py under torchrun (gloo on CPU) with `--tee 3` and no LOGLEVEL (the agent's
# WARNING level, what most consoles hold):
#   node_lost  two agents of one job (`--nnodes 2 --rdzv-backend c10d`, one worker each, each agent in its own
#              process group as on its own host), worker.py slow; once both workers have joined, the second agent's
#              agent and its workers get SIGKILL at once (a host that lost power or was fenced): its console stops with no
#              line of the agent's; the first agent's worker loses its peer and its agent reports the failure.
#              node0.console.log, node1.console.log.
#   restarts   one agent, `--nproc-per-node 2 --max-restarts 2`, worker.py raise 1: rank 1 raises at step 3 in every
#              attempt (WORKER_INIT=env: each attempt meets on torchrun's store afresh); the agent restarts the
#              workers twice, then reports the failure. console.log.
#
# usage: tools/launchers/torchrun_nodes.sh [OUT_DIR] [CASE ...]   (default: tests/data/launchers/torchrun, both)
set -euo pipefail
default_cases=(node_lost restarts)
# shellcheck source=tools/launchers/torchrun_args.sh
. "$(dirname "$0")/torchrun_args.sh" "$@"
port=29950
for case in "${cases[@]}"; do
  dir=$out/$case
  rm -rf "$dir"; mkdir -p "$dir"
  port=$((port + 1))
  if [ "$case" = node_lost ]; then
    agents=()
    for n in 0 1; do
      setsid "$venv/bin/torchrun" --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d \
        --rdzv-endpoint 127.0.0.1:$port --rdzv-id lost --tee 3 tools/launchers/worker.py slow \
        >"$dir/node$n.console.log" 2>&1 &
      agents+=($!)
      sleep 2  # the first agent hosts the rendezvous' store (the endpoint's port): the node that is lost does not
    done
    for _ in $(seq 120); do
      [ "$(cat "$dir"/node*.console.log | grep -c ' joined (pid ' || true)" -ge 2 ] && break; sleep 0.5
    done
    sleep 3
    # the agent and every process under it (torchrun starts its workers in sessions of their own), at once
    victims=("${agents[1]}"); todo=("${agents[1]}")
    while [ ${#todo[@]} -gt 0 ]; do
      kids=$(ps -o pid= --ppid "${todo[0]}" || true); todo=("${todo[@]:1}")
      for k in $kids; do victims+=("$k"); todo+=("$k"); done
    done
    kill -KILL "${victims[@]}"
    set +e; wait "${agents[0]}"; rc0=$?; wait "${agents[1]}"; rc1=$?; set -e
    printf 'node0 torchrun exit status %s\nnode1 torchrun exit status %s (it and its workers killed with SIGKILL)\n' \
      "$rc0" "$rc1" >"$dir/exit_status.txt"
  else
    set +e
    WORKER_INIT=env "$venv/bin/torchrun" --nnodes 1 --nproc-per-node 2 --max-restarts 2 --master-port $port --tee 3 \
      tools/launchers/worker.py raise 1 >"$dir/console.log" 2>&1
    echo "torchrun exit status $?" >"$dir/exit_status.txt"
    set -e
  fi
  sed -i "s#$root/##g" "$dir"/*.log
done
