#!/usr/bin/env bash
# Record small failing gloo jobs under Open MPI's mpirun, as tests/data/launchers/mpi/<case>/ fixtures.
#
# Needs (installs nothing; says what is missing): Debian's openmpi-bin; the checkout's .venv with torch. Each case
# runs twice: one console with `--tag-output` ("[1,3]<stderr>:" before each line), and one file per rank with
# `--output-filename` (<dir>/1/rank.N/stdout and stderr).
#
# usage: tools/launchers/mpi.sh [OUT_DIR] [CASE ...]     (default: tests/data/launchers/mpi, every case)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${1:-tests/data/launchers/mpi}
shift || true
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(clean raise kill hang timelimit cut)
command -v mpirun >/dev/null || { echo "mpi.sh: mpirun not found: apt-get install openmpi-bin" >&2; exit 2; }
py=$root/.venv/bin/python
"$py" -c 'import torch' 2>/dev/null || { echo "mpi.sh: no torch in .venv: make .venv/.torch" >&2; exit 2; }

declare -A spec=(
  [clean]="|clean|every rank finishes"
  [raise]="|raise 2|rank 2 raises RuntimeError at step 3; the others lose their peer"
  [kill]="|kill 1|rank 1 is killed by SIGKILL at step 3; mpirun stops the others"
  [hang]="|hang 3|rank 3 sleeps 40 s in host code at step 3; the others' all_reduce times out after 10 s"
  [timelimit]="--timeout 20|timelimit 0|every rank sleeps at step 3 until mpirun's --timeout 20 ends the job"
  [cut]="|timelimit 0|every rank sleeps at step 3; SIGKILL to mpirun's whole process tree, as a node lost"
)
# shellcheck source=tools/launchers/cut_tree.sh
. tools/launchers/cut_tree.sh
port=29800
for case in "${cases[@]}"; do
  IFS='|' read -r opts args what <<<"${spec[$case]}"
  dir=$out/$case
  rm -rf "$dir"; mkdir -p "$dir"
  for form in console ranks; do
    port=$((port + 1))
    if [ $form = console ]; then
      io=(--tag-output); dest="$dir/console.log"
    else
      io=(--output-filename "$dir/ranks"); dest="$dir/mpirun.log"
    fi
    set +e
    # shellcheck disable=SC2086
    cmd=(mpirun --allow-run-as-root --oversubscribe -np 4 "${io[@]}" $opts -x MASTER_PORT=$port
      "$py" tools/launchers/worker.py $args)
    if [ "$case" = cut ]; then
      rc=$(cut_tree "$dest" "step 2 done" "${cmd[@]}")
    else
      "${cmd[@]}" >"$dest" 2>&1
      rc=$?
    fi
    set -e
    echo "$case/$form: mpirun exit $rc" >&2
    echo "$rc" >"$dir/exit-$form.txt"
  done
  printf '%s\n' "$what" >"$dir/WHAT.txt"
done
sed -i "s#$root/##g" $(grep -rl "$root/" "$out" 2>/dev/null) 2>/dev/null || true
