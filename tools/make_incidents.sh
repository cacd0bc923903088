#!/usr/bin/env bash
# Run every incident scenario on a 2-GPU machine and keep the per-rank logs and FR dumps.
# Usage: tools/make_incidents.sh OUTDIR
set -u
out=${1:?outdir}
mkdir -p "$out"
run() {  # name scenario [ENV=VALUE...]
  name=$1; scen=$2; shift 2
  dir="$out/$name"; mkdir -p "$dir/dumps"
  env "$@" TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 \
    TORCH_NCCL_DEBUG_INFO_TEMP_FILE="$dir/dumps/nccl_trace_rank_" TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC=5000 \
    timeout 120 torchrun --nproc-per-node 2 --log-dir "$dir/torchrun" --redirects 3 --tee 3 \
    tools/incident.py "$scen" > "$dir/console.log" 2>&1
  echo "$name exit=$?"
}
run sleep sleep
run mismatch mismatch
run uneven uneven
run barrier barrier
run exception exception
run sleep-info sleep NCCL_DEBUG=INFO TORCH_CPP_LOG_LEVEL=INFO
run mismatch-desync mismatch TORCH_NCCL_DESYNC_DEBUG=1
run uneven-info-desync uneven NCCL_DEBUG=INFO TORCH_NCCL_DESYNC_DEBUG=1
