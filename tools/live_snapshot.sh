#!/usr/bin/env bash
# A live hang read by `ncclcheck snapshot` through every rank's dump pipe while it hangs; keeps the console, the
# archive, the snapshot's JSON and report, analyze-log's reading of the archive, and the time the command took.
# Usage: tools/live_snapshot.sh NGPUS OUTDIR SCRIPT SCENARIO [MESH]
#   tools/live_snapshot.sh 2 out/live_cycle tools/incident_failures.py order_cycle     (an opposite-order deadlock)
#   tools/live_snapshot.sh 8 out/live_mesh tools/incident_mesh.py tp_straggler 2,2,2   (a hang in one TP group)
set -u
n=$1; d=$2; script=$3; scen=$4; mesh=${5:-2,1,1}; mkdir -p "$d/dumps"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
MESH=$mesh INCIDENT_TIMEOUT_S=120 TORCH_FR_BUFFER_SIZE=2000 TORCH_FR_DUMP_ON_TIMEOUT=1 \
  TORCH_FR_DUMP_TEMP_FILE="$d/dumps/nccl_trace_rank_" TORCH_NCCL_DEBUG_INFO_PIPE_FILE="$d/dumps/pipe_rank_" \
  timeout 150 torchrun --standalone --nproc-per-node "$n" "$script" "$scen" > "$d/console.log" 2>&1 &
job=$!
sleep 35
launcher=$(pgrep -f "torchrun --standalone --nproc-per-node $n $script $scen" | head -1)
start=$(date +%s%N)
PYTHONPATH=$(pwd) python3 -m ncclcheck snapshot --pid "$launcher" --out "$d/snapshot.tar.gz" --json \
  > "$d/snapshot.json" 2> "$d/snapshot.stderr"
echo "snapshot rc=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))" | tee "$d/snapshot.time"
COLUMNS=120 PYTHONPATH=$(pwd) python3 -m ncclcheck snapshot --pid "$launcher" > "$d/snapshot.txt" 2>&1
PYTHONPATH=$(pwd) python3 -m ncclcheck analyze-log "$d/snapshot.tar.gz" > "$d/analyze.txt" 2>&1
kill -- "$job" 2>/dev/null; pkill -f "$script $scen"; wait
