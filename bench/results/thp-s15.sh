#!/bin/bash
# THP madvise (this machine's setting) against always: one binary, 8->3, fresh copy each run.
trap 'echo madvise > /sys/kernel/mm/transparent_hugepage/enabled' EXIT
B=/work/bench-s14/bin/fusee
run() { # runs mode pair
  echo $2 > /sys/kernel/mm/transparent_hugepage/enabled
  rm -rf /work/tmpf && cp -a /work/bench-s14/src-8-shards-$1-runs-seed-1 /work/tmpf && sync
  /usr/bin/time -f "$1 $2 pair $3 %e wall %U user %S sys %M KiB %R minflt load $(cut -d' ' -f1 /proc/loadavg)" $B reshard /work/tmpf 3 --json -q > /dev/null
}
for p in 1 2 3 4 5; do for m in madvise always; do run 100000 $m $p; done; done
for p in 1 2 3; do for m in madvise always; do run 1000000 $m $p; done; done
rm -rf /work/tmpf
