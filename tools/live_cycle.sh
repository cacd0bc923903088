#!/usr/bin/env bash
# A live opposite-order deadlock (tools/incident_failures.py order_cycle, 2 GPUs) read by `ncclcheck snapshot`
# through the ranks' dump pipes while it hangs; keeps the console, the archive, the snapshot's JSON and the time
# the command took.  Usage: tools/live_cycle.sh OUTDIR
set -u
d=$1; mkdir -p "$d/dumps"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
INCIDENT_TIMEOUT_S=120 TORCH_FR_BUFFER_SIZE=2000 TORCH_FR_DUMP_ON_TIMEOUT=1 \
  TORCH_FR_DUMP_TEMP_FILE="$d/dumps/nccl_trace_rank_" TORCH_NCCL_DEBUG_INFO_PIPE_FILE="$d/dumps/pipe_rank_" \
  timeout 150 torchrun --standalone --nproc-per-node 2 tools/incident_failures.py order_cycle > "$d/console.log" 2>&1 &
job=$!
sleep 30
launcher=$(pgrep -f "torchrun --standalone --nproc-per-node 2 tools/incident_failures.py order_cycle" | head -1)
start=$(date +%s%N)
PYTHONPATH=$(pwd) python3 -m ncclcheck snapshot --pid "$launcher" --out "$d/snapshot.tar.gz" --json \
  > "$d/snapshot.json" 2> "$d/snapshot.stderr"
echo "snapshot rc=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))" | tee "$d/snapshot.time"
PYTHONPATH=$(pwd) python3 -m ncclcheck analyze-log "$d/snapshot.tar.gz" > "$d/analyze.txt" 2>&1
kill -- "$job" 2>/dev/null; pkill -f "incident_failures.py order_cycle"; wait
