#!/usr/bin/env bash
# Record small failing gloo jobs under a real single-node Slurm, as tests/data/launchers/slurm/<case>/ fixtures.
#
# Needs (installs nothing; says what is missing): Debian's slurm-wlm and munge, run as root; the checkout's .venv
# with torch (make .venv/.torch). Starts munged (if not running), slurmctld and slurmd with a slurm.conf in a
# temporary folder, runs each case twice (one console with `srun -l`, and one file per task with `--output=%t`),
# keeps the scheduler's records (jobcomp/filetxt line, `scontrol show job`), and stops the daemons by PID.
#
# usage: tools/launchers/slurm.sh [OUT_DIR] [CASE ...]     (default: tests/data/launchers/slurm, every case)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${1:-tests/data/launchers/slurm}
shift || true
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(clean raise kill hang oom timelimit cut)
for tool in slurmctld slurmd srun scontrol munged; do
  command -v "$tool" >/dev/null || { echo "slurm.sh: $tool not found: apt-get install slurm-wlm munge" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "slurm.sh: run as root (slurmd starts tasks as any user)" >&2; exit 2; }
py=$root/.venv/bin/python
"$py" -c 'import torch' 2>/dev/null || { echo "slurm.sh: no torch in .venv: make .venv/.torch" >&2; exit 2; }

# shellcheck source=tools/launchers/slurm_cluster.sh
. tools/launchers/slurm_cluster.sh

# case -> "srun options|worker arguments|what happened"
declare -A spec=(
  [clean]="|clean|every rank finishes"
  [raise]="|raise 2|rank 2 raises RuntimeError at step 3; the others lose their peer"
  [kill]="|kill 1|rank 1 is killed by SIGKILL at step 3; the others lose their peer"
  [hang]="|hang 3|rank 3 sleeps 40 s in host code at step 3; the others' all_reduce times out after 10 s"
  [oom]="--mem=3000M|oom 1|rank 1 allocates until Slurm's memory accounting kills the step (--mem=3000M)"
  [timelimit]="--time=1|timelimit 0|every rank sleeps at step 3 until the 1-minute time limit cancels the step"
  [cut]="|timelimit 0|every rank sleeps at step 3; SIGKILL to srun's whole process tree (the console's end), then scancel"
  [killbad]="--kill-on-bad-exit=1|raise 2|rank 2 raises RuntimeError at step 3; srun's --kill-on-bad-exit stops the other tasks at once (the launcher's stop after the first failure, no outside stop)"
)
# shellcheck source=tools/launchers/cut_tree.sh
. tools/launchers/cut_tree.sh
port=29700
for case in "${cases[@]}"; do
  IFS='|' read -r opts args what <<<"${spec[$case]}"
  dir=$out/$case
  rm -rf "$dir"; mkdir -p "$dir/tasks"
  forms=(console tasks)
  [ "$case" = cut ] && forms=(console)  # srun's console is what a lost batch host cuts; the tasks are cancelled after
  for form in "${forms[@]}"; do
    port=$((port + 1))
    if [ $form = console ]; then
      io=(-l); dest="$dir/console.log"
    else
      io=(--output="$dir/tasks/%t.log" --error="$dir/tasks/%t.log"); dest="$dir/tasks/srun.log"
    fi
    set +e
    if [ "$case" = cut ]; then
      # shellcheck disable=SC2086
      rc=$(cut_tree "$dest" "step 2 done" srun "${io[@]}" -J "$case" -n 4 --overcommit $opts \
        --export=ALL,MASTER_PORT=$port "$py" tools/launchers/worker.py $args)
      for j in $(squeue -h -n "$case" -o %i); do scancel "$j"; done
    else
      # shellcheck disable=SC2086
      srun "${io[@]}" -J "$case" -n 4 --overcommit $opts --export=ALL,MASTER_PORT=$port \
        "$py" tools/launchers/worker.py $args >"$dest" 2>&1
      rc=$?
    fi
    set -e
    job=$(squeue -h -o %i 2>/dev/null | tail -1)
    job=$(grep -o 'JobId=[0-9]*' "$tmp/jobcomp.txt" 2>/dev/null | tail -1 | cut -d= -f2)
    [ -n "$job" ] && scontrol show job "$job" >"$dir/scontrol-$form.txt" 2>&1 || true
    [ -n "$job" ] && grep "JobId=$job " "$tmp/jobcomp.txt" >"$dir/jobcomp-$form.txt" || true
    echo "$case/$form: srun exit $rc (job $job)" >&2
    echo "$rc" >"$dir/exit-$form.txt"
  done
  [ -s "$dir/tasks/srun.log" ] || rm -f "$dir/tasks/srun.log"
  printf '%s\n' "$what" >"$dir/WHAT.txt"
done
sed -i "s#$root/##g" $(grep -rl "$root/" "$out" 2>/dev/null) 2>/dev/null || true
