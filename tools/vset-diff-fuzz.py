#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A differential fuzzer for vector sets over the protocol: random VADD, VREM,
VSIM (TRUTH, FILTER), VEMB, VCARD, VDIM, VISMEMBER, VGETATTR, VSETATTR,
VINFO and VLINKS on small sets, sent to xkvd and to a live Redis 8.8, and
the deterministic part of every pair of replies compared.

    tools/vset-diff-fuzz.py --redis /path/to/redis-server [--xkvd .output/xkvd]
        [--steps 20000] [--seed 1] [--port 7440]

Both servers are started here (ports port and port + 1, persistence off,
each in a scratch directory) and stopped at the end; the script never
builds one. What is compared, given that the graph's levels are random:
  - errors (the whole error line) and the reply's RESP type, for every step;
  - VADD, VREM, VCARD, VDIM, VISMEMBER, VGETATTR, VSETATTR: the exact bytes;
  - VEMB of NOQUANT sets: the exact bytes; of Q8/BIN sets: the element count;
  - VSIM with COUNT beyond the set's size (25 names at most), with or
    without TRUTH and FILTER: the set of names (all of them, so the graph's
    shape does not matter as long as every node is reachable), and
    the scores when WITHSCORES (to 1e-5: Q8 and BIN scores are exact, FP32
    may differ in the last bit between SIMD builds);
  - VINFO: the fields other than max-level, vset-uid and the node-id
    counter; VLINKS: only nil/error/array.
