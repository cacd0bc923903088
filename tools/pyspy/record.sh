#!/bin/bash
# Record py-spy dumps of a hung gloo job (tools/pyspy/loader_hang.py, 2 ranks under torchrun) into $1: each worker's
# `py-spy dump`, with --locals, with --subprocesses (its DataLoader worker too) and with --native, named by its RANK.
# PY: the Python with torch; PYSPY: the py-spy binary (pip install py-spy).
set -u
out=$1; PY=${PY:-python}; PYSPY=${PYSPY:-py-spy}
mkdir -p "$out"
"$PY" -m torch.distributed.run --nproc-per-node 2 --master-port 29561 "$(dirname "$0")/loader_hang.py" \
    > "$out/console.log" 2>&1 &
launcher=$!
sleep 25
for pid in $(pgrep -P "$launcher"); do  # torchrun's workers are its children
    rank=$(tr '\0' '\n' < /proc/$pid/environ | sed -n 's/^RANK=//p')
    "$PYSPY" dump --pid "$pid" > "$out/rank$rank.txt" 2>&1
    "$PYSPY" dump --locals --pid "$pid" > "$out/rank$rank-locals.txt" 2>&1
    "$PYSPY" dump --subprocesses --pid "$pid" > "$out/rank$rank-subprocesses.txt" 2>&1
    "$PYSPY" dump --native --pid "$pid" > "$out/rank$rank-native.txt" 2>&1
done
kill "$launcher"  # torchrun's agent stops its workers on SIGTERM
wait "$launcher"
