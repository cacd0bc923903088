#!/usr/bin/env bash
# Records tests/data/net_setup/ (torch CPU wheel, gloo, two ranks on this host): each case's console, command and
# torchrun's exit status. Usage: tools/netsetup/run_cpu.sh [PYTHON_BIN_DIR]
set -u
bin=${1:-/work/main/.venv/bin}
here=$(cd "$(dirname "$0")" && pwd)
out=$here/../../tests/data/net_setup
record() {  # name, port, environment assignments...
    local name=$1 port=$2; shift 2
    mkdir -p "$out/$name"
    local cmd="env $* $bin/torchrun --nnodes 1 --nproc-per-node 2 --master-addr 127.0.0.1 --master-port $port job.py"
    echo "$cmd" > "$out/$name/command.txt"
    (cd "$here" && eval "$cmd") > "$out/$name/console.log" 2>&1
    echo $? > "$out/$name/exit_status.txt"
    sed -i "s#$here/##g; s#$(cd "$bin/.." && pwd)/lib/python3.11/site-packages/##g; s#$(cd "$bin/.." && pwd)/##g" "$out/$name/console.log"
}
# an interface name this host does not have
record gloo_ifname_missing 29641 GLOO_SOCKET_IFNAME=ib0
# an address that is not this host's (192.0.2.1: TEST-NET-1, the development VM's eth0 is 192.0.2.2/24)
record gloo_address_not_local 29642 NETSETUP_ADDR0=192.0.2.1 NETSETUP_ADDR1=192.0.2.1
# NCCL's exclusion syntax given to gloo, which takes each comma-separated name as it stands
record gloo_ifname_exclusion 29643 "GLOO_SOCKET_IFNAME=^lo"
