#!/bin/bash
# Two torchrun agents (--nnodes 2), one GPU each, on one host, NCCL_DEBUG=INFO: a "two-node" console whose ranks'
# NCCL lines the cross-rank table reads. The second agent alone sets NCCL_IB_DISABLE=1 (the odd setting).
set -u
export NCCL_DEBUG=INFO NCCL_NVLS_ENABLE=0
cat > /tmp/w.py <<'PY'
import os, torch, torch.distributed as dist
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group("nccl")
r = dist.get_rank()
x = torch.ones(1 << 20, device="cuda")
dist.all_reduce(x)
torch.cuda.synchronize()
print(f"rank {r} done {x[0].item()}", flush=True)
dist.destroy_process_group()
PY
run() { python3 -m torch.distributed.run --nnodes 2 --node-rank $1 --nproc-per-node 1 --master-addr 127.0.0.1 \
  --master-port 29511 --tee 3 /tmp/w.py; }
(CUDA_VISIBLE_DEVICES=0 run 0 > $OUT/node0.log 2>&1; echo "exit $?" >> $OUT/node0.log) &
(CUDA_VISIBLE_DEVICES=1 NCCL_IB_DISABLE=1 run 1 > $OUT/node1.log 2>&1; echo "exit $?" >> $OUT/node1.log) &
wait
nvidia-smi -L > $OUT/gpus.txt; python3 -c "import torch; print(torch.__version__, torch.cuda.nccl.version())" >> $OUT/gpus.txt
tail -3 $OUT/node0.log $OUT/node1.log; wc -l $OUT/*.log
