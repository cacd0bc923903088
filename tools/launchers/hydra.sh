#!/usr/bin/env bash
# Record MPICH's Hydra (mpiexec) failing to start its processes or reporting one a signal ended, as
# tests/data/launchers/hydra/<case>/ fixtures.
#
# Needs (installs nothing; says what is missing): Debian's mpich (Hydra 4.0.2 in bookworm), ssh's client; the
# checkout's .venv with torch (or PY=python with torch). Hydra starts a proxy per node through ssh; here a stand-in
# for ssh (written to a temporary folder) runs the proxy's command on this host, as a second node would, and
# mpiexec's -localhost gives the proxies the name to connect back to: one that does not resolve, and one no route
# reaches. Hydra 4.0.2's mpiexec then waits for the proxy for ever (4.1 reports "Launch proxy failed."): `timeout`
# stops it after 20 s with SIGTERM, whose handling adds mpiexec's last lines.
#
# usage: tools/launchers/hydra.sh [OUT_DIR] [CASE ...]     (default: tests/data/launchers/hydra, every case)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${1:-tests/data/launchers/hydra}
shift || true
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(proxy_unresolved proxy_unreachable ssh_unresolved kill)
command -v mpiexec.hydra >/dev/null || { echo "hydra.sh: mpiexec.hydra not found: apt-get install mpich" >&2; exit 2; }
py=${PY:-$root/.venv/bin/python}
"$py" -c 'import torch' 2>/dev/null || { echo "hydra.sh: no torch in $py: make .venv/.torch" >&2; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/ssh" <<'SSH'
#!/bin/sh
# ssh's stand-in: its options and the host left off, the command run on this host
while [ "${1#-}" != "$1" ]; do shift; done
shift
exec sh -c "$*"
SSH
chmod +x "$tmp/ssh"
remote=(-launcher ssh -launcher-exec "$tmp/ssh" -hosts nodeb)

declare -A spec=(
  [proxy_unresolved]="proxy|-localhost nosuch.invalid|the proxy on node 'nodeb' is told to connect back to mpiexec at a name that does not resolve; no rank starts; mpiexec waits until timeout's SIGTERM after 20 s"
  [proxy_unreachable]="proxy|-localhost 0.0.0.1|the proxy on node 'nodeb' is told to connect back to mpiexec at an address no route reaches (0.0.0.1); no rank starts; mpiexec waits until timeout's SIGTERM after 20 s"
  [ssh_unresolved]="ssh|-hosts nosuch.invalid|mpiexec's ssh to a node whose name does not resolve fails; no rank starts; mpiexec waits until timeout's SIGTERM after 20 s"
  [kill]="local||rank 1 is killed by SIGKILL at step 3; mpiexec reports it and stops the others"
)
port=29900
for case in "${cases[@]}"; do
  IFS='|' read -r how opts what <<<"${spec[$case]}"
  dir=$out/$case
  rm -rf "$dir"; mkdir -p "$dir"
  port=$((port + 1))
  # shellcheck disable=SC2206
  extra=($opts)
  case $how in
    proxy) cmd=(mpiexec.hydra "${remote[@]}" "${extra[@]}" -n 1 hostname) ;;
    ssh) cmd=(mpiexec.hydra "${extra[@]}" -n 1 hostname) ;;
    local) cmd=(mpiexec.hydra -n 4 -genv MASTER_PORT $port "$py" tools/launchers/worker.py kill 1) ;;
  esac
  set +e
  timeout 20 "${cmd[@]}" >"$dir/console.log" 2>&1
  rc=$?
  set -e
  echo "$case: mpiexec exit $rc" >&2
  echo "$rc" >"$dir/exit-console.txt"
  printf '%s\n' "$what" >"$dir/WHAT.txt"
done
sed -i "s#$root/##g; s#$tmp/#/tmp/#g" $(grep -rl -e "$root/" -e "$tmp/" "$out" 2>/dev/null) 2>/dev/null || true
