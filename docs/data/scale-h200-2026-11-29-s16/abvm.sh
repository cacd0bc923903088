#!/bin/bash
# VM A/B: stages.py (main CPU s of analyze-log's stages, 2 workers) with base and this tree in turn, order swapped each round
folder=$1; rounds=${2:-3}; new=${3:-/tmp/s16/new}
for i in $(seq 1 $rounds); do
  if [ $((i % 2)) = 1 ]; then order="base new"; else order="new base"; fi
  for t in $order; do
    root=/tmp/s16/base; [ $t = new ] && root=$new
    echo -n "round $i $t $(cut -d' ' -f1 /proc/loadavg) "; PYTHONPATH=$root /work/main/.venv/bin/python /tmp/s16/sc/stages.py $folder 2 /tmp/s16/ab-$t.json > /tmp/s16/ab-$t.txt; head -1 /tmp/s16/ab-$t.txt
  done
  cmp -s /tmp/s16/ab-base.json /tmp/s16/ab-new.json && echo "  JSON identical" || echo "  JSON DIFFERS"
done
