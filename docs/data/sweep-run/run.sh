#!/bin/bash
# ncclcheck.bench --sweep vs a native NCCL loop (ncclref.cu, built here) on 2 and 4 GPUs. Writes $OUT/bench.tar.gz.
set -u
D=$(cd "$(dirname "$0")" && pwd)
W=/tmp/benchrun
rm -rf "$W"; mkdir -p "$W"
export PYTHONPATH="$D/pkg" PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 COLUMNS=80
T0=$(date +%s)
cd "$W"  # not the checkout: its own ncclcheck/ would shadow the copy in $D/pkg
step() { echo "== $(( $(date +%s) - T0 ))s: $*" | tee -a "$W/steps.txt"; }
late() { (( $(date +%s) - T0 > 185 )) && echo "== skipped (time): $*" | tee -a "$W/steps.txt"; }
pack() { tar czf "$OUT/bench.tar.gz" -C "$W" . ; }
trap pack EXIT
PY=python3
{
  date -u; nvidia-smi -L; nvidia-smi topo -m
  $PY -c "import torch; print('torch', torch.__version__, 'nccl', torch.cuda.nccl.version(), 'gpus', torch.cuda.device_count())"
  env | grep -E '^(NCCL|TORCH)_' | sort
} > "$W/env.txt" 2>&1
NCCL_DIR=$($PY -c "import nvidia.nccl as m; print(list(m.__path__)[0])")
export LD_LIBRARY_PATH="$NCCL_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{ ls -la "$NCCL_DIR/lib"; grep -E 'define NCCL_(MAJOR|MINOR|PATCH)' "$NCCL_DIR/include/nccl.h"; nvcc --version; } >> "$W/env.txt" 2>&1
# nccl-tests (nccl-tests/: its 2019 all_reduce_perf source, see nccl-tests/README) and ncclref.cu were built on a
# CUDA 13.0 toolchain against the nvidia-nccl wheel's nccl.h (prebuilt/); the NCCL library is the one torch loads.
# Rebuild here only if the prebuilt binaries do not start.
PERF="$D/prebuilt/all_reduce_perf"; REF="$D/prebuilt/ncclref"
"$PERF" -h > /dev/null 2>&1; a=$?
"$REF" > /dev/null 2>&1; b=$?  # usage: exit 2
if [ $a -ne 0 ] || [ $b -ne 2 ]; then
  step "prebuilt binaries do not start: building"
  PERF="$W/all_reduce_perf"; REF="$W/ncclref"
  ( cd "$D/nccl-tests" && timeout 120 nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I"$NCCL_DIR/include" \
      -o "$PERF" common.cu all_reduce.cu -L"$NCCL_DIR/lib" -l:libnccl.so.2 -lpthread ) > "$W/build.txt" 2>&1
  timeout 120 nvcc -O2 -std=c++17 -o "$REF" "$D/ncclref.cu" -I"$NCCL_DIR/include" -L"$NCCL_DIR/lib" -l:libnccl.so.2 \
    >> "$W/build.txt" 2>&1
fi
perf() {  # name, GPU count: nccl-tests all_reduce_perf, one process driving the GPUs (-g N)
  late "$1" && return
  step "nccl-tests $1"
  CUDA_VISIBLE_DEVICES=$(seq -s, 0 $(( $2 - 1 ))) timeout 60 "$PERF" -b 8 -e 2G -f 4 -g "$2" -w 5 -n 20 -c 1 > "$W/$1.txt" 2>&1
  echo "rc=$?" >> "$W/$1.txt"
}
bench() {  # name, GPUs, then the benchmark's options
  local name=$1 gpus=$2; shift 2
  late "$name" && return
  step "torch $name"
  CUDA_VISIBLE_DEVICES=$gpus timeout 90 $PY -m torch.distributed.run --nproc-per-node $(( ${#gpus} / 2 + 1 )) \
    -m ncclcheck.bench "$@" > "$W/$name.txt" 2> "$W/$name.err"
  echo "rc=$?" >> "$W/$name.err"
}
ref() {  # name, GPUs, graph
  late "$1" && return
  step "ref $1"
  [ -x "$REF" ] && CUDA_VISIBLE_DEVICES=$2 timeout 60 "$REF" 8 2147483648 4 20 5 "$3" > "$W/$1.txt" 2>&1
  echo "rc=$?" >> "$W/$1.txt"
}
S="${BENCH_SWEEP:---sweep 8:2G:4}"
perf perf2 2
bench sweep2-auto 0,1 $S --check --output "$W/sweep2-auto.json" --plot "$W/sweep2.png" --html "$W/sweep2.html" --min-busbw 300
ref ref2-graph 0,1 1
ref ref2-eager 0,1 0
perf perf2-b 2
bench sweep2-auto-b 0,1 $S --output "$W/sweep2-auto-b.json"
bench sweep2-eager 0,1 $S --graph off --output "$W/sweep2-eager.json"
perf perf4 4
bench sweep4-auto 0,1,2,3 $S --output "$W/sweep4-auto.json" --plot "$W/sweep4.png"
ref ref4-graph 0,1,2,3 1
ref ref4-eager 0,1,2,3 0
bench default2 0,1 --size 5e8 --chunks 1e8,1e7,1e6 --output "$W/default2.json"
late compare || {
step "compare"
$PY -m ncclcheck.bench.compare "$W/sweep2-auto.json" "$W/perf2.txt" --plot "$W/compare2.png" > "$W/compare2.txt" 2>&1
echo "rc=$?" >> "$W/compare2.txt"
}
late cli || {
step "ncclcheck bench --nproc 2 (exit code passthrough, 0 expected)"
CUDA_VISIBLE_DEVICES=0,1 timeout 60 $PY -c "import sys; sys.argv[0] = \"ncclcheck\"; from ncclcheck.cli import main; main()" \
  bench --nproc 2 --sweep 1M:64M:8 > "$W/cli.txt" 2>&1; echo "rc=$?" >> "$W/cli.txt"
}
step done
