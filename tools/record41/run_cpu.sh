#!/usr/bin/env bash
# CPU recordings (gloo, torch 2.13 CPU wheel, 2 ranks under torchrun --standalone) for ncclcheck issue 41 §4-§5,
# with tools/record41/job.py: the mechanisms earlier recorders left out on gloo.
#   gloo_bcast     rank 0, broadcast's root, sleeps in host code; rank 1 times out inside broadcast (gloo prints no op)
#   gloo_a2a_short all_to_all_single where rank 1 sends rank 0 two elements where rank 0's split expects four
#   gloo_rs_size   reduce_scatter_tensor with an output as large as its input
#   cut            "step i/n" every 0.5 s, then SIGKILL to torchrun's process group and both workers (in sessions of their own) once step 6 printed: the console and
#                  the per-rank log folder stop mid-run with no ending (a machine lost, a container killed)
# Usage: tools/record41/run_cpu.sh [OUTDIR [CASE...]]   (default tests/data/gloo_mechanisms, every case); needs torch
set -u
out=${1:-tests/data/gloo_mechanisms}; mkdir -p "$out"; shift
cases="$*"
on() { [ -z "$cases" ] || [[ " $cases " == *" $1 "* ]]; }
py=${PYTHON:-/work/main/.venv/bin/python}
job=$(pwd)/tools/record41/job.py
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 JOB_BACKEND=gloo JOB_TIMEOUT_S=10
rec() {  # name mode [ENV=VALUE...]
  local name=$1 mode=$2; shift 2; local d="$out/$name"; rm -rf "$d"; mkdir -p "$d"
  echo "env JOB_BACKEND=gloo JOB_TIMEOUT_S=10 $* torchrun --standalone --nproc-per-node 2 --log-dir logs --redirects 3 --tee 3 tools/record41/job.py $mode" > "$d/command.txt"
  env JOB_DIR=/tmp "$@" prlimit --as=6000000000 -- timeout 120 "$py" -m torch.distributed.run --standalone \
    --nproc-per-node 2 --log-dir "$d/logs" --redirects 3 --tee 3 "$job" "$mode" > "$d/console.log" 2>&1
  echo "exit=$?" > "$d/exit_status.txt"
}
on gloo_bcast && rec gloo_bcast bcast_root HANG_S=30
on gloo_a2a_short && rec gloo_a2a_short a2a_short
on gloo_rs_size && rec gloo_rs_size rs_size
if on cut; then
d="$out/cut"; rm -rf "$d"; mkdir -p "$d"
echo "env JOB_BACKEND=gloo STEPS=200 STEP_S=0.5 setsid torchrun --standalone --nproc-per-node 2 --log-dir logs --redirects 3 --tee 3 tools/record41/job.py steps; once "step 6/" printed: kill -KILL -- -PGID PID0 PID1 (the agent and both workers, which torchrun starts in their own sessions)" > "$d/command.txt"
jd=$(mktemp -d)
setsid env JOB_DIR="$jd" STEPS=200 STEP_S=0.5 prlimit --as=6000000000 -- "$py" -m torch.distributed.run --standalone \
  --nproc-per-node 2 --log-dir "$d/logs" --redirects 3 --tee 3 "$job" steps > "$d/console.log" 2>&1 &
pid=$!
for i in $(seq 120); do grep -q "step 6/" "$d/console.log" && break; sleep 1; done
kill -KILL -- -"$pid" "$(cat "$jd/pid.0")" "$(cat "$jd/pid.1")"; wait "$pid"; echo "exit=$?" > "$d/exit_status.txt"
fi
# torchrun names its log folder by a random run id and the machine's paths appear in tracebacks: keep neither.
for r in "$out"/*/logs/*_*/; do [ -d "$r" ] && mv "$r" "$(dirname "$r")/run"; done
for f in $(find "$out" -type f -name '*.log'); do
  sed -i -e "s#$(pwd)/##g" -e "s#/tmp/torchelastic_[A-Za-z0-9_]*#/tmp/torchelastic#g" "$f"
done
find "$out" -type f -empty -delete
