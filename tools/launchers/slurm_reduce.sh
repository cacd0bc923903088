#!/usr/bin/env bash
# docs/scale.md's node-side reduction, run end to end under a real Slurm: a synthetic job's logs laid out one folder
# per node, one `srun --ntasks-per-node=1` task per node writing that node's evidence, one merge; the merged verdict
# must equal the verdict on all logs read at once (the JSON, byte for byte).
#
# Needs (installs nothing; says what is missing): Debian's slurm-wlm and munge, run as root. Starts a controller and
# NODES slurmd daemons on this machine (NodeName=n0..n{NODES-1}, each on its own port, one host), stops them by PID.
#
# usage: tools/launchers/slurm_reduce.sh [NODES] [RANKS_PER_NODE]     (default: 4 nodes of 256 ranks)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
nodes=${1:-4}
per=${2:-256}
for tool in slurmctld slurmd srun munged; do
  command -v "$tool" >/dev/null || { echo "slurm_reduce.sh: $tool not found: apt-get install slurm-wlm munge" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "slurm_reduce.sh: run as root" >&2; exit 2; }
nc=$root/.venv/bin/ncclcheck
[ -x "$nc" ] || { echo "slurm_reduce.sh: no .venv/bin/ncclcheck: make .venv/.installed" >&2; exit 2; }

tmp=$(mktemp -d /tmp/ncclcheck-reduce.XXXXXX)
host=$(hostname -s)
cpus=$(nproc)
cat >"$tmp/slurm.conf" <<CONF
ClusterName=ncclcheck
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool/%n
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd-%n.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd-%n.log
SlurmctldPort=${SLURMCTLD_PORT:-16917}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
NodeName=n[0-$((nodes - 1))] NodeHostname=$host NodeAddr=127.0.0.1 Port=[17001-$((17000 + nodes))] CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
mkdir -p "$tmp/state"
for n in $(seq 0 $((nodes - 1))); do mkdir -p "$tmp/spool/n$n"; done
export SLURM_CONF=$tmp/slurm.conf
pgrep -x munged >/dev/null || { mkdir -p /run/munge; chown munge: /run/munge 2>/dev/null || true; munged; }
slurmctld -f "$SLURM_CONF"
for n in $(seq 0 $((nodes - 1))); do slurmd -f "$SLURM_CONF" -N "n$n"; done
stop() {
  for p in "$tmp"/slurmd-*.pid "$tmp/slurmctld.pid"; do [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null || true; done
}
trap stop EXIT
for _ in $(seq 60); do
  [ "$(sinfo -h -N -o %T 2>/dev/null | grep -c idle)" -ge "$nodes" ] && break; sleep 1
done
sinfo -N -o '%N %T' >&2

# The job: tp 8, one node log per node folder, a straggler on the last node.
logs=$tmp/logs
"$root/.venv/bin/python" tools/synth_job.py "$tmp/flat" --tp 8 --dp $((nodes * per / 8)) \
  --straggler $((nodes * per - 3)) --per-file "$per" >/dev/null
i=0
for f in $(ls "$tmp/flat" | sort); do mkdir -p "$logs/n$i"; mv "$tmp/flat/$f" "$logs/n$i/"; i=$((i + 1)); done
mkdir -p "$tmp/evidence"
start=$(date +%s.%N)
srun -N "$nodes" --ntasks-per-node=1 -l bash -c \
  "$nc analyze-log --evidence-out $tmp/evidence/node-\$SLURMD_NODENAME.json.gz $logs/\$SLURMD_NODENAME"
reduced=$(date +%s.%N)
set +e
"$nc" analyze-log --json "$tmp/evidence" >"$tmp/merged.json"
"$nc" analyze-log --json "$logs" >"$tmp/direct.json"
set -e
merged=$(date +%s.%N)
ls -l "$tmp/evidence" >&2
if cmp -s "$tmp/merged.json" "$tmp/direct.json"; then same=yes; else same=NO; fi
python3 - "$tmp/merged.json" "$nodes" "$per" "$start" "$reduced" "$merged" "$same" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))["verdict"]
nodes, per, start, reduced, merged, same = sys.argv[2:]
print(f"nodes {nodes} x {per} ranks: srun reduction {float(reduced) - float(start):.1f} s, merge and direct read "
      f"{float(merged) - float(reduced):.1f} s; verdict {v['kind']}, culprits {v['culprit_ranks']}; merged JSON "
      f"identical to the direct read: {same}")
PY
[ "$same" = yes ]
