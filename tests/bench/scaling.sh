#!/bin/bash
# Lookup scaling from 1 to 2 threads: the sharded cache against the same work behind one lock,
# and against work that shares nothing (the most 2 threads can gain on this machine right now).
# Runs the two configurations interleaved, 8 rounds, so background load hits both alike, and
# prints the median throughput ratio. Meaningful only on an otherwise idle machine.
#   tests/bench/scaling.sh [path/to/hg_cache_bench]
set -euo pipefail
B=${1:-build-bench/tests/bench/hg_cache_bench}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for _ in 1 2 3 4 5 6 7 8; do
  $B --benchmark_filter='LookupRender(OneLock)?Threads|ShareNothingThreads' --benchmark_min_time=0.3 --benchmark_format=json 2>/dev/null
done > "$out"
python3 - "$out" <<'PY'
import json,re,collections,statistics
import sys
txt=open(sys.argv[1]).read()
docs=[]; dec=json.JSONDecoder(); i=0
while i < len(txt):
    j=txt.find('{',i)
    if j<0: break
    o,i=dec.raw_decode(txt,j); docs.append(o)
ratios=collections.defaultdict(list); vals=collections.defaultdict(list)
for d in docs:
    r={b['run_name']:b for b in d['benchmarks']}
    for base in ['BM_ShareNothingThreads','BM_LookupRenderThreads','BM_LookupRenderOneLockThreads']:
        a=r[base+'/real_time/threads:1']; b=r[base+'/real_time/threads:2']
        ratios[base].append(b['items_per_second']/a['items_per_second'])
        vals[base+' 1T'].append(a['items_per_second']); vals[base+' 2T'].append(b['items_per_second'])
        vals[base+' 1T cpu'].append(a['cpu_time']); vals[base+' 2T cpu'].append(b['cpu_time'])
for k,v in ratios.items():
    print(f"{k:32s} 2-thread/1-thread throughput: median {statistics.median(v):.2f}x  (rounds: {', '.join(f'{x:.2f}' for x in v)})")
for k,v in vals.items():
    if 'cpu' in k: print(f"  {k:40s} median cpu/op {statistics.median(v):.0f} ns")
    else: print(f"  {k:40s} median {statistics.median(v)/1e6:.2f} M lookups/s")
PY
