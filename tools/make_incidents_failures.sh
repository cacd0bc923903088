#!/usr/bin/env bash
# Run every scenario of tools/incident_failures.py on a 2-GPU host, keeping each one's torchrun console,
# per-rank logs (--log-dir) and flight-recorder dumps; also the launcher failures (a node lost, a
# rendezvous that never completes) and a live snapshot of an opposite-order deadlock.
# Usage: tools/make_incidents_failures.sh [OUTDIR]   (default /tmp/failures; with $OUT set, also packs it there)
set -u
out=${1:-/tmp/failures}; rm -rf "$out"; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
script=$(pwd)/tools/incident_failures.py
fr() {  # the flight-recorder settings of one run
  echo TORCH_FR_BUFFER_SIZE=2000 TORCH_FR_DUMP_ON_TIMEOUT=1 TORCH_FR_DUMP_TEMP_FILE="$1/dumps/nccl_trace_rank_" \
       TORCH_FR_WAIT_TIMEOUT_DUMP_MILSEC=5000
}
run() {  # name scenario [ENV=VALUE...]: one standalone 2-rank job
  name=$1; scen=$2; shift 2
  dir="$out/$name"; mkdir -p "$dir/dumps"
  ( env "$@" $(fr "$dir") timeout 120 torchrun --standalone --nproc-per-node 2 --log-dir "$dir/torchrun" \
      --redirects 3 --tee 3 "$script" "$scen" > "$dir/console.log" 2>&1; echo "$name exit=$?" ) &
}
shm() {  # name [ENV=VALUE...]: the set-up run with a 1 MiB /dev/shm in a private mount namespace
  name=$1; shift
  dir="$out/$name"; mkdir -p "$dir/dumps"
  ( unshare -m sh -c "mount -t tmpfs -o size=1m tmpfs /dev/shm && exec env $* NCCL_P2P_DISABLE=1 NCCL_CUMEM_ENABLE=0 \
      $(fr "$dir") timeout 120 torchrun --standalone --nproc-per-node 2 --log-dir $dir/torchrun --redirects 3 --tee 3 \
      $script setup" > "$dir/console.log" 2>&1; echo "$name exit=$?" ) &
}
python3 -c 'import torch; print(torch.__version__, torch.cuda.nccl.version(), torch.cuda.device_count())'

shm shm
shm shm_warn NCCL_DEBUG=WARN
run ifname setup NCCL_SOCKET_IFNAME=nosuch0
run ifname_warn setup NCCL_SOCKET_IFNAME=nosuch0 NCCL_DEBUG=WARN
run net_ib setup NCCL_NET=IB NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
run net_ib_warn setup NCCL_NET=IB NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_DEBUG=WARN
run no_init no_init
run device_assert device_assert
run oom oom
run order_cycle order_cycle
run order_cycle_info order_cycle TORCH_CPP_LOG_LEVEL=INFO NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT
run order_cycle3 order_cycle3
run p2p_cycle p2p_cycle
run p2p_count p2p_count
run p2p_dtype p2p_dtype
run uneven_gather uneven_gather
run rank0_only rank0_only

# Two torchrun "nodes" of one GPU each; node 0 holds the rendezvous store and is killed whole mid-training.
lost="$out/node_lost"; mkdir -p "$lost/dumps"
(
  cd "$lost" || exit
  env $(fr "$lost") CUDA_VISIBLE_DEVICES=0 setsid torchrun --nnodes 2 --node-rank 0 --nproc-per-node 1 \
    --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:29611 --rdzv-id lost --log-dir node0 --redirects 3 --tee 3 \
    "$script" train > node0.console.log 2>&1 &
  p0=$!
  sleep 3
  env $(fr "$lost") CUDA_VISIBLE_DEVICES=1 timeout 150 torchrun --nnodes 2 --node-rank 1 --nproc-per-node 1 \
    --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:29611 --rdzv-id lost --rdzv-conf is_host=false \
    --log-dir node1 --redirects 3 --tee 3 "$script" train > node1.console.log 2>&1 &
  p1=$!
  sleep 30
  kill -9 -- -"$p0"; echo "node 0 (pgid $p0) killed at $(date +%T)" > killed.txt
  wait "$p1"; echo "node_lost exit=$?"
) &

# A rendezvous that never completes: one agent of an --nnodes 2 job.
rdzv="$out/rdzv_timeout"; mkdir -p "$rdzv"
( timeout 100 torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:29621 \
    --rdzv-id alone --rdzv-conf join_timeout=20 --log-dir "$rdzv/torchrun" --redirects 3 --tee 3 \
    "$script" setup > "$rdzv/console.log" 2>&1; echo "rdzv_timeout exit=$?" ) &

# A live opposite-order deadlock read by ncclcheck snapshot through the dump pipes (no py-spy there).
bash tools/live_snapshot.sh 2 "$out/live_cycle" tools/incident_failures.py order_cycle &

wait
find "$out" -name '*.log' -size +4M -exec truncate -s 4M {} \;
if [ -n "${OUT:-}" ]; then tar czf "$OUT/failures.tar.gz" -C "$out" .; fi
