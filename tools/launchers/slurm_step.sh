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

tmp=$(mktemp -d /tmp/ncclcheck-slurm.XXXXXX)
host=$(hostname -s)
mem=$(awk '/MemTotal/ {print int($2 / 1024) - 2048}' /proc/meminfo)
cat >"$tmp/slurm.conf" <<CONF
ClusterName=ncclcheck
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
SlurmctldPort=${SLURMCTLD_PORT:-16817}
SlurmdPort=${SLURMD_PORT:-16818}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
JobAcctGatherParams=OverMemoryKill
JobCompType=jobcomp/filetxt
JobCompLoc=$tmp/jobcomp.txt
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
KillWait=5
MinJobAge=3600
NodeName=$host CPUs=$(nproc) RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
mkdir -p "$tmp/state" "$tmp/spool"
export SLURM_CONF=$tmp/slurm.conf
# munged refuses to run as root with its files owned by the munge user: started as that user (and stopped at the end)
started_munge=
pgrep -x munged >/dev/null || { mkdir -p /run/munge; chown munge: /run/munge 2>/dev/null || true
  runuser -u munge -- munged; started_munge=1; }
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
stop() {
  for d in slurmd slurmctld; do [ -f "$tmp/$d.pid" ] && kill "$(cat "$tmp/$d.pid")" 2>/dev/null || true; done
  [ -n "$started_munge" ] && [ -f /run/munge/munged.pid ] && kill "$(cat /run/munge/munged.pid)" 2>/dev/null || true
}
trap stop EXIT
for _ in $(seq 30); do sinfo -h -o %T 2>/dev/null | grep -q idle && break; sleep 1; done

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
