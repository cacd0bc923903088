#!/usr/bin/env bash
# Run every incident of tools/incident_mesh.py at once (torchrun --standalone picks free ports), keeping each one's
# console, per-rank logs and flight-recorder dumps.  8 GPUs: a TP 2 x PP 2 x DP 2 mesh; 2 GPUs: the same scenarios
# on the two-rank meshes that keep them meaningful (TP 2 for tp_straggler, killed, order_cycle; PP 2 for
# pp_skip_send; EP 2 for the MoE exchange).
# Usage: tools/make_incidents_mesh.sh NGPUS [OUTDIR]   (default /tmp/mesh; with $OUT set, also packs it there)
set -u
n=$1; out=${2:-/tmp/mesh}; rm -rf "$out"; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if [ "$n" = 8 ]; then tp3=2,2,2; tp=2,2,2; pp=2,2,2; else tp3=2,1,1; tp=2,1,1; pp=1,2,1; fi
run() {  # name scenario mesh [ENV=VALUE...]
  name=$1; scen=$2; mesh=$3; shift 3
  dir="$out/$name"; mkdir -p "$dir/dumps"
  ( env "$@" MESH="$mesh" TORCH_FR_BUFFER_SIZE=2000 TORCH_FR_DUMP_ON_TIMEOUT=1 \
      TORCH_FR_DUMP_TEMP_FILE="$dir/dumps/nccl_trace_rank_" TORCH_FR_WAIT_TIMEOUT_DUMP_MILSEC=5000 PYTHONUNBUFFERED=1 \
      timeout 170 torchrun --standalone --nproc-per-node "$n" --log-dir "$dir/torchrun" --redirects 3 --tee 3 \
      tools/incident_mesh.py "$scen" > "$dir/console.log" 2>&1; echo "$name exit=$?" ) &
}
python3 -c 'import torch; print(torch.__version__, torch.cuda.nccl.version(), torch.cuda.device_count())'
run tp_straggler tp_straggler "$tp3"
run tp_straggler_info tp_straggler "$tp3" TORCH_CPP_LOG_LEVEL=INFO NCCL_DEBUG=INFO
run pp_skip_send pp_skip_send "$pp"
run killed killed "$tp"
run order_cycle order_cycle "$tp"
run moe_split moe_split "$tp"
run moe_skip moe_skip "$tp"
wait
find "$out" -name '*.log' -size +4M -exec truncate -s 4M {} \;
if [ -n "${OUT:-}" ]; then tar czf "$OUT/mesh.tar.gz" -C "$out" .; fi
