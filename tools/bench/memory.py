#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""memory.py: memory per key of xkvd against redis-server and any peers, side by
side, for every type and size class (issue 20's table).

For every row each server starts afresh on a free loopback port with persistence
off (xkvd with --fastpath no), INFO memory and the process's RSS are read, N keys
of the row's shape are written with pipelined commands, and both are read again:
the table gives (used_memory after - before) / N and the same for RSS. (A fresh
process per row, because no allocator gives freed pages back promptly.)
The last rows delete every other 256-byte key and write them again (300 bytes),
and give mem_fragmentation_ratio and allocator_frag_ratio (where the server
reports it), then again after -w seconds with activedefrag on (the same
active-defrag-* directives on every server; n/a where it cannot be enabled).
Servers listen on ports of $BENCH_PORTS (7450-7459).
Values are the same bytes on every server (a fixed seed).

Usage: tools/bench/memory.py [-o OUTPUT] [-n KEYS] [-p NAME=PATH ...] [-d DOC | -m] [-w S] [-r ROW]
  -o  build output directory (.output)      -n  keys per string row (200000)
  -p  a peer server by path (repeatable), e.g. -p redis8=/opt/redis-8.8/redis-server
      (also read from $PEERS: "name=path name=path")
  -d  the markdown file to write the table into (docs/benchmarks.md, section
      "Memory per key"); -m prints it only
  -w  seconds of active defragmentation after the churn (15)
  -r  only the rows whose label contains ROW
Aggregate rows scale their key count down so each row holds about 2M elements.
"""

import argparse
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time

REDIS = '/usr/bin/redis-server'


# The ports servers may take ($BENCH_PORTS "first-last"; one per server of a row).
PORTS = os.environ.get('BENCH_PORTS', '7450-7459')


def free_port():
    first, last = (int(x) for x in PORTS.split('-'))
    for port in range(first, last + 1):
        with socket.socket() as s:
            # As the servers bind: a port in TIME_WAIT is free.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(('127.0.0.1', port))
            except OSError:
                continue
            if port not in Server.taken:
                Server.taken.add(port)
                return port
    raise RuntimeError('no free port in %s' % PORTS)


def encode(args):
    out = [b'*%d\r\n' % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b'$%d\r\n%s\r\n' % (len(a), a))
    return b''.join(out)


class Conn:
    def __init__(self, port):
        for _ in range(200):
            try:
                self.sock = socket.create_connection(('127.0.0.1', port))
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise RuntimeError('no server on port %d' % port)
        self.buf = b''

    def _line(self):
        while b'\r\n' not in self.buf:
            self.buf += self.sock.recv(1 << 16)
        line, self.buf = self.buf.split(b'\r\n', 1)
        return line

    def _reply(self):
        line = self._line()
        if line[:1] == b'$':
            n = int(line[1:])
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.sock.recv(1 << 16)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if line[:1] == b'*':
            return [self._reply() for _ in range(int(line[1:]))]
        if line[:1] == b'-':
            raise RuntimeError(line.decode())
        return line[1:]

    def call(self, *args):
        self.sock.sendall(encode(args))
        return self._reply()

    def pipeline(self, commands, batch=2000):
        for i in range(0, len(commands), batch):
            chunk = commands[i:i + batch]
            self.sock.sendall(b''.join(encode(c) for c in chunk))
            for _ in chunk:
                self._reply()

    def info_memory(self):
        text = self.call('INFO', 'memory').decode()
        return dict(l.split(':', 1) for l in text.splitlines() if ':' in l)


class Server:
    taken = set()

    def __init__(self, name, path, xkvd, scratch):
        self.name, self.port = name, free_port()
        d = tempfile.mkdtemp(dir=scratch)
        if xkvd:
            argv = [path, '--port', str(self.port), '--bind', '127.0.0.1', '--fastpath', 'no',
                    '--save', '', '--dir', d]
        else:
            argv = [path, '--port', str(self.port), '--bind', '127.0.0.1', '--save', '',
                    '--appendonly', 'no', '--dir', d]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.conn = Conn(self.port)

    def rss(self):
        with open('/proc/%d/status' % self.proc.pid) as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) * 1024
        return 0

    def stop(self):
        Server.taken.discard(self.port)
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def rows(n):
    """(label, keys, command maker(i, rnd) -> list of commands for key i)."""
    def blob(rnd, size):
        return rnd.randbytes(size)

    def string(size, ttl=False):
        def make(i, rnd):
            c = ['SET', 'k:%d' % i, blob(rnd, size)]
            return [c + ['EX', 100000] if ttl else c]
        return make

    def agg(cmd, count, member, ttl=False):
        def make(i, rnd):
            key = 'k:%d' % i
            out = [['EXPIRE', key, 100000]] if ttl else []
            args = []
            for j in range(count):
                args += member(j, rnd)
                if len(args) >= 200:
                    out.append([cmd, key] + args)
                    args = []
            if args:
                out.append([cmd, key] + args)
            # EXPIRE needs the key: move it after the writes.
            return out[1:] + out[:1] if ttl else out
        return make

    def scaled(count):
        return max(10, min(n, 2000000 // count))

    return [
        ('string 8 B', n, string(8)),
        ('string 8 B + TTL', n, string(8, True)),
        ('string 64 B', n, string(64)),
        ('string 64 B + TTL', n, string(64, True)),
        ('string 256 B', n, string(256)),
        ('string 256 B + TTL', n, string(256, True)),
        ('string 4 KiB', max(10, n // 8), string(4096)),
        ('integer', n, lambda i, rnd: [['SET', 'k:%d' % i, rnd.randrange(10 ** 9)]]),
        ('integer + TTL', n,
         lambda i, rnd: [['SET', 'k:%d' % i, rnd.randrange(10 ** 9), 'EX', 100000]]),
        ('hash 10 fields', scaled(10), agg('HSET', 10, lambda j, rnd: ['f%d' % j, blob(rnd, 16)])),
        ('hash 10 fields + TTL', scaled(10),
         agg('HSET', 10, lambda j, rnd: ['f%d' % j, blob(rnd, 16)], True)),
        ('hash 1000 fields', scaled(1000),
         agg('HSET', 1000, lambda j, rnd: ['f%d' % j, blob(rnd, 16)])),
        ('set intset (10)', scaled(10), agg('SADD', 10, lambda j, rnd: [rnd.randrange(10 ** 6)])),
        ('set listpack (10)', scaled(10), agg('SADD', 10, lambda j, rnd: ['m%d' % j])),
        ('set listpack (10) + TTL', scaled(10),
         agg('SADD', 10, lambda j, rnd: ['m%d' % j], True)),
        ('set hashtable (1000)', scaled(1000), agg('SADD', 1000, lambda j, rnd: ['m%d' % j])),
        ('zset 128', scaled(128), agg('ZADD', 128, lambda j, rnd: [j, 'm%d' % j])),
        ('zset 128 + TTL', scaled(128), agg('ZADD', 128, lambda j, rnd: [j, 'm%d' % j], True)),
        ('zset 10000', scaled(10000), agg('ZADD', 10000, lambda j, rnd: [j, 'm%d' % j])),
        ('list 10', scaled(10), agg('RPUSH', 10, lambda j, rnd: [blob(rnd, 16)])),
        ('list 10 + TTL', scaled(10), agg('RPUSH', 10, lambda j, rnd: [blob(rnd, 16)], True)),
        ('list 10000', scaled(10000), agg('RPUSH', 10000, lambda j, rnd: [blob(rnd, 16)])),
    ]


def warm_up(s):
    """Streams 16 MB of ECHOs through the connection first, so that the
    receive buffers a server touches once (xkvd's io_uring ring of 4 MB) are
    resident before the first reading rather than counted per key."""
    arg = b'x' * 1024
    s.conn.pipeline([['ECHO', arg]] * 16384)


def measure(servers, label, keys, make):
    rnd = random.Random(label)
    commands = []
    for i in range(keys):
        commands += make(i, rnd)
    out = {}
    for s in servers:
        warm_up(s)
        time.sleep(0.2)
        before, rss0 = int(s.conn.info_memory()['used_memory']), s.rss()
        s.conn.pipeline(commands)
        time.sleep(0.2)
        after, rss1 = int(s.conn.info_memory()['used_memory']), s.rss()
        out[s.name] = ((after - before) / keys, (rss1 - rss0) / keys)
    return out


def churn(servers, keys, defrag_wait):
    """Fragmentation after deleting every other 256 B key and writing it again,
    then after defrag_wait seconds of active defragmentation (where the server
    has it: 'n/a' otherwise), with the same directives everywhere."""
    rnd = random.Random('churn')
    fill = [['SET', 'k:%d' % i, rnd.randbytes(256)] for i in range(keys)]
    half = [['DEL', 'k:%d' % i] for i in range(0, keys, 2)]
    again = [['SET', 'k:%d' % i, rnd.randbytes(300)] for i in range(0, keys, 2)]
    out = {}
    for s in servers:
        for batch in (fill, half, again):
            s.conn.pipeline(batch)
    time.sleep(1)
    defrag = {}
    for s in servers:
        m = s.conn.info_memory()
        out[s.name] = [m.get('mem_fragmentation_ratio', 'n/a'),
                       m.get('allocator_frag_ratio', 'n/a'), 'n/a', 'n/a']
        try:
            s.conn.call('CONFIG', 'SET', 'active-defrag-ignore-bytes', '1mb',
                        'active-defrag-threshold-lower', '5', 'active-defrag-cycle-max', '75')
            s.conn.call('CONFIG', 'SET', 'activedefrag', 'yes')
            defrag[s.name] = True
        except RuntimeError:
            pass
    if defrag:
        time.sleep(defrag_wait)
    for s in servers:
        if s.name in defrag:
            m = s.conn.info_memory()
            out[s.name][2:] = [m.get('mem_fragmentation_ratio', 'n/a'),
                               m.get('allocator_frag_ratio', 'n/a')]
    return out


def table(servers, results, frag, header):
    names = list(frag)
    lines = [header, '',
             '| row | keys | ' + ' | '.join('%s used/key' % n for n in names) + ' | ' +
             ' | '.join('%s RSS/key' % n for n in names) + ' | ' +
             ' | '.join('xkv/%s used' % n for n in names[1:]) + ' |',
             '|---|---:|' + '---:|' * (3 * len(names) - 1)]
    for label, keys, res in results:
        used = [res[n][0] for n in names]
        rss = [res[n][1] for n in names]
        ratio = ['%.2f' % (used[0] / u) if u > 0 else 'n/a' for u in used[1:]]
        lines.append('| %s | %d | %s | %s | %s |' % (
            label, keys, ' | '.join('%.0f' % u for u in used), ' | '.join('%.0f' % r for r in rss),
            ' | '.join(ratio)))
    lines += ['', '| after churn (every other 256 B key deleted, rewritten as 300 B) | ' +
              ' | '.join(names) + ' |', '|---|' + '---:|' * len(names),
              '| mem_fragmentation_ratio | ' + ' | '.join(str(frag[n][0]) for n in names) + ' |',
              '| allocator_frag_ratio | ' + ' | '.join(str(frag[n][1]) for n in names) + ' |',
              '| mem_fragmentation_ratio, activedefrag on | ' +
              ' | '.join(str(frag[n][2]) for n in names) + ' |',
              '| allocator_frag_ratio, activedefrag on | ' +
              ' | '.join(str(frag[n][3]) for n in names) + ' |']
    return '\n'.join(lines) + '\n'


def write_section(doc, text):
    title = '## Memory per key'
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
    ap.add_argument('-n', type=int, default=200000)
    ap.add_argument('-p', action='append', default=[])
    ap.add_argument('-d', default='docs/benchmarks.md')
    ap.add_argument('-m', action='store_true')
    ap.add_argument('-w', type=int, default=15, help='seconds of active defragmentation')
    ap.add_argument('-r', help='only rows whose label contains this')
    args = ap.parse_args()
    peers = args.p + os.environ.get('PEERS', '').split()
    scratch = tempfile.mkdtemp(prefix='xkv-bench-memory-')
    specs = [('xkv', os.path.join(args.o, 'xkvd'), True), ('redis7', REDIS, False)]
    specs += [tuple(p.split('=', 1)) + (False,) for p in peers]
    servers = []

    def start():
        for name, path, xkvd in specs:
            servers.append(Server(name, path, xkvd, scratch))

    def stop():
        while servers:
            servers.pop().stop()

    try:
        results = []
        for label, keys, make in rows(args.n):
            if args.r and args.r not in label:
                continue
            print('# %s (%d keys)' % (label, keys), file=sys.stderr)
            start()
            results.append((label, keys, measure(servers, label, keys, make)))
            stop()
        start()
        frag = churn(servers, args.n, args.w)
        versions = []
        for s in servers:
            info = s.conn.call('INFO', 'server').decode()
            v = None
            for field in ('xkv_version', 'valkey_version', 'redis_version'):
                v = v or re.search(field + r':(\S+)', info)
            versions.append('%s %s' % (s.name, v.group(1) if v else '?'))
        header = ('## Memory per key\n\n`tools/bench/memory.py -n %d%s` (`make bench-memory`), %s; '
                  '%s. Bytes per key: used_memory and RSS growth over the row\'s keys.'
                  % (args.n, ''.join(' -p ' + p for p in peers), time.strftime('%Y-%m-%d %H:%M'),
                     ', '.join(versions)))
        text = table(servers, results, frag, header)
        print(text)
        if not args.m:
            write_section(args.d, text)
    finally:
        stop()
        subprocess.run(['rm', '-rf', scratch])


if __name__ == '__main__':
    main()
