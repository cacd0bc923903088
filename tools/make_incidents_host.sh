#!/usr/bin/env bash
# Run tools/incident_host.py's scenarios as root and keep what the host wrote: the torchrun console, per-rank logs,
# and the kernel log (dmesg raw and -T, journalctl -k where there is one). The OOM run is put in a cgroup v2 with
# memory.max=4G and no swap; where cgroups cannot be written, the OOM run is skipped and said so.
# Usage: tools/make_incidents_host.sh OUTDIR
set -u
out=${1:?OUTDIR}; rm -rf "$out"; mkdir -p "$out"
script=$(pwd)/tools/incident_host.py
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
python3 -c 'import torch; print("torch", torch.__version__)' | tee "$out/env.txt"
uname -r >> "$out/env.txt"; hostname >> "$out/env.txt"
dmesg -T > /dev/null 2>&1 && echo "dmesg readable" >> "$out/env.txt" || echo "dmesg NOT readable" >> "$out/env.txt"
start=$(date +%s)
run() {  # name scenario [prefix...]
  name=$1; scen=$2; shift 2
  mkdir -p "$out/$name"
  "$@" timeout 120 torchrun --standalone --nproc-per-node 2 --log-dir "$out/$name/torchrun" --redirects 3 --tee 3 \
    "$script" "$scen" > "$out/$name/console.log" 2>&1
  echo "$name exit=$?" | tee -a "$out/env.txt"
}
cg=/sys/fs/cgroup/ncclcheck_oom
if mkdir -p "$cg" 2>/dev/null && echo 4G > "$cg/memory.max" 2>/dev/null; then
  echo 0 > "$cg/memory.swap.max" 2>/dev/null
  echo "cgroup $cg memory.max=$(cat $cg/memory.max)" >> "$out/env.txt"
  # the shell that starts torchrun joins the cgroup, so the agent and both ranks are in it
  run oom oom sh -c "echo \$\$ > $cg/cgroup.procs && exec \"\$@\"" sh
  cat "$cg/memory.events" >> "$out/env.txt" 2>/dev/null
else
  echo "cgroup v2 not writable: OOM run skipped" >> "$out/env.txt"
fi
run segfault segfault
sleep 1
since=$(( $(date +%s) - start + 5 ))
dmesg > "$out/dmesg_raw.log" 2>&1
dmesg -T > "$out/dmesg_T.log" 2>&1
journalctl -k --since "-${since}s" > "$out/journal_k.log" 2>&1 || true
nvidia-smi --query-gpu=index,pci.bus_id,name --format=csv > "$out/gpus.csv" 2>&1 || true
# a one-rank NCCL start with INFO: the "Init COMPLETE … busId" line that places a rank on its GPU
NCCL_DEBUG=INFO timeout 60 torchrun --standalone --nproc-per-node 1 -m ncclcheck.bench --size 1e3 --iters 1 \
  --warmup 0 > "$out/nccl_init.log" 2>&1 || true
echo done >> "$out/env.txt"
