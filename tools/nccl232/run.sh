#!/bin/bash
# Recordings for ncclcheck issue 44 §3 (NCCL 2.32's diagnostics, ncclras, PyTorch's debug server) and issue 41 §3
# (the layers under NCCL). 2 GPUs, torch's own NCCL (2.28.9) unless LD_PRELOAD names the 2.32.3 library carried here
# (nvidia-nccl-cu13 2.32.3's libnccl.so.2 with every fatbin entry but sm_90's zeroed, to fit the transfer:
# `python strip_fatbin.py libnccl.so.2 libnccl.so.2.sm90 90`, then `xz` it beside this script as libnccl.so.2.xz; the
# `ncclras` beside it is NVIDIA/nccl's src/ras/client.cc built statically: `g++ -O2 -static -std=c++17 -DNCCL_OS_LINUX
# -I<nccl.h generated from src/nccl.h.in> -Isrc/include src/ras/client.cc -o ncclras`). Run from its folder's copy
# under the repository that the device call sends; everything comes back in $OUT/rec.tar.gz.
set -u
H=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
R=/tmp/rec
. "$H/common.sh"
pack() { tar czf "$OUT/rec.tar.gz" -C $R . ; }
{ nvidia-smi -L; python3 -c 'import torch;print(torch.__version__, torch.cuda.nccl.version())'
  python3 -c 'import torch.distributed.debug as d; print("debug server:", d.__file__)'; ip -br addr
  ls /sys/class/infiniband 2>&1; ls /dev/shm | head; df -h /dev/shm; } > $R/env.txt 2>&1
I="NCCL_DEBUG=INFO"
# Issue 41 §3, torch's NCCL 2.28.9
job b_netplugin ok $I NCCL_NET_PLUGIN=nonexistent NCCL_RAS_ADDR=127.0.0.1:28201 &
job b_netplugin_sockets ok $I NCCL_NET_PLUGIN=nonexistent NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_RAS_ADDR=127.0.0.1:28202 &
job b_ibhca ok $I NCCL_IB_HCA=mlx5_bogus NCCL_RAS_ADDR=127.0.0.1:28203 &
job b_ibhca_netib ok $I NCCL_IB_HCA=mlx5_bogus NCCL_NET=IB NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_RAS_ADDR=127.0.0.1:28204 &
job b_p2p_off ok $I NCCL_P2P_DISABLE=1 NCCL_RAS_ADDR=127.0.0.1:28205 &
job b_shm_off ok $I NCCL_SHM_DISABLE=1 NCCL_RAS_ADDR=127.0.0.1:28206 &
job b_p2p_shm_off ok $I NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_RAS_ADDR=127.0.0.1:28207 &
job b_net_bogus ok $I NCCL_NET=bogus NCCL_RAS_ADDR=127.0.0.1:28208 &
job b_ifname ok $I NCCL_SOCKET_IFNAME=bogus0 NCCL_RAS_ADDR=127.0.0.1:28209 &
job b_family6 ok $I NCCL_SOCKET_FAMILY=AF_INET6 NCCL_RAS_ADDR=127.0.0.1:28210 &
job b_collnet ok $I NCCL_COLLNET_ENABLE=1 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_RAS_ADDR=127.0.0.1:28211 &
# Issue 44 §3, NCCL 2.32.3
job a_diag ok $I LD_PRELOAD=$N232 NCCL_RUN_DIAGNOSTICS=1 NCCL_RUN_RAS_DIAGNOSTICS=1 NCCL_RAS_ADDR=127.0.0.1:28221 &
job a_diag_warn ok NCCL_DEBUG=WARN LD_PRELOAD=$N232 NCCL_RUN_DIAGNOSTICS=1 NCCL_RUN_RAS_DIAGNOSTICS=1 NCCL_RAS_ADDR=127.0.0.1:28222 &
job a_diag_p2poff ok $I LD_PRELOAD=$N232 NCCL_RUN_DIAGNOSTICS=1 NCCL_RUN_RAS_DIAGNOSTICS=1 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_RAS_ADDR=127.0.0.1:28223 &
job a_ifname ok $I LD_PRELOAD=$N232 NCCL_SOCKET_IFNAME=bogus0 NCCL_RAS_ADDR=127.0.0.1:28224 &
# The hang: rank 1 sleeps before its fourth all_reduce; ncclras asked while both live, then after rank 1's SIGKILL
# (torchrun's monitor slowed so that the survivor's RAS sees the dead peer before the agent stops the job).
d=$R/a_hang; mkdir -p $d/dumps $d/debug $d/ras
echo "env LD_PRELOAD=libnccl.so.2 (2.32.3) NCCL_DEBUG=INFO NCCL_RAS_ADDR=127.0.0.1:28240 JOB_TIMEOUT_S=30 HANG_S=90 DBG_DIR=debug DBG_EVERY_S=5 TORCH_FR_BUFFER_SIZE=2000 TORCH_FR_DUMP_ON_TIMEOUT=1 TORCH_FR_DUMP_TEMP_FILE=dumps/nccl_trace_rank_ torchrun --standalone --nproc-per-node 2 --monitor-interval 60 --log-dir torchrun --redirects 3 --tee 3 job.py hang; at ready+5 s: ncclras, ncclras -v, ncclras -f json, DIAGNOSTICS; kill -9 rank 1; at +8 s the same again" > $d/command.txt
( cd $d && env JOB_DIR=$d LD_PRELOAD=$N232 NCCL_DEBUG=INFO NCCL_RAS_ADDR=127.0.0.1:28240 JOB_TIMEOUT_S=30 HANG_S=90 \
   DBG_DIR=$d/debug DBG_EVERY_S=5 DBG_PORT=25999 TORCH_FR_BUFFER_SIZE=2000 TORCH_FR_DUMP_ON_TIMEOUT=1 \
   TORCH_FR_DUMP_TEMP_FILE=$d/dumps/nccl_trace_rank_ timeout -s KILL 200 torchrun --standalone --nproc-per-node 2 \
   --monitor-interval 60 --log-dir $d/torchrun --redirects 3 --tee 3 $H/job.py hang > $d/console.log 2>&1
  echo "a_hang exit=$?" >> $R/exits.txt ) &
hp=$!
ask() {  # tag
  local o=$d/ras
  $H/ncclras -p 28240 > $o/status_$1.txt 2>&1
  $H/ncclras -p 28240 -v > $o/verbose_$1.txt 2>&1
  $H/ncclras -p 28240 -f json > $o/status_$1.json 2>&1
  timeout 60 python3 $H/rasq.py DIAGNOSTICS 28240 > $o/diagnostics_$1.txt 2> $o/diagnostics_$1.proto.txt
  timeout 60 python3 $H/rasq.py DIAGNOSTICS 28240 json > $o/diagnostics_$1.json 2> $o/diagnostics_$1.json.proto.txt
}
for i in $(seq 90); do [ -f $d/ready.0 ] && [ -f $d/ready.1 ] && break; sleep 1; done
sleep 5; echo "asked live $(date +%T)" >> $d/ras/when.txt; ask live
kill -9 "$(cat $d/pid.1)"; echo "rank 1 killed $(date +%T)" >> $d/ras/when.txt
sleep 8; echo "asked dead $(date +%T)" >> $d/ras/when.txt; ask dead
wait
pack
cat $R/exits.txt; cat $R/env.txt
grep -h "NCCL DIAG" $R/a_diag/console.log | head -40
head -c 3000 $d/ras/verbose_live.txt; head -c 2000 $d/ras/diagnostics_live.txt; head -c 2000 $d/ras/verbose_dead.txt
ls -la $d/debug | head
