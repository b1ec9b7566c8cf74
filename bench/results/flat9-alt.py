#!/usr/bin/env python3
"""flat9-alt.py SRC NEW PAIRS BIN_A BIN_B: alternating pairs as bench/main.go
times a reshard: before each run the work copy is removed and SRC copied
again (cp -a, not timed), then `BIN reshard WORK NEW --json` runs, its
CPU (user + system) from wait4's rusage (microseconds). Prints each run,
medians, ranges and the pair ratios A/B. ALT_SETTLE=S: after each copy,
sync and wait S seconds (not timed; bench/results/flat9.md, "The file
system"). ALT_WORK: where the copy goes (default /tmp/flat9-alt-work)."""
import subprocess, sys, statistics, os, time
src, new, pairs, a, b = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
work = os.environ.get('ALT_WORK', '/tmp/flat9-alt-work')  # the copy resharded
def load(): return open('/proc/loadavg').read().split()[0]
def one(binp):
    subprocess.run(['rm', '-rf', work], check=True)
    subprocess.run(['cp', '-a', src, work], check=True)
    if os.environ.get('ALT_SETTLE'):  # write back the inode tables, then wait out ext4's 5 s "recently deleted" window
        subprocess.run(['sync'], check=True); time.sleep(float(os.environ['ALT_SETTLE']))
    p = subprocess.Popen([binp, 'reshard', work, new, '--json'], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    t = time.monotonic()
    _, status, ru = os.wait4(p.pid, 0)
    w = time.monotonic() - t
    err = p.stderr.read().decode(); p.stderr.close()
    if status != 0: sys.exit(err)
    return dict(wall=w, cpu=ru.ru_utime+ru.ru_stime, user=ru.ru_utime, sys=ru.ru_stime, rss=ru.ru_maxrss/1024, minfl=ru.ru_minflt)
res = {'A': [], 'B': []}
l0 = load(); t0 = time.strftime('%H:%M:%S', time.gmtime())
one(a); one(b)  # warm-up, not counted
for i in range(pairs):
    order = [('A', a), ('B', b)] if i % 2 == 0 else [('B', b), ('A', a)]
    for k, binp in order:
        s = one(binp); res[k].append(s)
        print(f"pair {i+1} {k} cpu {s['cpu']:.4f} (user {s['user']:.2f} sys {s['sys']:.2f}) wall {s['wall']:.2f} rss {s['rss']:.0f} MiB minfl {s['minfl']}", flush=True)
l1 = load(); t1 = time.strftime('%H:%M:%S', time.gmtime())
for k in 'AB':
    c = [s['cpu'] for s in res[k]]
    print(f"{k} cpu median {statistics.median(c):.3f} range {min(c):.3f}-{max(c):.3f}; wall median {statistics.median([s['wall'] for s in res[k]]):.3f}; minfl median {statistics.median([s['minfl'] for s in res[k]]):.0f}")
rat = [x['cpu']/y['cpu'] for x, y in zip(res['A'], res['B'])]
print(f"A/B cpu by pair: {' '.join(f'{r:.3f}' for r in rat)}; median {statistics.median(rat):.3f}")
print(f"{t0}-{t1} UTC, load {l0} -> {l1}; A={a} B={b} src={src} new={new}")
