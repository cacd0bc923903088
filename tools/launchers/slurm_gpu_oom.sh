#!/usr/bin/env bash
# Record Slurm's cgroup OOM kill (task/cgroup, cgroup v2) on a machine where Slurm is not installed and nothing can be
# fetched: the GPU device machine (root, cgroup v2 writable, no network). Two steps, on two machines:
#
#   1. download (here, a Debian 12 host with network): Debian's Slurm 22.05 and munge packages and the libraries they
#      load, as .debs into DEBDIR. Nothing is installed.
#        tools/launchers/slurm_gpu_oom.sh download DEBDIR
#   2. record (there, as root): unpacks the .debs with `dpkg -x` into /tmp/slurm-prefix (never into /), copies in only
#      the libraries that the machine lacks, starts munged, slurmctld and slurmd from that prefix with a slurm.conf and
#      cgroup.conf in a temporary folder (proctrack/cgroup, task/cgroup, cgroup/v2 with IgnoreSystemd, ConstrainRAMSpace),
#      runs `srun -l -n 2 --mem=600M` where task 1 allocates until the cgroup's OOM killer ends it, and writes into
#      OUTDIR: console.log, scontrol.txt, jobcomp.txt, dmesg.txt, setup.txt (machine, cgroup state, daemon logs).
#      Daemons are stopped by PID at the end.
#        tools/launchers/slurm_gpu_oom.sh record DEBDIR OUTDIR
#
# The one change outside /tmp: slurmd starts its step daemon from the compiled-in /usr/sbin/slurmstepd, so record puts a
# small wrapper there (only where no such file exists) that sets the prefix's library path; it is removed at the end.
# Status (2026-11-25, GPU device machine, Slurm 22.05.8): the daemons run and srun starts tasks, but the job's memory
# limit is not applied: slurmd, started outside systemd, moves itself into system.slice/<node>_slurmstepd.scope/slurmd
# and slurmstepd builds job_N under it without the memory controller ("Controller memory is not enabled!"), so no OOM
# kill happens. The cause: the stepd wrapper exec'd slurmstepd-wlm, and Slurm names its daemon from argv[0]'s base
# name, so the step daemon did not take itself for slurmstepd; the wrapper now execs a link named slurmstepd.
# CGROUP=no runs the same setup with proctrack/linuxproc and task/none (no OOM kill then): a check of the unpacking,
# munge and the daemons on a host without cgroup v2. SLURMCTLD_PORT and SLURMD_PORT move the daemons' ports.
set -uo pipefail

download() {
  local dir=$1
  mkdir -p "$dir" && cd "$dir" || exit 2
  # Slurm's daemons, client, plugins and munge, and every library they or their libraries load (apt-cache depends
  # --recurse, less libc, libgcc, libstdc++ and the installer's own packages, which any Linux machine has).
  apt-get download slurmd slurmctld slurm-client slurm-wlm-basic-plugins munge libmunge2 \
    libacl1 libaudit1 libaudit-common libbz2-1.0 libcap-ng0 libcap2 libdb5.3 libdbus-1-3 libgcrypt20 libgpg-error0 \
    libhwloc15 libjson-c5 liblua5.1-0 liblz4-1 liblzma5 libmd0 libnuma1 libpam0g libpcre2-8-0 libreadline8 libtinfo6 \
    libselinux1 libsystemd0 libudev1 libyaml-0-2 libzstd1 zlib1g || exit 2
  # apt names epoch versions with '%3a'; keep file names plain.
  for f in *%3a*; do [ -e "$f" ] && mv "$f" "${f//%3a/_}"; done
  ls "$dir"
}

# dpkg -x where dpkg exists; else the .deb's data member (an ar archive holding a tar), unpacked by Python.
debx() {
  if command -v dpkg >/dev/null; then dpkg -x "$1" "$2"; return; fi
  python3 - "$1" "$2" <<'PY'
import io, sys, tarfile
data = open(sys.argv[1], "rb").read()
pos = 8  # after "!<arch>\n"
while pos < len(data):
    name, size = data[pos:pos + 16].decode().strip().rstrip("/"), int(data[pos + 48:pos + 58])
    if name.startswith("data.tar"):
        tarfile.open(fileobj=io.BytesIO(data[pos + 60:pos + 60 + size])).extractall(sys.argv[2])
    pos += 60 + size + size % 2
PY
}

record() {
  local debs out
  debs=$(cd "$1" && pwd) || exit 2
  mkdir -p "$2" && out=$(cd "$2" && pwd) || exit 2
  [ "$(id -u)" = 0 ] || { echo "slurm_gpu_oom.sh: run as root" >&2; exit 2; }
  local cgroup=${CGROUP:-yes}
  local P=/tmp/slurm-prefix D=/tmp/slurm-deps R
  R=$(mktemp -d /tmp/slurm-oom.XXXXXX)
  local setup=$out/setup.txt
  rm -rf "$P" "$D"; mkdir -p "$P/fallback" "$P/bin" "$D"
  {
    echo "== machine"; uname -a; nproc; grep -E 'MemTotal|SwapTotal' /proc/meminfo; cat /etc/os-release 2>/dev/null
    echo "== cgroup"; mount | grep cgroup; cat /proc/self/cgroup
    echo "controllers: $(cat /sys/fs/cgroup/cgroup.controllers 2>&1)"
    echo "subtree_control: $(cat /sys/fs/cgroup/cgroup.subtree_control 2>&1)"
  } >"$setup" 2>&1

