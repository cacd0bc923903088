#!/usr/bin/env bash
# Record srun refusing a step under a real single-node Slurm, as tests/data/launchers/slurm/no_step/ (the daemons as
# tools/launchers/slurm.sh starts them): inside a one-task allocation (`salloc -n 1`), `srun -n 4` asks for a step of
# four tasks; the controller refuses it, srun prints "srun: error: Unable to create step for job J: REASON"
# (src/srun/launch.c, the reason in slurm_strerror's words) and no task starts. Keeps srun's console (console.log) and
# its exit status (exit-console.txt).
#
# usage: tools/launchers/slurm_step.sh [OUT_DIR]     (default: tests/data/launchers/slurm)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${1:-tests/data/launchers/slurm}
for tool in slurmctld slurmd srun scontrol munged; do
  command -v "$tool" >/dev/null || { echo "slurm_step.sh: $tool not found: apt-get install slurm-wlm munge" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "slurm_step.sh: run as root (slurmd starts tasks as any user)" >&2; exit 2; }
py=${PY:-$root/.venv/bin/python}  # PY=...: another interpreter with torch
"$py" -c 'import torch' 2>/dev/null || { echo "slurm_step.sh: no torch in .venv: make .venv/.torch" >&2; exit 2; }

# shellcheck source=tools/launchers/slurm_cluster.sh
. tools/launchers/slurm_cluster.sh

dir=$out/no_step
rm -rf "$dir"; mkdir -p "$dir"
set +e
salloc -n 1 -J no_step srun -n 4 "$py" tools/launchers/worker.py clean >"$dir/console.log" 2>&1
rc=$?
set -e
echo "$rc" >"$dir/exit-console.txt"
printf '%s\n' "srun asks for a step of 4 tasks inside a 1-task allocation; the controller refuses it and no task starts" \
  >"$dir/WHAT.txt"
sed -i "s#$root/##g" "$dir"/*.log 2>/dev/null || true
