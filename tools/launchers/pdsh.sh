#!/usr/bin/env bash
# Record small failing gloo jobs started as two "nodes" by pdsh (each node runs torchrun), as
# tests/data/launchers/pdsh/<case>/ fixtures: pdsh's console ("node1: " before each line) and torchrun's per-rank
# log folders (--log-dir, one per node).
#
# Needs (installs nothing; says what is missing): Debian's pdsh (its rcmd/exec module runs each "node" on this
# machine); the checkout's .venv with torch.
#
# usage: tools/launchers/pdsh.sh [OUT_DIR] [CASE ...]     (default: tests/data/launchers/pdsh, every case)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${1:-tests/data/launchers/pdsh}
shift || true
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(clean raise kill hang)
command -v pdsh >/dev/null || { echo "pdsh.sh: pdsh not found: apt-get install pdsh" >&2; exit 2; }
py=$root/.venv/bin/python
"$py" -c 'import torch' 2>/dev/null || { echo "pdsh.sh: no torch in .venv: make .venv/.torch" >&2; exit 2; }

declare -A spec=(
  [clean]="clean|every rank finishes"
  [raise]="raise 2|rank 2 (node1's first) raises RuntimeError at step 3; the others lose their peer"
  [kill]="kill 1|rank 1 (node0's second) is killed by SIGKILL at step 3; torchrun stops its node, the other node loses its peers"
  [hang]="hang 3|rank 3 (node1's second) sleeps 40 s in host code at step 3; the others' all_reduce times out after 10 s"
)
port=29900
for case in "${cases[@]}"; do
  IFS='|' read -r args what <<<"${spec[$case]}"
  dir=$out/$case
  rm -rf "$dir"; mkdir -p "$dir"
  port=$((port + 1))
  set +e
  # Each "node" runs torchrun for 2 local ranks; rcmd/exec puts the node's name in %h.
  pdsh -R exec -w node0,node1 bash -c "cd $root && n=%h && exec $root/.venv/bin/torchrun --nnodes 2 \
    --nproc-per-node 2 --node-rank \${n#node} --master-addr 127.0.0.1 --master-port $port \
    --log-dir $dir/logs/\$n --redirects 3 --tee 3 tools/launchers/worker.py $args" >"$dir/console.log" 2>&1
  rc=$?
  set -e
  echo "$case: pdsh exit $rc" >&2
  echo "$rc" >"$dir/exit.txt"
  printf '%s\n' "$what" >"$dir/WHAT.txt"
done
# torchrun names its log folders after a random run id: keep the attempt folders, drop the id.
for d in "$out"/*/logs/node*; do
  for run in "$d"/*/; do [ -d "$run/attempt_0" ] && mv "$run"/attempt_* "$d"/ && rmdir "$run"; done
done
sed -i "s#$root/##g" $(grep -rl "$root/" "$out" 2>/dev/null) 2>/dev/null || true