  # Slurm and munge into the prefix; the libraries into a side folder, to take only what this machine lacks.
  local f
  for f in "$debs"/*.deb; do
    case $(basename "$f") in
      slurm*|munge_*|libmunge2_*) debx "$f" "$P" ;;
      *) debx "$f" "$D" ;;
    esac
  done
  # The PMIx plugins need a library Slurm does not ship; without them slurmd logs no load errors.
  rm -f "$P"/usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix*
  local L=$P/usr/lib/x86_64-linux-gnu
  export LD_LIBRARY_PATH=$L:$L/slurm-wlm:$P/fallback
  local i s src missing
  for i in 1 2 3 4; do
    missing=$(find "$P/usr" -type f \( -name '*.so*' -o -perm -u+x \) -exec ldd {} \; 2>/dev/null |
      awk '/not found/ {print $1}' | sort -u)
    [ -z "$missing" ] && break
    for s in $missing; do
      src=$(find "$D" -name "$s" | head -1)
      if [ -n "$src" ]; then cp -L "$src" "$P/fallback/"; else echo "library $s: not in $debs" >>"$setup"; fi
    done
  done
  echo "== libraries taken from the .debs: $(ls "$P/fallback" | tr '\n' ' ')" >>"$setup"
  for s in slurmd slurmctld slurmstepd; do ln -sf "$P/usr/sbin/$s-wlm" "$P/bin/$s"; done
  ln -sf "$P/usr/sbin/munged" "$P/bin/munged"
  export PATH=$P/bin:$P/usr/bin:$PATH
  local stepd_wrapper=""
  if [ ! -e /usr/sbin/slurmstepd ]; then
    # Exec'd through the prefix's link named slurmstepd: Slurm tells which daemon it runs in from argv[0]'s base name
    # (log.c, run_in_daemon.c), and as "slurmstepd-wlm" the step daemon took itself for none, so cgroup/v2 built the
    # job's cgroup under slurmd's own leaf, where no controller was enabled (the first GPU try, WHAT.txt).
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$LD_LIBRARY_PATH" "$P/bin/slurmstepd" \
      >/usr/sbin/slurmstepd
    chmod 755 /usr/sbin/slurmstepd
    stepd_wrapper=/usr/sbin/slurmstepd
  fi

  # munge: a fresh key, every path in the run folder.
  dd if=/dev/urandom of="$R/munge.key" bs=1024 count=1 2>/dev/null
  chmod 400 "$R/munge.key"
  munged --force --key-file="$R/munge.key" --socket="$R/munge.sock" --pid-file="$R/munged.pid" \
    --log-file="$R/munged.log" --seed-file="$R/munged.seed" >>"$setup" 2>&1

  local host mem track task
  host=$(hostname -s)
  mem=$(awk '/MemTotal/ {print int($2 / 1024) - 2048}' /proc/meminfo)
  if [ "$cgroup" = yes ]; then track=proctrack/cgroup task=task/cgroup; else track=proctrack/linuxproc task=task/none; fi
  cat >"$R/slurm.conf" <<CONF
ClusterName=gpuoom
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$R/munge.sock
PluginDir=$L/slurm-wlm
StateSaveLocation=$R/state
SlurmdSpoolDir=$R/spool
SlurmctldPidFile=$R/slurmctld.pid
SlurmdPidFile=$R/slurmd.pid
SlurmctldLogFile=$R/slurmctld.log
SlurmdLogFile=$R/slurmd.log
SlurmdDebug=debug
SlurmctldPort=${SLURMCTLD_PORT:-16817}
SlurmdPort=${SLURMD_PORT:-16818}
ProctrackType=$track
TaskPlugin=$task
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$R/jobcomp.txt
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
KillWait=5
MinJobAge=3600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
  # cgroup v2 without systemd: Slurm makes its own scope under system.slice (prepared below; 22.05 has no
  # EnableControllers, its parser refuses the key).
  [ "$cgroup" = yes ] && cat >"$R/cgroup.conf" <<CONF
CgroupPlugin=cgroup/v2
IgnoreSystemd=yes
ConstrainRAMSpace=yes
AllowedRAMSpace=100
CONF
  mkdir -p "$R/state" "$R/spool"
  export SLURM_CONF=$R/slurm.conf
  # Every daemon started here is stopped by its PID file, also when the recording is cut short.
  stop_daemons() {
    local d
    for d in slurmd slurmctld munged; do [ -f "$R/$d.pid" ] && kill "$(cat "$R/$d.pid")" 2>/dev/null; done
    sleep 2
  }
  trap stop_daemons EXIT
  if [ "$cgroup" = yes ]; then
    # What systemd with Delegate=yes would give slurmd: system.slice (where Slurm puts slurmstepd.scope) with the
    # controllers enabled from the root down.
    local c cg=/sys/fs/cgroup
    mkdir -p "$cg/system.slice"
    for c in cpuset cpu memory pids; do
      echo "+$c" >"$cg/cgroup.subtree_control"; echo "+$c" >"$cg/system.slice/cgroup.subtree_control"
    done 2>>"$setup"
    echo "== subtree_control: root '$(cat $cg/cgroup.subtree_control)', system.slice" \
      "'$(cat $cg/system.slice/cgroup.subtree_control)'" >>"$setup"
  fi
  slurmctld -f "$SLURM_CONF" >>"$setup" 2>&1
  if [ "$cgroup" = yes ]; then
    # slurmd reads the controllers of its own cgroup: start it in system.slice/slurmd.service, as systemd would,
    # not in whatever cgroup this shell was given.
    mkdir -p /sys/fs/cgroup/system.slice/slurmd.service
    # INVOCATION_ID is how a daemon tells that systemd started it: then Slurm's cgroup/v2 stays in this cgroup
    # instead of moving itself into a scope of its own, where the memory controller was not enabled.
    (echo $BASHPID >/sys/fs/cgroup/system.slice/slurmd.service/cgroup.procs && \
      INVOCATION_ID=$(cat /proc/sys/kernel/random/uuid | tr -d -) exec slurmd -f "$SLURM_CONF") >>"$setup" 2>&1
  else
    slurmd -f "$SLURM_CONF" >>"$setup" 2>&1
  fi
  local up=no
  for i in $(seq 30); do timeout 5 sinfo -h -o %T 2>/dev/null | grep -q idle && { up=yes; break; }; sleep 1; done
  echo "== node idle: $up ($(sinfo -h -o '%N %T' 2>&1))" >>"$setup"

  if [ $up = yes ]; then
    local py
    py=$(command -v python3)
    # Task 1 takes 50 MiB a step, each page written, until the step's memory.max (600M for the job) stops it; task 0
    # sleeps and ends cleanly. Where no limit is enforced (CGROUP=no), task 1 stops by itself at 3000 MiB.
    timeout 120 srun -l -J oom -n 2 --mem=600M "$py" -c '
import os, time
r = int(os.environ["SLURM_PROCID"])
print(f"task {r} pid {os.getpid()} on {os.uname().nodename}", flush=True)
if r == 1:
    held = []
    while True:
        held.append(b"\x01" * (50 << 20))
        print(f"task 1 holds {len(held) * 50} MiB", flush=True)
        if len(held) == 60:
            raise SystemExit("task 1: 3000 MiB and no memory limit enforced")
        time.sleep(0.05)
time.sleep(10)
print("task 0 done", flush=True)
' >"$out/console.log" 2>&1
    echo "srun exit $?" >>"$setup"
    local job
    job=$(grep -o 'JobId=[0-9]*' "$R/jobcomp.txt" 2>/dev/null | tail -1 | cut -d= -f2)
    [ -n "$job" ] && scontrol show job "$job" >"$out/scontrol.txt" 2>&1
    cp "$R/jobcomp.txt" "$out/jobcomp.txt" 2>/dev/null
    echo "== job cgroups left: $(find /sys/fs/cgroup/system.slice -maxdepth 3 -name 'job_*' 2>/dev/null)" >>"$setup"
  fi
  sleep 1
  dmesg -T 2>&1 | tail -200 >"$out/dmesg.txt"

  stop_daemons
  trap - EXIT
  for s in munged slurmctld slurmd; do
    echo "== $s.log"; cat "$R/$s.log" 2>/dev/null
  done >>"$setup"
  { echo "== slurm.conf"; cat "$R/slurm.conf"; echo "== cgroup.conf"; cat "$R/cgroup.conf" 2>/dev/null; } >>"$setup"
  [ -n "$stepd_wrapper" ] && rm -f "$stepd_wrapper"
  # Run-folder paths carry no meaning in a fixture.
  sed -i "s#$R#/tmp/slurm-oom#g; s#$P#/tmp/slurm-prefix#g" "$out"/*.txt "$out"/*.log 2>/dev/null
  ls -l "$out"
}

case ${1:-} in
  download) [ $# = 2 ] || { echo "usage: $0 download DEBDIR" >&2; exit 2; }; download "$2" ;;
  record) [ $# = 3 ] || { echo "usage: $0 record DEBDIR OUTDIR" >&2; exit 2; }; record "$2" "$3" ;;
  *) echo "usage: $0 download DEBDIR | record DEBDIR OUTDIR" >&2; exit 2 ;;
esac
