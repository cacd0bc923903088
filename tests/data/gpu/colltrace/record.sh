#!/bin/bash
# ncclcheck issue 41 (h-trace): NCCL's collective trace of a 2-rank job where the ranks issue different ops at one
# opCount (mismatch) and two groups in opposite orders (order), with cuda-gdb's native stacks of the hung order job.
set -u
H=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
R=/tmp/trace41; rm -rf $R; mkdir -p $R
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL JOB_TIMEOUT_S=25
python3 -c 'import torch; print(torch.__version__, torch.cuda.device_count(), torch.cuda.nccl.version())' | tee $R/versions.txt
nvidia-smi -L >> $R/versions.txt; which cuda-gdb gdb py-spy >> $R/versions.txt 2>&1
TR="torchrun --standalone --nproc-per-node 2"
rec() { local name=$1; local d=$R/$name; mkdir -p $d
  echo "env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL NCCL_NVLS_ENABLE=0 JOB_TIMEOUT_S=25 $TR tracejob.py $name" > $d/command.txt
  ( cd $d && JOB_DIR=$d timeout -s KILL 100 $TR $H/tracejob.py $name > $d/console.log 2>&1; echo "exit=$?" > $d/exit_status.txt ) ; }
rec mismatch &
rec order &
d=$R/order
for i in $(seq 60); do [ -e $d/entered.0 ] && [ -e $d/entered.1 ] && break; sleep 1; done
sleep 4
for r in 0 1; do
  timeout 60 cuda-gdb -q -batch -p "$(cat $d/pid.$r)" -ex "set pagination off" -ex "thread apply all bt" > $d/stacks.rank$r.txt 2>&1
  echo "cuda-gdb rank $r rc=$?" >> $d/stacks.rank$r.txt
done
wait
rm -f $R/*/pid.* $R/*/entered.*
tar czf "$OUT/trace41.tar.gz" -C $R .
cat $R/versions.txt
for c in $R/*/; do echo "== $c $(cat $c/exit_status.txt)"; grep -c "opCount" $c/console.log; grep -v "NCCL INFO" $c/console.log | tail -4 | cut -c1-220; done
head -c 1500 $R/order/stacks.rank0.txt
