#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""hnswlib in process on the same data and parameters as xkv-vbench, by the
method of /work/shared/vectors/README.md section 4: space 'ip', float32,
M and ef_construction as given; built once with 1 thread and once with 2
(the 2-thread build is queried); recall@10 over all queries; queries/s with
1 and 2 Python threads, each making one single-vector knn_query(k=10) at a
time (hnswlib releases the GIL while it searches), 1 s warm-up then the
measured seconds; batch@2, one knn_query over every query with 2 threads;
memory as the RSS growth of the 1-thread build.

    tools/bench/vectors_hnswlib.py --data DIR [--M 16] [--efc 200]
        [--ef 10,20,40,80,150,300] [--seconds 5] [--json FILE]

Needs Debian's python3-hnswlib (and python3-numpy)."""

import argparse
import json
import resource
import threading
import time

import hnswlib
import numpy as np


def read_vecs(path, dtype='<f4'):
    a = np.fromfile(path, dtype='<i4')
    return np.ascontiguousarray(a.reshape(-1, int(a[0]) + 1)[:, 1:].view(dtype))


def rss():
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * 4096


def cpu():
    """CPU seconds of this process so far (every thread)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def build(base, m, efc, threads):
    idx = hnswlib.Index(space='ip', dim=base.shape[1])
    idx.init_index(max_elements=len(base), M=m, ef_construction=efc)
    idx.set_num_threads(threads)
    before, c = rss(), cpu()
    t = time.monotonic()
    idx.add_items(base, np.arange(len(base)), num_threads=threads)
    return idx, time.monotonic() - t, rss() - before, (cpu() - c) * 1e3 / len(base)


def qps(idx, query, clients, warmup, seconds):
    start = time.monotonic() + 0.05
    m_from, m_to = start + warmup, start + warmup + seconds
    done = [0] * clients
    lat = []

    def worker(c):
        i = len(query) * c // clients
        while True:
            s = time.monotonic()
            if s >= m_to:
                break
            idx.knn_query(query[i:i + 1], k=10, num_threads=1)
            e = time.monotonic()
            if s >= m_from and e <= m_to:
                done[c] += 1
                if clients == 1:
                    lat.append(e - s)
            i = (i + 1) % len(query)

    ts = [threading.Thread(target=worker, args=(c,)) for c in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    lat.sort()
    return sum(done) / seconds, (lat[len(lat) // 2] * 1000 if lat else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--data', required=True)
    ap.add_argument('--M', type=int, default=16)
    ap.add_argument('--efc', type=int, default=200)
    ap.add_argument('--ef', default='10,20,40,80,150,300')
    ap.add_argument('--clients', default='1,2')
    ap.add_argument('--warmup', type=float, default=1)
    ap.add_argument('--seconds', type=float, default=5)
    ap.add_argument('--json')
    args = ap.parse_args()
    base = read_vecs(args.data + '/base.fvecs')
    query = read_vecs(args.data + '/query.fvecs')
    gt = read_vecs(args.data + '/groundtruth.ivecs', '<i4')[:, :10]
    out = {'label': 'hnswlib %s' % getattr(hnswlib, '__version__', '0.6.2'), 'data': args.data,
           'M': args.M, 'efc': args.efc}
    idx1, t1, mem, cpu1 = build(base, args.M, args.efc, 1)
    del idx1
    idx, t2, _, cpu2 = build(base, args.M, args.efc, 2)
    out['load'] = {'vectors': len(base), 'seconds1': t1, 'rate1': len(base) / t1,
                   'seconds': t2, 'rate': len(base) / t2, 'rss_growth': mem,
                   'cpu_ms1': cpu1, 'cpu_ms': cpu2}
    print('hnswlib: built %d x %d-d in %.2f s (1 thread, %.0f/s, CPU %.3f ms per add), %.2f s '
          '(2 threads, %.0f/s, CPU %.3f ms per add), RSS +%.1f MiB' % (
              len(base), base.shape[1], t1, len(base) / t1, cpu1, t2, len(base) / t2, cpu2,
              mem / 1048576), flush=True)
    clients = [int(c) for c in args.clients.split(',')]
    out['queries'] = []
    print('%-9s %5s %9s%s %7s %9s' % ('mode', 'ef', 'recall@10',
                                      ''.join('  qps@%-5d' % c for c in clients), 'p50 ms',
                                      'batch@2'))
    for ef in [int(e) for e in args.ef.split(',')]:
        idx.set_ef(ef)
        labels, _ = idx.knn_query(query, k=10, num_threads=1)
        rec = np.mean([len(set(labels[i]) & set(gt[i])) / 10 for i in range(len(query))])
        row = {'mode': 'inprocess', 'ef': ef, 'recall': round(float(rec), 4)}
        p50 = 0
        for c in clients:
            row['qps%d' % c], p = qps(idx, query, c, args.warmup, args.seconds)
            p50 = p if c == 1 else p50
        row['p50_ms'] = p50
        t = time.monotonic()
        idx.knn_query(query, k=10, num_threads=2)
        row['batch2'] = len(query) / (time.monotonic() - t)
        out['queries'].append(row)
        print('%-9s %5d %9.4f%s %7.3f %9.0f' % ('hnswlib', ef, rec,
                                                 ''.join('  %9.0f' % row['qps%d' % c]
                                                         for c in clients),
                                                 p50, row['batch2']), flush=True)
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(out, f)


if __name__ == '__main__':
    main()
