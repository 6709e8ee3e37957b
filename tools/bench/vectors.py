#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Vector sets: xkvd against peers given by path and hnswlib in process, on
dataset A (/work/shared/vectors/kdoc-ft100) and on generated 1536-d data.

Each server (xkvd if it has VADD, each PEERS entry name=path) runs alone in
turn on one loopback port with persistence off, and tools/xkv-vbench loads
it (VADD ... NOQUANT EF 200 M 16 over 2 connections, 8 in flight each) and
queries it at every ef, with and without NOTHREAD: recall@10, queries/s at
1 and 2 connections, p50, load rate, used_memory and RSS. Then
tools/bench/vectors_hnswlib.py runs hnswlib on the same data. The summary
gives, for recall@10 >= 0.95 and >= 0.99, the lowest ef reaching it in each
engine and mode, and xkvd's ratios to the best Redis mode and to hnswlib.

Usage: tools/bench/vectors.py [-o OUTPUT] [--datasets kdoc,synth1536] [--seed 1]
          [--ef 10,20,...] [--seconds 5] [--warmup 1] [--port P] [--xkvd PATH] [--no-xkvd]
          [--no-hnswlib] [--md FILE]
PEERS comes from the environment (make bench-vectors PEERS="redis8=/path/redis-server"); a
peer whose file is named xkvd is another xkvd build, run with xkvd's options.
The 1536-d set is generated once into OUTPUT/vectors/synth1536-s<seed>
(xkv-vbench gen: 100,000 base and 1,000 queries, 100 clusters of rank 32).
--md replaces the section "## Vector sets" of FILE with the tables."""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

KDOC = '/work/shared/vectors/kdoc-ft100'


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def call(port, *args):
    """One command on a fresh connection: the first reply line."""
    with socket.create_connection(('127.0.0.1', port), timeout=30) as s:
        out = b'*%d\r\n' % len(args) + b''.join(
            b'$%d\r\n%s\r\n' % (len(a), a) for a in (x.encode() for x in args))
        s.sendall(out)
        buf = b''
        while b'\r\n' not in buf:
            d = s.recv(65536)
            if not d:
                break
            buf += d
        return buf.split(b'\r\n')[0].decode('latin-1')


class Server:
    def __init__(self, name, argv, port):
        self.name, self.argv, self.port = name, argv, port
        self.dir = tempfile.mkdtemp(prefix='xkv-vectors-%s-' % name)
        self.proc = None

    def start(self):
        argv = self.argv + ['--port', str(self.port), '--bind', '127.0.0.1', '--dir', self.dir]
        self.log = open(os.path.join(self.dir, 'server.log'), 'wb')
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        for _ in range(600):
            try:
                if call(self.port, 'PING') == '+PONG':
                    return self
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.log.close()
        tail = open(os.path.join(self.dir, 'server.log'), errors='replace').read()[-2000:]
        self.stop()
        raise RuntimeError('%s did not start: %s\n%s' % (self.name, ' '.join(argv), tail))

    def version(self):
        with socket.create_connection(('127.0.0.1', self.port)) as s:
            s.sendall(b'*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n')
            time.sleep(0.2)
            info = s.recv(1 << 16).decode('latin-1')
        for field in ('xkv_version', 'redis_version'):
            for line in info.split('\r\n'):
                if line.startswith(field + ':'):
                    return line.split(':', 1)[1]
        return '?'

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)


def dataset(name, out, seed, vbench):
    if name == 'kdoc':
        return KDOC
    if name.startswith('synth'):
        dim = int(name[5:] or 1536)
        path = os.path.join(out, 'vectors', 'synth%d-s%d' % (dim, seed))
        if not os.path.exists(os.path.join(path, 'groundtruth.ivecs')):
            print('# generating %s' % path, file=sys.stderr, flush=True)
            subprocess.run([vbench, 'gen', '--dim', str(dim), '--seed', str(seed),
                            '--out', path], check=True)
        return path
    return name


def lowest(rows, target):
    """The row of the lowest ef with recall >= target, or None."""
    ok = [r for r in rows if r['recall'] >= target]
    return min(ok, key=lambda r: r['ef']) if ok else None


def summary(ds, results):
    """Markdown for one dataset: per-engine tables and the target rows."""
    lines = []
    engines = []   # (label, mode, rows)
    for res in results:
        modes = {}
        for q in res['queries']:
            modes.setdefault(q['mode'], []).append(q)
        for mode, rows in modes.items():
            engines.append((res['label'], mode, rows, res))
    def ms(v):
        return '%.3f' % v if v is not None and v >= 0 else '—'

    lines += ['| engine | load vectors/s | load s | CPU ms per VADD | used_memory MiB | RSS MiB |',
              '|---|--:|--:|--:|--:|--:|']
    for res in results:
        ld = res.get('load', {})
        if 'used_memory' in ld:
            lines.append('| %s | %.0f | %.1f | %s | %.1f | %.1f |' % (
                res['label'], ld['rate'], ld['seconds'], ms(ld.get('cpu_ms')),
                ld['used_memory'] / 1048576, ld['rss'] / 1048576))
        else:
            lines.append('| %s | %.0f (2 threads; %.0f with 1) | %.1f | %s (%s with 1) | — | '
                         '+%.1f (growth) |' % (
                             res['label'], ld['rate'], ld['rate1'], ld['seconds'],
                             ms(ld.get('cpu_ms')), ms(ld.get('cpu_ms1')),
                             ld['rss_growth'] / 1048576))
    lines.append('')
    lines += ['| engine | mode | ef | recall@10 | qps@1 | qps@2 | p50 ms | CPU ms/query @1 | @2 |',
              '|---|---|--:|--:|--:|--:|--:|--:|--:|']
    for label, mode, rows, _ in engines:
        for r in rows:
            lines.append('| %s | %s | %d | %.4f | %.0f | %.0f | %.3f | %s | %s |' % (
                label, mode, r['ef'], r['recall'], r['qps1'], r['qps2'], r['p50_ms'],
                ms(r.get('cpu1_ms')), ms(r.get('cpu2_ms'))))
    lines.append('')
    lines += ['| recall@10 target | engine | mode | ef | recall@10 | qps@1 | qps@2 |',
              '|---|---|---|--:|--:|--:|--:|']
    best = {}
    for target in (0.95, 0.99):
        for label, mode, rows, _ in engines:
            r = lowest(rows, target)
            if r:
                lines.append('| ≥ %.2f | %s | %s | %d | %.4f | %.0f | %.0f |' % (
                    target, label, mode, r['ef'], r['recall'], r['qps1'], r['qps2']))
                best[(target, label, mode)] = r
    lines.append('')
    xk = [e for e in engines if e[0].startswith('xkvd')]
    peers = [e for e in engines if not e[0].startswith('xkvd') and e[1] != 'inprocess']
    hn = [e for e in engines if e[1] == 'inprocess']
    if xk:
        lines += ['| ratio (xkvd best mode) | target | qps@1 | qps@2 |', '|---|---|--:|--:|']
        for target in (0.95, 0.99):
            mine = [best.get((target, e[0], e[1])) for e in xk]
            mine = [m for m in mine if m]
            if not mine:
                continue
            for group, name in ((peers, 'best Redis mode'), (hn, 'hnswlib')):
                theirs = [best.get((target, e[0], e[1])) for e in group]
                theirs = [t for t in theirs if t]
                if not theirs:
                    continue
                lines.append('| xkvd / %s | ≥ %.2f | %.2f× | %.2f× |' % (
                    name, target, max(m['qps1'] for m in mine) / max(t['qps1'] for t in theirs),
                    max(m['qps2'] for m in mine) / max(t['qps2'] for t in theirs)))
        mine = next((r for r in results if r['label'].startswith('xkvd')), None)
        for other in results:
            if other is mine or 'load' not in other or not mine or 'load' not in mine:
                continue
            ml, ol = mine['load'], other['load']
            row = '| xkvd / %s | load rate %.2f×' % (other['label'], ml['rate'] / ol['rate'])
            if ml.get('cpu_ms', -1) > 0 and ol.get('cpu_ms', -1) > 0:
                row += ', CPU per insert %.2f×' % (ml['cpu_ms'] / ol['cpu_ms'])
            if 'used_memory' in ol:
                row += ', used_memory %.2f×' % (ml['used_memory'] / ol['used_memory'])
            lines.append(row + ' | | |')
        lines.append('')
    return '\n'.join(lines)


def write_section(doc, text):
    title = '## Vector sets'
    body = open(doc).read() if os.path.exists(doc) else ''
    if title in body:
        start = body.index(title)
        nxt = body.find('\n## ', start + len(title))
        body = body[:start] + text + (body[nxt + 1:] if nxt >= 0 else '')
    else:
        body = body.rstrip('\n') + '\n\n' + text
    with open(doc, 'w') as f:
        f.write(body)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('-o', default='.output')
    ap.add_argument('--datasets', default='kdoc,synth1536')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--ef', default='10,20,40,80,150,300')
    ap.add_argument('--seconds', default='5')
    ap.add_argument('--warmup', default='1')
    ap.add_argument('--conns', default='2')
    ap.add_argument('--port', type=int, default=0, help='first port (default: a free one)')
    ap.add_argument('--xkvd', help='the xkvd to measure (default OUTPUT/xkvd)')
    ap.add_argument('--no-xkvd', action='store_true')
    ap.add_argument('--no-hnswlib', action='store_true')
    ap.add_argument('--md')
    args = ap.parse_args()
    vbench = os.path.join(args.o, 'xkv-vbench')
    port = args.port or free_port()  # servers use port, port + 1, ...
    specs = []
    if not args.no_xkvd:
        specs.append(('xkvd', [args.xkvd or os.path.join(args.o, 'xkvd'), '--fastpath', 'no',
                               '--save', '']))
    for p in os.environ.get('PEERS', '').split():
        name, path = p.split('=', 1)
        if os.path.basename(path) == 'xkvd':
            # another xkvd build (an A/B), run with xkvd's options
            specs.append((name, [path, '--fastpath', 'no', '--save', '']))
        else:
            specs.append((name, [path, '--save', '', '--appendonly', 'no']))
    scratch = tempfile.mkdtemp(prefix='xkv-vectors-')
    load = os.getloadavg()[0]
    sections, versions = [], {}
    try:
        for dsname in args.datasets.split(','):
            data = dataset(dsname, args.o, args.seed, vbench)
            results = []
            for i, (name, argv) in enumerate(specs):
                # A port of its own: a server's socket may close a little after
                # its process has exited (io_uring releases files lazily).
                srv = Server(name, argv, port + i).start()
                try:
                    if call(srv.port, 'VADD').startswith('-ERR unknown command'):
                        print('# %s has no VADD: skipped' % name, file=sys.stderr)
                        continue
                    versions[name] = srv.version()
                    js = os.path.join(scratch, '%s-%s.json' % (dsname, name))
                    print('# %s on %s' % (name, data), file=sys.stderr, flush=True)
                    subprocess.run([vbench, 'run', '--data', data, '-p', str(srv.port),
                                    '--label', name, '--ef', args.ef, '--seconds', args.seconds,
                                    '--warmup', args.warmup, '-c', args.conns,
                                    '--nothread', 'both', '--json', js,
                                    '--server-pid', str(srv.proc.pid)], check=True)
                    results.append(json.load(open(js)))
                finally:
                    srv.stop()
            if not args.no_hnswlib:
                js = os.path.join(scratch, '%s-hnswlib.json' % dsname)
                subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__),
                                                             'vectors_hnswlib.py'),
                                '--data', data, '--ef', args.ef, '--seconds', args.seconds,
                                '--warmup', args.warmup, '--json', js], check=True)
                results.append(json.load(open(js)))
            meta = {}
            try:
                meta = json.load(open(os.path.join(data, 'meta.json')))
            except OSError:
                pass
            sections.append('### %s (%s × %s-d)\n\n%s' % (
                dsname, meta.get('n_base', '?'), meta.get('dim', '?'), summary(dsname, results)))
        head = ('## Vector sets\n\n`PEERS="%s" tools/bench/vectors.py --datasets %s --seed %d '
                '--ef %s --seconds %s` (`make bench-vectors`), %s; %d CPUs, load %.2f at start; '
                'servers: %s. Every server loads `VADD vbench FP32 <blob> <row> NOQUANT EF 200 '
                'M 16` over %s connections (8 in flight each) and answers `VSIM vbench FP32 '
                '<blob> COUNT 10 EF <ef>` (mode nothread adds `NOTHREAD`) from '
                'tools/xkv-vbench, a C client with one request in flight per connection; '
                'hnswlib runs in process (docs/vectors.md, "Benchmarks"). CPU columns: the '
                'server process\'s user + system time (/proc/PID/stat) per request over the '
                'phase (warm-up included), hnswlib\'s own process time per add.\n' % (
                    os.environ.get('PEERS', ''), args.datasets, args.seed, args.ef,
                    args.seconds, time.strftime('%Y-%m-%d %H:%M'), os.cpu_count(), load,
                    ', '.join('%s %s' % kv for kv in versions.items()), args.conns))
        text = head + '\n' + '\n'.join(sections)
        print(text)
        if args.md:
            write_section(args.md, text)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == '__main__':
    main()
