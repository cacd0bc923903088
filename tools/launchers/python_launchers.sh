#!/usr/bin/env bash
# Record small failing gloo jobs under the launchers that come as Python packages, as
# tests/data/launchers/<launcher>/<case>/console.log fixtures: HF Accelerate (`accelerate launch --multi_gpu`, which
# runs on the CPU with gloo where no GPU is), PyTorch Lightning (its Trainer starts the ranks itself), DeepSpeed's
# launcher (`deepspeed --num_gpus 4`, CPU accelerator), Ray Train (TorchTrainer, 4 CPU workers).
#
# Needs (installs nothing; says what is missing): a Python environment with torch, accelerate, lightning, deepspeed
# and ray[train], named by LAUNCHERS_PYTHON (default: .venv-launchers/bin/python). These launchers write no per-rank
# files.
#
# usage: tools/launchers/python_launchers.sh [OUT_DIR] [LAUNCHER ...]   (default: tests/data/launchers, both)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${1:-tests/data/launchers}
shift || true
launchers=("$@")
[ ${#launchers[@]} -gt 0 ] || launchers=(accelerate lightning deepspeed ray)
py=${LAUNCHERS_PYTHON:-$root/.venv-launchers/bin/python}
bin=$(dirname "$py")
for mod in torch accelerate lightning deepspeed ray.train; do
  "$py" -c "import $mod" 2>/dev/null || {
    echo "python_launchers.sh: $py cannot import $mod: pip install torch accelerate lightning deepspeed 'ray[train]'" >&2
    exit 2; }
done

declare -A what=(
  [clean]="every rank finishes"
  [raise]="rank 2 raises RuntimeError at step 3"
  [kill]="rank 1 is killed by SIGKILL at step 3"
  [hang]="rank 3 sleeps 40 s (Lightning: 150 s) in host code at step 3; the others' collective times out after 10 s (Lightning: 120 s)"
  [cut]="every rank sleeps at step 3; SIGKILL to the launcher's whole process tree (its session), as a node lost"
)
declare -A args=([clean]="clean" [raise]="raise 2" [kill]="kill 1" [hang]="hang 3" [cut]="timelimit 0")
# the workers' line of step 2, after which the cut comes (Lightning's bar counts the batches begun)
declare -A step2=([accelerate]="step 2 loss" [deepspeed]="step 2 done" [ray]="step 2 done" [lightning]="3/6")
cases=(${CASES:-clean raise kill hang cut})
# shellcheck source=tools/launchers/cut_tree.sh
. tools/launchers/cut_tree.sh
port=30000
for launcher in "${launchers[@]}"; do
  for case in "${cases[@]}"; do
    dir=$out/$launcher/$case
    rm -rf "$dir"; mkdir -p "$dir"
    port=$((port + 1))
    set +e
    # shellcheck disable=SC2086
    case $launcher in
      accelerate)
        cmd=("$bin/accelerate" launch --multi_gpu --num_processes 4 --num_machines 1 --main_process_port $port
          --mixed_precision no --dynamo_backend no accelerate_job.py ${args[$case]}) ;;
      deepspeed)
        cmd=("$bin/deepspeed" --num_gpus 4 --master_port $port worker.py ${args[$case]}) ;;
      ray)
        cmd=(env RAY_DISABLE_USAGE_STATS=1 "$py" ray_job.py ${args[$case]}) ;;
      lightning)
        cmd=(env MASTER_PORT=$port WORKER_SLEEP=150 "$py" lightning_job.py ${args[$case]}) ;;
    esac
    if [ "$case" = cut ]; then
      log=$(realpath "$dir")/console.log
      rc=$(cd tools/launchers && cut_tree "$log" "${step2[$launcher]}" "${cmd[@]}")
    else
      (cd tools/launchers && "${cmd[@]}") >"$dir/console.log" 2>&1
      rc=$?
    fi
    set -e
    echo "$launcher/$case: exit $rc" >&2
    echo "$rc" >"$dir/exit.txt"
    printf '%s\n' "${what[$case]}" >"$dir/WHAT.txt"
  done
done
sed -i "s#$root/##g" $(grep -rl "$root/" "$out" 2>/dev/null) 2>/dev/null || true
