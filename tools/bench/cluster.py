#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Three xkvd cluster nodes against three nodes of each peer (issue 17).

Each server kind (xkvd, Debian's redis-server, and each PEERS entry
name=path) runs as a 3-primary cluster made by `redis-cli --cluster create`,
every node pinned to CPU 0 (xkvd --threads 1) and the client to CPU 1, so the
aggregate is the work one core does for the whole cluster, the same way for
every kind. The client is Debian's redis-benchmark in --cluster mode (it
routes each key to its node); memtier_benchmark --cluster-mode is used when
installed (it is not packaged in Debian). 100k keys of 256 B are written
first; then GET and SET at pipeline 1 and 16 over 50 connections, ROUNDS
rounds with the order of the kinds reversed each round. Beside each median
rate: the CPU time of the three nodes per request (/proc/PID/stat, user +
system, all threads).

Usage: [PEERS="redis8=/path/redis-server ..."] tools/bench/cluster.py
           [-o OUTPUT] [-n REQUESTS] [-r ROUNDS] [--ports LO-HI] [--md FILE]"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (Server, free_port, cpu_seconds)

KEYS = 100000
ROWS = (('get', 1), ('get', 16), ('set', 1), ('set', 16))


class Cluster:
    """Three primaries of one server kind, every slot assigned."""

    def __init__(self, name, argv):
        self.name, self.argv, self.nodes = name, argv, []

    def start(self):
        for _ in range(3):
            bus = peers.free_port()
            node = peers.Server(self.name, self.argv + ['--cluster-enabled', 'yes',
                                                        '--cluster-port', str(bus)],
                                'cluster')
            self.nodes.append(node.start(0))
        addrs = ['127.0.0.1:%d' % n.port for n in self.nodes]
        p = subprocess.run(['redis-cli', '--cluster', 'create'] + addrs + ['--cluster-yes'],
                           capture_output=True, text=True, timeout=120)
        if p.returncode:
            raise RuntimeError('%s: cluster create failed: %s' % (self.name, p.stdout[-500:]))
        for _ in range(600):
            if all('cluster_state:ok' in n.cli('CLUSTER', 'INFO') for n in self.nodes):
                return self
            time.sleep(0.1)
        raise RuntimeError('%s: cluster_state never ok' % self.name)

    def cpu(self):
        return sum(peers.cpu_seconds(n.proc.pid) for n in self.nodes)

    def stop(self):
        for n in self.nodes:
            n.stop()


def bench(cluster, command, pipeline, requests):
    """(requests/s, ns of the nodes' CPU per request) of one redis-benchmark run."""
    argv = ['taskset', '-c', '1', 'redis-benchmark', '--cluster', '-p',
            str(cluster.nodes[0].port), '-t', command, '-n', str(requests), '-r', str(KEYS),
            '-d', '256', '-c', '50', '-P', str(pipeline), '--threads', '1', '--csv']
    c0 = cluster.cpu()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    dc = cluster.cpu() - c0
    m = re.search(r'^"%s","([0-9.]+)"' % command.upper(), p.stdout, re.M)
    if not m:
        print('cluster.py: %s %s P%d: no rate: %s' % (cluster.name, command, pipeline,
                                                      (p.stdout + p.stderr)[-300:]),
              file=sys.stderr)
        return 0.0, 0.0
    return float(m.group(1)), dc * 1e9 / requests


def kinds(output):
    out = [('xkvd', [os.path.join(output, 'xkvd'), '--fastpath', 'no', '--save', '',
                     '--appendonly', 'no', '--threads', '1'])]
    debian = shutil.which('redis-server')
    if debian:
        out.append(('redis7', [debian, '--save', '', '--appendonly', 'no']))
    for entry in os.environ.get('PEERS', '').split():
        name, _, path = entry.partition('=')
        out.append((name, [path, '--save', '', '--appendonly', 'no']))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('-o', '--output', default='.output')
    ap.add_argument('-n', '--requests', type=int, default=1000000)
    ap.add_argument('-r', '--rounds', type=int, default=3)
    ap.add_argument('--ports', help='LO-HI: the ports servers take in turn')
    ap.add_argument('--md', help='append the table to this file')
    args = ap.parse_args()
    if args.ports:
        lo, hi = (int(x) for x in args.ports.split('-'))
        peers.PORT_RANGE[:] = list(range(lo, hi + 1))
    servers = kinds(args.output)
    results = {(s, r): [] for s, _ in servers for r in ROWS}
    load0 = os.getloadavg()[0]
    for rnd in range(args.rounds):
        order = servers if rnd % 2 == 0 else servers[::-1]
        for name, argv in order:
            cl = Cluster(name, argv)
            try:
                cl.start()
                # The keys GET reads: every key of the range, 256 B.
                bench(cl, 'set', 16, KEYS * 3)
                for row in ROWS:
                    results[(name, row)].append(bench(cl, row[0], row[1], args.requests))
            finally:
                cl.stop()
    load1 = os.getloadavg()[0]
    names = [s for s, _ in servers]
    lines = ['3-node clusters, nodes pinned to CPU 0, redis-benchmark --cluster on CPU 1, '
             '50 connections, 256 B values, %d rounds of %d requests; load average %.1f '
             'at the start, %.1f at the end' % (args.rounds, args.requests, load0, load1), '',
             '| row | P | ' + ' | '.join(names) + ' | xkvd / best peer |',
             '|---|---:|' + '---:|' * (len(names) + 1)]
    for row in ROWS:
        cells, rates = [], {}
        for n in names:
            runs = results[(n, row)]
            rate = statistics.median(r for r, _ in runs)
            ns = statistics.median(c for _, c in runs)
            rates[n] = rate
            cells.append('%dk / %d ns' % (round(rate / 1000), ns))
        best = max((rates[n] for n in names if n != 'xkvd'), default=0)
        ratio = '%.2f' % (rates['xkvd'] / best) if best else 'n/a'
        lines.append('| %s | %d | %s | %s |' % (row[0], row[1], ' | '.join(cells), ratio))
    text = '\n'.join(lines)
    print(text)
    if args.md:
        with open(args.md, 'a') as f:
            f.write('\n' + text + '\n')


if __name__ == '__main__':
    main()
