#!/usr/bin/env bash
# Record DeepSpeed's runner (the `deepspeed` command, deepspeed/launcher/runner.py) refusing to launch, as
# tests/data/launchers/deepspeed_runner/<case>.log: each fails in the runner itself, before any worker starts, so the
# log is the runner's console alone (CPU, no GPU needed; hosts named in the hostfiles do not exist).
#   no_ssh          a hostfile of two hosts: the runner's ssh check of the first host fails
#   launcher_missing  --launcher mvapich (not installed here) with --no_ssh_check and --master_addr
#   bad_hostfile    a hostfile line without `slots=N`
#   num_nodes       --num_nodes 2 and no hostfile
#   node_rank       --no_ssh --node_rank 5 with a hostfile of two hosts
#
# usage: tools/launchers/deepspeed_runner.sh [OUT_DIR]   (default: tests/data/launchers/deepspeed_runner)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${1:-tests/data/launchers/deepspeed_runner}
venv=${VENV:-$root/.venv}
[ -x "$venv/bin/deepspeed" ] || { echo "deepspeed_runner.sh: no deepspeed in $venv (VENV=...)" >&2; exit 2; }
mkdir -p "$out"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf 'nohost-a slots=1\nnohost-b slots=1\n' >"$tmp/hostfile"
printf 'nohost-a\n' >"$tmp/badhostfile"
declare -A spec=(
  [no_ssh]="--hostfile $tmp/hostfile"
  [launcher_missing]="--hostfile $tmp/hostfile --no_ssh_check --launcher mvapich --master_addr 127.0.0.1"
  [bad_hostfile]="--hostfile $tmp/badhostfile"
  [num_nodes]="--num_nodes 2 --hostfile $tmp/none"
  [node_rank]="--hostfile $tmp/hostfile --no_ssh --node_rank 5 --master_addr 127.0.0.1"
)
for case in "${!spec[@]}"; do
  # shellcheck disable=SC2086
  (cd "$tmp" && "$venv/bin/deepspeed" ${spec[$case]} "$root/tools/launchers/store_job.py") >"$out/$case.log" 2>&1 || true
  sed -i "s#$tmp/#/tmp/#g; s#$root/##g; s#$venv/##g" "$out/$case.log"
done
