#!/usr/bin/env bash
# CPU recordings (gloo, torch 2.13 CPU wheel, 2 ranks under torchrun --standalone) for the h-hang rules of issue 41,
# with tools/record41/counters_job.py:
#   ddp_count   rank 1's model has one more layer: DDP's construction check of the parameter counts
#   ddp_shape   rank 1's Linear is one output wider: DDP's check of the parameters' sizes
#   apart       rank 1 runs two batches fewer than rank 0 and sleeps; rank 0 waits in its next all_reduce; once both
#               have printed their last batch (5 s), SIGKILL to torchrun's process group and both workers: the
#               console stops with the ranks' counters apart and no failure line
# Usage: tools/record41/run_counters.sh [OUTDIR [CASE...]]   (default tests/data/gloo_counters, every case)
set -u
out=${1:-tests/data/gloo_counters}; mkdir -p "$out"; shift
cases="$*"
on() { [ -z "$cases" ] || [[ " $cases " == *" $1 "* ]]; }
py=${PYTHON:-/work/main/.venv/bin/python}
job=$(pwd)/tools/record41/counters_job.py
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
rec() {  # name mode
  local name=$1 mode=$2; local d="$out/$name"; rm -rf "$d"; mkdir -p "$d"
  echo "torchrun --standalone --nproc-per-node 2 tools/record41/counters_job.py $mode" > "$d/command.txt"
  env JOB_DIR=/tmp prlimit --as=6000000000 -- timeout 120 "$py" -m torch.distributed.run --standalone \
    --nproc-per-node 2 "$job" "$mode" > "$d/console.log" 2>&1
  echo "exit=$?" > "$d/exit_status.txt"
}
on ddp_count && rec ddp_count ddp_count
on ddp_shape && rec ddp_shape ddp_shape
if on apart; then
d="$out/apart"; rm -rf "$d"; mkdir -p "$d"
echo "setsid torchrun --standalone --nproc-per-node 2 tools/record41/counters_job.py apart; once 'Rank 0 batch 7 start' printed (rank 0 waits in its 7th all_reduce, rank 1 ran 6), 5 s, then kill -KILL -- -PGID PID0 PID1" > "$d/command.txt"
jd=$(mktemp -d)
setsid env JOB_DIR="$jd" STEPS=8 prlimit --as=6000000000 -- "$py" -m torch.distributed.run --standalone \
  --nproc-per-node 2 "$job" apart > "$d/console.log" 2>&1 &
pid=$!
for i in $(seq 120); do grep -q "Rank 0 batch 7 start" "$d/console.log" && break; sleep 1; done
sleep 5
kill -KILL -- -"$pid" "$(cat "$jd/pid.0")" "$(cat "$jd/pid.1")"; wait "$pid"; echo "exit=$?" > "$d/exit_status.txt"
fi
for f in $(find "$out" -type f -name '*.log'); do
  sed -i -e "s#$(pwd)/##g" -e "s#/tmp/torchelastic_[A-Za-z0-9_]*#/tmp/torchelastic#g" "$f"
done
