#!/usr/bin/env bash
# Run every multi-group incident of tools/incident_groups.py on a 4-GPU host, all at once (torchrun
# --standalone picks free ports), keeping each one's torchrun console, per-rank logs and FR dumps.
# Usage: tools/make_incidents_groups.sh [OUTDIR]   (default /tmp/incidents; with $OUT set, also packs it there)
set -u
out=${1:-/tmp/incidents}; rm -rf "$out"; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
run() {  # name scenario [ENV=VALUE...]
  name=$1; scen=$2; shift 2
  dir="$out/$name"; mkdir -p "$dir/dumps"
  ( env "$@" TORCH_FR_BUFFER_SIZE=2000 TORCH_FR_DUMP_ON_TIMEOUT=1 TORCH_FR_DUMP_TEMP_FILE="$dir/dumps/nccl_trace_rank_" \
      TORCH_FR_WAIT_TIMEOUT_DUMP_MILSEC=5000 PYTHONUNBUFFERED=1 \
      timeout 170 torchrun --standalone --nproc-per-node 4 --log-dir "$dir/torchrun" --redirects 3 --tee 3 \
      tools/incident_groups.py "$scen" > "$dir/console.log" 2>&1; echo "$name exit=$?" ) &
}
python3 -c 'import torch, transformers; print(torch.__version__, torch.cuda.nccl.version(), transformers.__version__, torch.cuda.device_count())'
run tp_straggler tp_straggler
run tp_straggler_info tp_straggler TORCH_CPP_LOG_LEVEL=INFO NCCL_DEBUG=INFO
run pp_recv pp_recv
run killed killed
run clean_exit clean_exit
run exception exception
run net_killed net_killed NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_DEBUG=WARN
run detail detail TORCH_DISTRIBUTED_DEBUG=DETAIL
run uneven_ddp uneven_ddp
run uneven_fsdp uneven_fsdp
wait
find "$out" -name '*.log' -size +4M -exec truncate -s 4M {} \;
if [ -n "${OUT:-}" ]; then tar czf "$OUT/incidents.tar.gz" -C "$out" .; fi
