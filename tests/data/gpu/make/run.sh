#!/bin/bash
# Writes the fixtures in tests/data/gpu: real torch output, 2 ranks per job, all jobs in parallel on a 4-GPU
# machine (about 100 s; GPU pairs 0,1 and 2,3). Everything lands in $OUT/corpus.tar.gz.
#   async   rank 1 SIGKILLed mid-all_reduce over NCCL sockets: rank 0 gets an async NCCL error (async-error/)
#   killp2p the same kill over NVLink/P2P: the survivor only times out (kill-p2p/)
#   nccl2   backend="nccl2" (torch 2.11 has none: it fails at init); probe.py records what the build knows
#   nccl2e  TORCH_DIST_USE_NCCL2=1 with "nccl" (ignored by 2.11: a plain timeout, default dump path; default-path/)
#   dump    debug pipe poked, then a sub-group timeout, under torchrun --tee (pipe-subgroup/, live-p2p/)
#   dumpl   the same without torchrun, one file per rank (pipe-subgroup-launcher/)
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
W=$(mktemp -d /tmp/corpus.XXXXXX)
OUTDIR=${OUT:-$HERE/out}
mkdir -p "$OUTDIR"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 TORCH_CPP_LOG_LEVEL=INFO NCCL_DEBUG=WARN
export TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_FR_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1
PY=${PYTHON:-python3}
# Jobs get their own HOME (to catch the default dump path); keep user site-packages where they were.
export PYTHONUSERBASE=$($PY -m site --user-base)
NGPU=$($PY -c 'import torch;print(torch.cuda.device_count())' 2>/dev/null || echo 0)
if [ "${NGPU:-0}" -ge 2 ]; then BK=nccl; else BK=gloo; fi
echo "gpus=$NGPU backend=$BK" | tee "$W/env.txt"
nvidia-smi -L >> "$W/env.txt" 2>&1
T="timeout -s KILL"
TR="$PY -m torch.distributed.run --nnodes 1 --nproc-per-node 2 --tee 3"

for j in async killp2p nccl2 nccl2e dump dumpl; do mkdir -p "$W/$j/home"; done
timeout -s KILL 90 $PY "$HERE/probe.py" > "$W/probe.txt" 2>&1 &
( cd "$W/async" && CUDA_VISIBLE_DEVICES=0,1 CORPUS_DIR=$W/async HOME=$W/async/home CORPUS_BACKEND=$BK CORPUS_TIMEOUT_S=30 \
  NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo \
  $T 80 $PY "$HERE/launch.py" async 2 29611 "$W/async" > "$W/async/launcher.txt" 2>&1 ) &
( cd "$W/killp2p" && CUDA_VISIBLE_DEVICES=2,3 CORPUS_DIR=$W/killp2p HOME=$W/killp2p/home CORPUS_BACKEND=$BK CORPUS_TIMEOUT_S=15 \
  $T 80 $PY "$HERE/launch.py" async 2 29612 "$W/killp2p" > "$W/killp2p/launcher.txt" 2>&1 ) &
NB=nccl2; [ "$BK" = gloo ] && NB=gloo
( cd "$W/nccl2" && CUDA_VISIBLE_DEVICES=0,1 CORPUS_DIR=$W/nccl2 HOME=$W/nccl2/home CORPUS_BACKEND=$NB CORPUS_TIMEOUT_S=10 \
  $T 80 $TR --master-port 29613 --log-dir "$W/nccl2/logs" "$HERE/worker.py" nccl2 > "$W/nccl2/console.log" 2>&1 ) &
( cd "$W/nccl2e" && CUDA_VISIBLE_DEVICES=2,3 CORPUS_DIR=$W/nccl2e HOME=$W/nccl2e/home CORPUS_BACKEND=$BK CORPUS_TIMEOUT_S=10 \
  TORCH_DIST_USE_NCCL2=1 \
  $T 80 $TR --master-port 29614 --log-dir "$W/nccl2e/logs" "$HERE/worker.py" nccl2 > "$W/nccl2e/console.log" 2>&1 ) &
( cd "$W/dump" && CUDA_VISIBLE_DEVICES=0,1 CORPUS_DIR=$W/dump CORPUS_BACKEND=$BK CORPUS_TIMEOUT_S=60 \
  HOME=$W/dump/home TORCH_NCCL_DEBUG_INFO_PIPE_FILE=$W/dump/pipe_ TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC=20000 \
  $T 95 $TR --master-port 29615 --log-dir "$W/dump/logs" "$HERE/worker.py" dump > "$W/dump/console.log" 2>&1 ) &
( cd "$W/dumpl" && CUDA_VISIBLE_DEVICES=2,3 CORPUS_DIR=$W/dumpl CORPUS_BACKEND=$BK CORPUS_TIMEOUT_S=60 \
  HOME=$W/dumpl/home TORCH_NCCL_DEBUG_INFO_PIPE_FILE=$W/dumpl/pipe_ TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC=20000 \
  $T 95 $PY "$HERE/launch.py" dump 2 29616 "$W/dumpl" > "$W/dumpl/launcher.txt" 2>&1 ) &
wait
# Whatever dumps landed in the default places.
for f in /tmp/nccl_trace_rank_* "$W"/*/home/.cache/torch/*; do
  [ -f "$f" ] && echo "dump file: $f" >> "$W/env.txt"
done
for f in /tmp/nccl_trace_rank_*; do [ -f "$f" ] && cp "$f" "$W/"; done
find "$W" -name '*.pipe' -delete
find "$W" -type f | sed "s|$W/||" | sort > "$W/files.txt"
tar czf "$OUTDIR/corpus.tar.gz" -C "$W" .
ls -l "$OUTDIR/corpus.tar.gz"
cat "$W/files.txt"
