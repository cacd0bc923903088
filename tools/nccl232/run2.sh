#!/bin/bash
# Second recording (ncclcheck issue 44 §3): NCCL 2.32.3's diagnostics where the ranks disagree (an NCCL_* setting set
# on rank 1 only; rank 1 seeing one GPU), and ncclras against torch's own NCCL 2.28.9 during a hang.
set -u
H=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
R=/tmp/rec2
. "$H/common.sh"
D="LD_PRELOAD=$N232 NCCL_RUN_DIAGNOSTICS=1 NCCL_RUN_RAS_DIAGNOSTICS=1"
job diag_env ok NCCL_DEBUG=WARN $D RANK1_ENV=NCCL_BUFFSIZE=8388608 NCCL_RAS_ADDR=127.0.0.1:28301 &
job diag_gpus ok NCCL_DEBUG=WARN $D RANK1_ENV=CUDA_VISIBLE_DEVICES=1 NCCL_RAS_ADDR=127.0.0.1:28302 &
job diag_env_info ok NCCL_DEBUG=INFO $D RANK1_ENV=NCCL_BUFFSIZE=8388608,NCCL_PROTO=Simple NCCL_RAS_ADDR=127.0.0.1:28303 &
# NCCL 2.28.9 (torch's own): ncclras while rank 1 sleeps before the all_reduce rank 0 waits in; then the timeout.
d=$R/hang2289; mkdir -p $d/ras $d/dumps
echo "env NCCL_DEBUG=WARN NCCL_RAS_ADDR=127.0.0.1:28340 JOB_TIMEOUT_S=20 HANG_S=40 TORCH_FR_BUFFER_SIZE=2000 TORCH_FR_DUMP_ON_TIMEOUT=1 TORCH_FR_DUMP_TEMP_FILE=dumps/nccl_trace_rank_ torchrun --standalone --nproc-per-node 2 --log-dir torchrun --redirects 3 --tee 3 job.py hang; at ready+4 s: ncclras, ncclras -v, ncclras -f json" > $d/command.txt
( cd $d && env JOB_DIR=$d NCCL_DEBUG=WARN NCCL_RAS_ADDR=127.0.0.1:28340 JOB_TIMEOUT_S=20 HANG_S=40 TORCH_FR_BUFFER_SIZE=2000 \
   TORCH_FR_DUMP_ON_TIMEOUT=1 TORCH_FR_DUMP_TEMP_FILE=$d/dumps/nccl_trace_rank_ timeout -s KILL 150 torchrun --standalone \
   --nproc-per-node 2 --log-dir $d/torchrun --redirects 3 --tee 3 $H/job.py hang > $d/console.log 2>&1
  echo "hang2289 exit=$?" >> $R/exits.txt ) &
for i in $(seq 90); do [ -f $d/ready.0 ] && [ -f $d/ready.1 ] && break; sleep 1; done
sleep 4
$H/ncclras -p 28340 > $d/ras/status_live.txt 2>&1
$H/ncclras -p 28340 -v > $d/ras/verbose_live.txt 2>&1
$H/ncclras -p 28340 -f json > $d/ras/status_live.json 2>&1
timeout 30 python3 $H/rasq.py DIAGNOSTICS 28340 > $d/ras/diagnostics_live.txt 2>&1
wait
rm -rf $R/*/torchrun $R/*/pid.* $R/*/ready.*
tar czf "$OUT/rec2.tar.gz" -C $R .
cat $R/exits.txt
grep -h "NCCL DIAG" $R/diag_env/console.log $R/diag_gpus/console.log | head -40
cat $d/ras/status_live.txt | tail -12; head -5 $d/ras/diagnostics_live.txt
