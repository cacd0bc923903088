#!/usr/bin/env bash
# ncclcheck.bench --sweep beside NVIDIA nccl-tests 2.19.6 all_reduce_perf, eager and with CUDA graphs (-G 1), in two
# interleaved rounds on N GPUs of this host, then each round's side-by-side table.  nccl-tests is built from SRC (a copy of ../shared/reference/nccl-tests) against the NCCL
# library torch loads, as that folder's REFERENCE.md says.  Usage: tools/bench_vs_nccl_tests.sh NGPUS SRC OUTDIR
set -u
n=$1; src=$(cd "$2" && pwd); mkdir -p "$3"; out=$(cd "$3" && pwd)
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 COLUMNS=100
repo=$(pwd); w=$(mktemp -d)
{ date -u; nvidia-smi -L; nvidia-smi topo -m
  python3 -c "import torch; print('torch', torch.__version__, 'nccl', torch.cuda.nccl.version())"; } > "$out/env.txt" 2>&1
inc=$(dirname "$(find / -name nccl.h -path '*site-packages*' 2>/dev/null | head -1)")
lib=$(dirname "$(find / -name 'libnccl.so.2*' -path '*site-packages*' 2>/dev/null | head -1)")
mkdir -p "$w/nccl/lib" && ln -sf "$inc" "$w/nccl/include" && ln -sf "$lib"/libnccl.so.2* "$w/nccl/lib/" \
  && ln -sf "$(ls "$lib"/libnccl.so.2* | head -1)" "$w/nccl/lib/libnccl.so"
cp -r "$src" "$w/nt"
( cd "$w/nt" && timeout 300 make -j 16 MPI=0 CUDA_HOME=/usr/local/cuda NCCL_HOME="$w/nccl" \
    NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" build/all_reduce_perf ) > "$out/build.txt" 2>&1 \
  || ( cd "$w/nt" && timeout 300 make -j 16 MPI=0 CUDA_HOME=/usr/local/cuda NCCL_HOME="$w/nccl" \
    NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" src.build ) >> "$out/build.txt" 2>&1
perf=$(find "$w/nt" -name all_reduce_perf -type f | head -1)
nt() {  # name [extra flags]: nccl-tests, one process driving the N GPUs
  name=$1; shift
  LD_LIBRARY_PATH="$w/nccl/lib" timeout 120 "$perf" -b 8 -e 2G -f 4 -g "$n" -w 5 -n 20 -c 0 "$@" > "$out/$name.txt" 2>&1
  echo "rc=$?" >> "$out/$name.txt"
}
ours() {  # name [bench options]
  name=$1; shift
  ( cd "$w" && PYTHONPATH="$repo" timeout 150 python3 -m torch.distributed.run --standalone --nproc-per-node "$n" \
      -m ncclcheck.bench \
      --sweep 8:2G:4 --output "$out/$name.json" "$@" > "$out/$name.txt" 2> "$out/$name.err"; echo "rc=$?" >> "$out/$name.err" )
}
nt nccl-tests-eager-1
ours ours-1
nt nccl-tests-graph-1 -G 1
ours ours-graph-on --graph on
nt nccl-tests-eager-2
nt nccl-tests-graph-2 -G 1
ours ours-2
rm -rf "$w"
for r in 1 2; do  # each round: ours beside nccl-tests eager, then beside nccl-tests -G 1
  for ref in eager graph; do
    echo "round $r, against nccl-tests-$ref-$r"
    PYTHONPATH="$repo" python3 -m ncclcheck bench-compare "$out/ours-$r.json" "$out/nccl-tests-$ref-$r.txt"
  done
done