Vectors are drawn from a small integer grid, so ties in distance exist;
comparing name sets rather than orders keeps those deterministic.
Exit status 1 on the first difference, printed with the step that made it.
"""

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def enc(args):
    out = [b'*%d\r\n' % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b'$%d\r\n%s\r\n' % (len(a), a))
    return b''.join(out)


class Conn:
    """A RESP2 client returning parsed replies: bytes, int, None, list, or
    an Err."""

    def __init__(self, port):
        self.s = socket.create_connection(('127.0.0.1', port), timeout=30)
        self.buf = b''

    def _line(self):
        while b'\r\n' not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise EOFError('server closed the connection')
            self.buf += d
        line, self.buf = self.buf.split(b'\r\n', 1)
        return line

    def _bytes(self, n):
        while len(self.buf) < n + 2:
            d = self.s.recv(65536)
            if not d:
                raise EOFError('server closed the connection')
            self.buf += d
        out, self.buf = self.buf[:n], self.buf[n + 2:]
        return out

    def read(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b'+':
            return rest
        if t == b'-':
            return Err(rest.decode('latin-1'))
        if t == b':':
            return int(rest)
        if t == b'$':
            n = int(rest)
            return None if n < 0 else self._bytes(n)
        if t == b'*':
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise ValueError('bad reply line %r' % line)

    def call(self, *args):
        self.s.sendall(enc(args))
        return self.read()


class Err(str):
    pass


def start(argv, port):
    d = tempfile.mkdtemp(prefix='vset-diff-')
    log = open(os.path.join(d, 'log'), 'wb')
    p = subprocess.Popen(argv + ['--port', str(port), '--dir', d], cwd=d, stdout=log,
                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    for _ in range(200):
        try:
            c = Conn(port)
            if c.call('PING') == b'PONG':
                return p, d, c
        except OSError:
            pass
        if p.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError('%s did not start (log in %s)' % (argv[0], d))


def kind(r):
    return ('err' if isinstance(r, Err) else 'nil' if r is None else
            'int' if isinstance(r, int) else 'array' if isinstance(r, list) else 'bulk')


class Gen:
    """Random steps over a few keys whose first VADD fixes dim and quant."""

    KEYS = [b'v0', b'v1', b'v2']
    QUANTS = ['NOQUANT', 'Q8', 'BIN']

    def __init__(self, rnd):
        self.r = rnd
        self.shape = {}  # key -> (dim, quant) while it exists

    def vec(self, dim):
        v = [self.r.randint(-4, 4) for _ in range(dim)]
        if self.r.random() < 0.02:
            v = [0] * dim  # a zero vector
        return v

    def name(self):
        return b'e%d' % self.r.randint(0, 24)

    def attr(self):
        c = self.r.random()
        if c < 0.1:
            return b''
        if c < 0.15:
            return b'not json'
        return json.dumps({'n': self.r.randint(0, 9), 'tag': self.r.choice('abc'),
                           'ok': self.r.random() < 0.5}).encode()

    def filt(self):
        return self.r.choice([b'.n > 4', b'.n <= 2 or .tag == "a"', b'.ok', b'!.ok and .n != 3',
                              b'.tag in ["a", "b"]', b'.missing', b'(.n + 1) % 3 == 0',
                              b'.n >', b'.n == "4"'])

    def step(self):
        key = self.r.choice(self.KEYS)
        dim, quant = self.shape.get(key, (self.r.randint(2, 8), self.r.choice(self.QUANTS)))
        op = self.r.choices(['vadd', 'vrem', 'vsim', 'vemb', 'vcard', 'vdim', 'vismember',
                             'vgetattr', 'vsetattr', 'vinfo', 'vlinks', 'bad'],
                            [30, 6, 16, 6, 3, 2, 4, 4, 4, 2, 2, 3])[0]
        el = self.name()
        if op == 'vadd':
            d = dim if self.r.random() > 0.05 else dim + 1  # a mismatch now and then
            args = [b'VADD', key, b'VALUES', d] + self.vec(d) + [el]
            q = quant if self.r.random() > 0.03 else self.r.choice(self.QUANTS)
            if q != 'Q8' or self.r.random() < 0.5:
                args.append(q.encode())
            if self.r.random() < 0.4:
                args += [b'SETATTR', self.attr()]
            if self.r.random() < 0.1:
                args += [b'EF', self.r.randint(1, 50)]
            return key, (d, q), args
        if op == 'vrem':
            return key, None, [b'VREM', key, el]
        if op == 'vsim':
            args = [b'VSIM', key]
            if self.r.random() < 0.5:
                args += [b'ELE', el]
            else:
                args += [b'VALUES', dim] + self.vec(dim)
            # COUNT and the default EF (100) exceed the 25 names: with or
            # without TRUTH the answer is the whole (filtered) set, which
            # without TRUTH checks that every node is reachable.
            args += [b'COUNT', 100]
            if self.r.random() < 0.5:
                args.append(b'TRUTH')
            if self.r.random() < 0.5:
                args.append(b'WITHSCORES')
            if self.r.random() < 0.5:
                args += [b'FILTER', self.filt()]
            return key, None, args
        if op == 'vemb':
            return key, None, [b'VEMB', key, el]
        if op == 'vcard':
            return key, None, [b'VCARD', key]
        if op == 'vdim':
            return key, None, [b'VDIM', key]
        if op == 'vismember':
            return key, None, [b'VISMEMBER', key, el]
        if op == 'vgetattr':
            return key, None, [b'VGETATTR', key, el]
        if op == 'vsetattr':
            return key, None, [b'VSETATTR', key, el, self.attr()]
        if op == 'vinfo':
            return key, None, [b'VINFO', key]
        if op == 'vlinks':
            return key, None, [b'VLINKS', key, el]
        return key, None, self.r.choice([
            [b'VADD', key, b'VALUES', 0, el],
            [b'VADD', key, b'VALUES', 2, b'1', b'x', el],
            [b'VADD', key, b'FP32', b'abc', el],
            [b'VADD', key, b'VALUES', dim] + self.vec(dim) + [el, b'M', 2],
            [b'VSIM', key, b'VALUES', dim] + self.vec(dim) + [b'COUNT', 0],
            [b'VSIM', key, b'ELE', el, b'EF', -1],
            [b'VSIM', key, b'ELE', el, b'FILTER', b'.n >> 2'],
            [b'VCARD'],
            [b'VEMB', key],
        ])


def scores(reply):
    """WITHSCORES pairs as {name: score}."""
    return {reply[i]: float(reply[i + 1]) for i in range(0, len(reply), 2)}


def same(args, a, b, quant):
    """None if replies a (xkvd) and b (Redis) agree on what is deterministic,
    else a reason."""
    if kind(a) != kind(b):
        return 'reply types differ'
    if isinstance(a, Err):
        return None if a == b else 'errors differ'
    cmd = args[0].upper()
    if cmd == b'VSIM' and isinstance(a, list):
        if b'WITHSCORES' in args:
            sa, sb = scores(a), scores(b)
            if set(sa) != set(sb):
                return 'result sets differ'
            bad = [n for n in sa if abs(sa[n] - sb[n]) > 1e-5]
            return 'scores differ for %r' % bad if bad else None
        return None if sorted(a) == sorted(b) else 'result sets differ'
    if cmd == b'VEMB' and isinstance(a, list) and quant != 'NOQUANT':
        return None if len(a) == len(b) else 'lengths differ'
    if cmd == b'VINFO' and isinstance(a, list):
        skip = {b'max-level', b'vset-uid', b'hnsw-max-node-uid'}
        fa = {a[i]: a[i + 1] for i in range(0, len(a), 2) if a[i] not in skip}
        fb = {b[i]: b[i + 1] for i in range(0, len(b), 2) if b[i] not in skip}
        return None if fa == fb else 'fields differ'
    if cmd == b'VLINKS':
        return None
    return None if a == b else 'replies differ'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--redis', required=True, help='a Redis 8.8 redis-server')
    ap.add_argument('--xkvd', default='.output/xkvd')
    ap.add_argument('--steps', type=int, default=20000)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--port', type=int, default=7440)
    args = ap.parse_args()
    procs = []
    try:
        xp, xd, x = start([os.path.abspath(args.xkvd), '--fastpath', 'no', '--save', '',
                           '--bind', '127.0.0.1'], args.port)
        procs.append((xp, xd))
        rp, rd, r = start([args.redis, '--save', '', '--appendonly', 'no', '--bind',
                           '127.0.0.1'], args.port + 1)
        procs.append((rp, rd))
        g = Gen(random.Random(args.seed))
        counts, errors, nonempty = {}, 0, 0
        x.call('SET', 'str', 'x')
        r.call('SET', 'str', 'x')
        for i in range(args.steps):
            key, shape, cmd = g.step()
            if g.r.random() < 0.01:
                cmd = [cmd[0], b'str'] + cmd[2:]  # WRONGTYPE
            a, b = x.call(*cmd), r.call(*cmd)
            why = same(cmd, a, b, g.shape.get(key, (0, 'NOQUANT'))[1])
            counts[cmd[0]] = counts.get(cmd[0], 0) + 1
            errors += isinstance(b, Err)
            nonempty += cmd[0] == b'VSIM' and bool(b) and not isinstance(b, Err)
            if why:
                print('step %d: %s\n  %r\n  xkvd:  %r\n  redis: %r' % (i, why, cmd, a, b))
                return 1
            # Track each key's shape as Redis has it (created, or gone).
            if cmd[0] == b'VADD' and b == 1 and key not in g.shape and shape:
                g.shape[key] = shape
            if r.call('EXISTS', key) == 0:
                g.shape.pop(key, None)
        print('%d steps, seed %d, no difference (%d errors, %d non-empty VSIM results): %s' % (
            args.steps, args.seed, errors, nonempty,
            ', '.join('%s %d' % (k.decode(), v) for k, v in sorted(counts.items()))))
        return 0
    finally:
        for p, d in procs:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
            shutil.rmtree(d, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
