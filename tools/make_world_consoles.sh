#!/usr/bin/env bash
# Real torchrun consoles (gloo on CPU, tools/world_job.py) for the job's world and its restart attempts:
#   restart   4 ranks, --max-restarts 1: rank 1 raises in attempt 0, rank 2 hangs in attempt 1
#   twonodes  8 ranks as two "nodes" (two torchrun agents, --nnodes 2, on 127.0.0.1): rank 5 hangs; one console each
#   tpdp      8 ranks, tp=2 x dp=4 (new_group), LOGLEVEL=INFO: rank 5 hangs before a tp all_reduce
# Usage: tools/make_world_consoles.sh [OUTDIR]   (default tests/data/world); needs torch (CPU is enough)
set -u
out=${1:-tests/data/world}; mkdir -p "$out"
py=${PYTHON:-.venv/bin/python}
job=$(pwd)/tools/world_job.py
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
d="$out/restart"; rm -rf "$d"; mkdir -p "$d"
timeout 200 "$py" -m torch.distributed.run --standalone --nproc-per-node 4 --max-restarts 1 --log-dir "$d/logs" \
  --redirects 3 --tee 3 "$job" restart > "$d/console.log" 2>&1; echo "restart exit=$?"
d="$out/twonodes"; rm -rf "$d"; mkdir -p "$d"
for n in 0 1; do
  timeout 200 "$py" -m torch.distributed.run --nnodes 2 --node-rank $n --nproc-per-node 4 --master-addr 127.0.0.1 \
    --master-port 29517 --log-dir "$d/node$n" --redirects 3 --tee 3 "$job" sleep5 > "$d/node$n.console.log" 2>&1 &
done
wait; echo "twonodes done"
d="$out/tpdp"; rm -rf "$d"; mkdir -p "$d"
LOGLEVEL=INFO timeout 200 "$py" -m torch.distributed.run --standalone --nproc-per-node 8 --log-dir "$d/logs" \
  --redirects 3 --tee 3 "$job" tpdp > "$d/console.log" 2>&1; echo "tpdp exit=$?"
# torchrun names its log folder by a random run id and the machine's paths appear in tracebacks: keep neither.
for d in "$out"/*/logs "$out"/twonodes/node?; do
  for r in "$d"/*_*/; do [ -d "$r" ] && mv "$r" "$d/run"; done
done
for f in $(find "$out" -type f -name '*.log'); do
  sed -i -e "s#$(pwd)/##g" -e "s#/tmp/torchelastic_[A-Za-z0-9_]*#/tmp/torchelastic#g" "$f"
done
find "$out" -type f -empty -delete
