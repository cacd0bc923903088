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
