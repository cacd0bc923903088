#!/usr/bin/env bash
# Record how torchrun's jobs end by a signal, and a rank that leaves early, as tests/data/launchers/torchrun/<case>/.
#
# Each case runs tools/launchers/worker.py under torchrun (gloo on CPU, 3 processes, one node) with
# `--log-dir <case>/logs --redirects 3 --tee 3`: the console (console.log, with torchrun's own lines and each worker's
# lines behind its `[defaultN]:` tag) and one folder per rank (logs/<run id>/attempt_0/<rank>/stdout.log, stderr.log).
# The signals are sent from outside, as a scheduler, a person or the kernel would, once every worker has joined:
#   early_exit   rank 2 leaves with status 0 before step 3; ranks 0-1 wait in all_reduce (gloo timeout 10 s)
#   outside_term SIGTERM to rank 1's process (kill -TERM PID): torchrun then stops ranks 0 and 2
#   sigkill      SIGKILL to rank 1's process: torchrun then stops ranks 0 and 2
#   sigint       SIGINT to torchrun's whole process group, as Ctrl-C in its terminal does
#   agent_term   SIGTERM to torchrun itself (a scheduler's stop, a pod's deletion): it stops its workers
#   nohup_hup    torchrun started under nohup, then SIGHUP to it, as the kernel sends when the terminal or SSH session
#                that started it closes: nohup's ignored SIGHUP is undone by the agent's own handler, so it stops
#
# usage: tools/launchers/torchrun_signals.sh [OUT_DIR] [CASE ...]   (default: tests/data/launchers/torchrun, all)
set -euo pipefail
default_cases=(early_exit outside_term sigkill sigint agent_term nohup_hup)
# shellcheck source=tools/launchers/torchrun_args.sh
. "$(dirname "$0")/torchrun_args.sh" "$@"
port=29900
for case in "${cases[@]}"; do
  dir=$out/$case
  rm -rf "$dir"; mkdir -p "$dir"
  port=$((port + 1))
  mode=slow; [ "$case" = early_exit ] && mode="early_exit 2"
  wrap=(); [ "$case" = nohup_hup ] && wrap=(nohup)
  # shellcheck disable=SC2086
  setsid "${wrap[@]}" "$venv/bin/torchrun" --nnodes 1 --nproc-per-node 3 --master-port $port --log-dir "$dir/logs" \
    --redirects 3 --tee 3 tools/launchers/worker.py $mode >"$dir/console.log" 2>&1 &
  agent=$!
  if [ "$case" != early_exit ]; then
    for _ in $(seq 60); do [ "$(grep -c ' joined (pid ' "$dir/console.log" || true)" -ge 3 ] && break; sleep 0.5; done
    sleep 2
    victim=$(sed -n 's/.*rank 1 of 3 joined (pid \([0-9]*\)).*/\1/p' "$dir/console.log" | head -1)
    case $case in
      outside_term) kill -TERM "$victim" ;;
      sigkill) kill -KILL "$victim" ;;
      sigint) kill -INT -- "-$agent" ;;
      agent_term) kill -TERM "$agent" ;;
      nohup_hup) kill -HUP "$agent" ;;
    esac
  fi
  set +e; wait $agent; rc=$?; set -e
  echo "torchrun exit status $rc" >"$dir/exit_status.txt"
  sed -i "s#$root/##g" "$dir/console.log"
done
