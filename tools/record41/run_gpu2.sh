#!/bin/bash
# Second GPU call for ncclcheck issue 41 §4-§5: the launcher and rank mechanisms recorded on CPU with gloo
# (tests/data/launchers/torchrun, tests/data/gloo_mechanisms), now over NCCL on 2 GPUs: an early exit 0, uneven data
# with per-rank progress prints, restarts at the default log level, Ctrl-C, an outside SIGTERM to one rank, a SIGTERM
# to the agent, and every process SIGKILLed mid-run. Run as root from its folder's copy; results in $OUT/rec41b.tar.gz.
set -u
H=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
R=/tmp/rec41b
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
rm -rf "$R"; mkdir -p "$R"
TR="torchrun --standalone --nproc-per-node 2 --log-dir torchrun --redirects 3 --tee 3"
job() {  # name mode [ENV=VALUE...]   (extra torchrun flags in TRX)
  local name=$1 mode=$2; shift 2; local d=$R/$name; mkdir -p $d
  echo "env $* $TR ${TRX:-} job.py $mode" > $d/command.txt
  ( cd $d && env JOB_DIR=$d "$@" timeout -s KILL 150 $TR ${TRX:-} $H/job.py $mode > $d/console.log 2>&1
    echo "exit=$?" > $d/exit_status.txt )
}
sig() {  # name how: steps under setsid; once step 4 printed, the signal
  local name=$1 how=$2; local d=$R/$name; mkdir -p $d
  echo "env JOB_TIMEOUT_S=20 STEPS=400 STEP_S=0.25 setsid $TR job.py steps; once 'step 4/' printed: $how" > $d/command.txt
  ( cd $d; setsid env JOB_DIR=$d JOB_TIMEOUT_S=20 STEPS=400 STEP_S=0.25 $TR $H/job.py steps > $d/console.log 2>&1 &
    p=$!; ( sleep 150; kill -KILL -- -$p ) 2>/dev/null & w=$!
    for i in $(seq 90); do grep -q "step 4/" $d/console.log && break; sleep 1; done
    case $how in
      sigint) kill -INT -- -$p ;;
      outside_term) kill -TERM "$(cat $d/pid.1)" ;;
      agent_term) kill -TERM $p ;;
      cut) kill -KILL -- -$p; kill -KILL "$(cat $d/pid.0)" "$(cat $d/pid.1)" ;;
    esac
    wait $p; echo "exit=$?" > $d/exit_status.txt; kill $w 2>/dev/null ) &
}
job early_exit early_exit JOB_TIMEOUT_S=20 &
job uneven uneven JOB_TIMEOUT_S=20 &
TRX="--max-restarts 2" job restarts raise JOB_TIMEOUT_S=20 &
sig sigint sigint
sig outside_term outside_term
sig agent_term agent_term
sig cut cut
wait
sleep 2; ps aux | grep job.py | grep -v grep | head
for d in $R/*/torchrun; do for r in $d/*_*/; do [ -d "$r" ] && mv "$r" "$d/run"; done; done
rm -f $R/*/pid.*
tar czf "$OUT/rec41b.tar.gz" -C $R .
for c in $R/*/; do echo "== $c $(cat $c/exit_status.txt)"; grep -v "NCCL INFO" $c/console.log | tail -3 | cut -c1-200; done
