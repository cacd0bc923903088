#!/bin/bash
# GPU recordings for ncclcheck issue 41 §3-§5 (2 GPUs, torch's own NCCL): the mechanisms the earlier recorders
# (tools/nccl232/run.sh, tools/make_incidents*.sh) left out. Run from its folder's copy under the repository that
# the device call sends, as root; everything comes back in $OUT/rec41.tar.gz. Each case's exact command is its
# command.txt; NCCL_RAS_ADDR only keeps the parallel jobs' RAS ports apart.
set -u
H=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
R=/tmp/rec41
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
rm -rf "$R"; mkdir -p "$R"
job() {  # name mode [ENV=VALUE...]
  local name=$1 mode=$2; shift 2; local d=$R/$name; mkdir -p $d/dumps
  echo "env $* torchrun --standalone --nproc-per-node 2 --log-dir torchrun --redirects 3 --tee 3 job.py $mode" > $d/command.txt
  ( cd $d && env JOB_DIR=$d "$@" timeout -s KILL 150 torchrun --standalone --nproc-per-node 2 --log-dir $d/torchrun \
      --redirects 3 --tee 3 $H/job.py $mode > $d/console.log 2>&1; echo "$name exit=$?" >> $R/exits.txt )
}
{ nvidia-smi -L; python3 -c 'import torch;print(torch.__version__, torch.cuda.nccl.version())'; ip -br addr
  nvidia-smi topo -m; cat /proc/cmdline; ls /sys/kernel/iommu_groups | wc -l; } > $R/env.txt 2>&1
FR="TORCH_FR_BUFFER_SIZE=2000 TORCH_FR_DUMP_ON_TIMEOUT=1 TORCH_FR_DUMP_TEMP_FILE=dumps/nccl_trace_rank_"
T="JOB_TIMEOUT_S=25"
# §3: the first collective never completes, no error (NCCL_PROTO=Simple on rank 1 only; LL is what the one-element
# all_reduce takes on rank 0), at NCCL's default log level and at INFO
job first first $T $FR RANK1_ENV=NCCL_PROTO=Simple NCCL_RAS_ADDR=127.0.0.1:28401 &
job first_info first $T $FR NCCL_DEBUG=INFO RANK1_ENV=NCCL_PROTO=Simple NCCL_RAS_ADDR=127.0.0.1:28402 &
# §3: the bootstrap's interface against the data path's: rank 1 alone on lo, the data path on sockets
job ifname_split ok NCCL_DEBUG=INFO NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 RANK1_ENV=NCCL_SOCKET_IFNAME=lo NCCL_RAS_ADDR=127.0.0.1:28403 &
# §3: peer-to-peer refused by the path level (P2P only within a GPU): NCCL says which path it took
job p2p_level ok NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P,GRAPH NCCL_P2P_LEVEL=LOC NCCL_RAS_ADDR=127.0.0.1:28404 &
# §5: rank 1's fourth all_reduce queued behind a long kernel (scheduled) while rank 0's runs (started)
job scheduled scheduled $T $FR HANG_S=90 TORCH_NCCL_ENABLE_TIMING=1 NCCL_RAS_ADDR=127.0.0.1:28405 &
# §5: all_to_all with rank 1's input short for rank 0
job a2a_short a2a_short $T $FR TORCH_NCCL_ENABLE_TIMING=1 NCCL_RAS_ADDR=127.0.0.1:28406 &
# §5: a size mismatch that leaves rank 0 inside an earlier sequence number
job seq_behind seq_behind $T $FR TORCH_NCCL_ENABLE_TIMING=1 NCCL_RAS_ADDR=127.0.0.1:28407 &
# §5: reduce_scatter's output as large as its input
job rs_size rs_size $T NCCL_RAS_ADDR=127.0.0.1:28408 &
# §5: the desync report's membership: rank 1 sleeps in host code while rank 0 waits in a broadcast
job desync bcast $T $FR HANG_S=60 TORCH_NCCL_DESYNC_DEBUG=1 NCCL_RAS_ADDR=127.0.0.1:28409 &
wait
dmesg -T 2>&1 | tail -60 > $R/dmesg.txt
rm -rf $R/*/pid.*
tar czf "$OUT/rec41.tar.gz" -C $R .
cat $R/exits.txt; cat $R/env.txt
for c in $R/*/; do echo "== $c"; tail -4 $c/console.log | cut -c1-300; ls $c/dumps; done
