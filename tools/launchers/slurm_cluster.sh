# A single-node Slurm cluster for the recording scripts (tools/launchers/slurm.sh, slurm_step.sh), sourced by them:
# a slurm.conf in a temporary folder ($tmp, exported as SLURM_CONF; memory accounting on, job completions in
# $tmp/jobcomp.txt), munged started as the munge user if none runs (it refuses root with its files owned by munge),
# slurmctld and slurmd, all stopped by PID at the caller's exit; returns once the node is idle.
# shellcheck shell=bash
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
