#!/usr/bin/env bash
# Run every scenario of tools/incident_slow.py on CPU with gloo (no GPU needed), keeping each one's torchrun
# console and per-rank logs (--log-dir). Rank 0 is busy past the timeout; the others time out waiting for it.
# Usage: tools/make_incidents_slow.sh [OUTDIR] [NPROC]   (default /tmp/slow, 4 ranks)
set -u
out=${1:-/tmp/slow}; n=${2:-4}; rm -rf "$out"; mkdir -p "$out"
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
script=$(pwd)/tools/incident_slow.py
python3 -c 'import torch; print(torch.__version__)'
for scen in eval save tokenize; do
  dir="$out/$scen"; mkdir -p "$dir"
  timeout 120 torchrun --standalone --nproc-per-node "$n" --log-dir "$dir/torchrun" --redirects 3 --tee 3 \
    "$script" "$scen" > "$dir/console.log" 2>&1
  echo "$scen exit=$?"
done
# Two "nodes" of 4 ranks each (two torchrun agents on this host, one c10d rendezvous): rank 0 evaluates while the
# other seven wait; each node keeps its own console and log directory.
dir="$out/eval_2nodes"; mkdir -p "$dir"
port=$((29600 + RANDOM % 300))
for node in 0 1; do
  timeout 120 torchrun --nnodes 2 --nproc-per-node 4 --rdzv-backend c10d --rdzv-endpoint "localhost:$port" \
    --rdzv-id slow2n --log-dir "$dir/node$node" --redirects 3 --tee 3 "$script" eval > "$dir/node$node.console.log" 2>&1 &
done
wait
echo "eval_2nodes done"
