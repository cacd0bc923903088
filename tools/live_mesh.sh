#!/usr/bin/env bash
# A live hang in one tensor-parallel group (tools/incident_mesh.py tp_straggler) read by `ncclcheck snapshot`
# through every rank's dump pipe while it hangs; keeps the console, the archive, the snapshot's JSON and report,
# and the time the command took.  Usage: tools/live_mesh.sh NGPUS OUTDIR   (8 GPUs: TP 2 x PP 2 x DP 2; 2: TP 2)
set -u
n=$1; d=$2; mkdir -p "$d/dumps"
if [ "$n" = 8 ]; then mesh=2,2,2; else mesh=2,1,1; fi
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
MESH=$mesh INCIDENT_TIMEOUT_S=120 TORCH_FR_BUFFER_SIZE=2000 TORCH_FR_DUMP_ON_TIMEOUT=1 \
  TORCH_FR_DUMP_TEMP_FILE="$d/dumps/nccl_trace_rank_" TORCH_NCCL_DEBUG_INFO_PIPE_FILE="$d/dumps/pipe_rank_" \
  timeout 150 torchrun --standalone --nproc-per-node "$n" tools/incident_mesh.py tp_straggler > "$d/console.log" 2>&1 &
job=$!
sleep 35
launcher=$(pgrep -f "torchrun --standalone --nproc-per-node $n tools/incident_mesh.py tp_straggler" | head -1)
start=$(date +%s%N)
PYTHONPATH=$(pwd) python3 -m ncclcheck snapshot --pid "$launcher" --out "$d/snapshot.tar.gz" --json \
  > "$d/snapshot.json" 2> "$d/snapshot.stderr"
echo "snapshot rc=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))" | tee "$d/snapshot.time"
COLUMNS=120 PYTHONPATH=$(pwd) python3 -m ncclcheck snapshot --pid "$launcher" > "$d/snapshot.txt" 2>&1
PYTHONPATH=$(pwd) python3 -m ncclcheck analyze-log "$d/snapshot.tar.gz" > "$d/analyze.txt" 2>&1
kill -- "$job" 2>/dev/null; pkill -f "incident_mesh.py tp_straggler"; wait
