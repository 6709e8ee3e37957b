#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Records Redis 8.8's replies to deterministic vector-set cases as
tests/integration/data/vset-redis-8.8.json, which
tests/integration/test_vset.py replays against xkvd.

    tools/record-vset-redis.py --redis /path/to/redis-server [--port 7420] \
        > tests/integration/data/vset-redis-8.8.json

Every step is [group, proto, kind, args, reply], args and reply as latin-1
strings (blobs survive JSON), reply the exact RESP bytes. The kind says how
much of the reply is deterministic, since the HNSW graph's levels come from
a random generator seeded at start:
  exact    the bytes;
  sorted   an array whose order is free (VRANDMEMBER of the whole set);
  count    an array of that many elements, each one of the key's members;
  member   one bulk string, one of the members;
  vinfo    VINFO without its max-level and vset-uid values;
  pairs    a WITHSCORES array whose (element, score) pairs may come in any
           order (equal scores);
  vlinks   VLINKS's layer 0 as a set (upper layers are random).
Sets are small and their vectors well apart, so that every search is exact
and no two scores tie.
"""

import argparse
import json
import math
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

SERVER = None


def fp32(*v):
    return struct.pack('<%df' % len(v), *v).decode('latin-1')


def enc(args):
    out = [b'*%d\r\n' % len(args)]
    for a in args:
        a = a.encode('latin-1') if isinstance(a, str) else str(a).encode()
        out.append(b'$%d\r\n%s\r\n' % (len(a), a))
    return b''.join(out)


class Raw:
    """A RESP client that returns each reply's exact bytes."""

    def __init__(self, port):
        self.s = socket.create_connection(('127.0.0.1', port), timeout=10)
        self.buf = b''

    def _need(self, n):
        while len(self.buf) < n:
            d = self.s.recv(1 << 20)
            if not d:
                raise EOFError
            self.buf += d

    def _line(self, i):
        while True:
            j = self.buf.find(b'\r\n', i)
            if j >= 0:
                return j
            self._need(len(self.buf) + 1)

    def _skip(self, i):
        j = self._line(i)
        t, head = self.buf[i:i + 1], self.buf[i + 1:j]
        if t in b'+-:_,#(':
            return j + 2
        if t in b'$!=':
            n = int(head)
            if n < 0:
                return j + 2
            self._need(j + 2 + n + 2)
            return j + 2 + n + 2
        n = int(head)
        k = j + 2
        count = n * 2 if t in b'%|' else n
        for _ in range(max(count, 0)):
            k = self._skip(k)
        return self._skip(k) if t == b'|' else k

    def cmd(self, *args):
        self.s.sendall(enc(args))
        end = self._skip(0)
        r, self.buf = self.buf[:end], self.buf[end:]
        return r


def vec3(deg, z=0.0):
    a = math.radians(deg)
    return ['%.6f' % math.cos(a), '%.6f' % math.sin(a), '%.6f' % z]


def cases():
    """(group, kind, args) in order; '#3' in a group switches to RESP3."""
    out = []

    def add(group, *args, kind='exact'):
        out.append((group, kind, [str(a) if not isinstance(a, str) else a for a in args]))

    g = 'vadd'
    add(g, 'VADD', 's', 'VALUES', 3, *vec3(0), 'a')
    add(g, 'VADD', 's', 'VALUES', 3, *vec3(0), 'a')
    add(g, 'VADD', 's', 'VALUES', 3, *vec3(40, 0.1), 'b', 'SETATTR', '{"year": 1984, "g": "x"}')
    add(g, 'VADD', 's', 'VALUES', 3, *vec3(100, 0.3), 'c', 'SETATTR', '{"year": 1950}')
    add(g, 'VADD', 's', 'VALUES', 3, *vec3(170, -0.2), 'd', 'EF', 50)
    add(g, 'VADD', 's', 'VALUES', 3, *vec3(250, 0.5), 'e', 'CAS')
    add(g, 'VADD', 's', 'VALUES', 3, *vec3(300, -0.4), 'f', 'Q8', 'SETATTR', '{"year": 2024}')
    add(g, 'VADD', 's', 'FP32', fp32(0.2, -0.9, 0.1), 'g')
    add(g, 'VCARD', 's')
    add(g, 'VDIM', 's')
    add(g, 'TYPE', 's')
    add(g, 'EXISTS', 's')
    # the element already there: attributes updated, reply 0
    add(g, 'VADD', 's', 'VALUES', 3, *vec3(0), 'a', 'SETATTR', '{"year": 2000}')
    add(g, 'VGETATTR', 's', 'a')
    add(g, 'VADD', 'n', 'VALUES', 2, 3, 4, 'x', 'NOQUANT')
    add(g, 'VADD', 'n', 'VALUES', 2, -1, 0.5, 'y', 'NOQUANT', 'M', 4, 'EF', 1)
    add(g, 'VADD', 'n', 'VALUES', 2, 1, 1, 'z', 'Q8')
    add(g, 'VADD', 'n', 'VALUES', 2, 1, 1, 'z', 'BIN')
    add(g, 'VADD', 'n', 'VALUES', 2, 1, 1, 'z')
    add(g, 'VADD', 'n', 'VALUES', 2, 1, 1, 'z', 'NOQUANT', 'NOQUANT')
    add(g, 'VADD', 'bq', 'VALUES', 4, 1, -1, 1, -1, 'p', 'BIN')
    add(g, 'VADD', 'bq', 'VALUES', 4, -1, -1, 1, 1, 'q', 'BIN')
    add(g, 'VADD', 'bq', 'VALUES', 4, 1, 1, 1, 1, 'r', 'NOQUANT')
    add(g, 'VADD', 'rd', 'REDUCE', 2, 'VALUES', 4, 1, 2, 3, 4, 'a')
    add(g, 'VDIM', 'rd')
    add(g, 'VADD', 'rd', 'VALUES', 4, 1, 2, 3, 5, 'b')
    add(g, 'VADD', 'rd', 'VALUES', 2, 1, 2, 'c')
    add(g, 'VADD', 'rd', 'REDUCE', 3, 'VALUES', 4, 1, 2, 3, 5, 'b')
    add(g, 'VADD', 'nq', 'VALUES', 3, *vec3(33, 0.7), 'a', 'NOQUANT')
    add(g, 'VADD', 'nq', 'VALUES', 3, '0.1', '0.2', '0.3', 'b', 'NOQUANT')
    add(g, 'VADD', 'nq', 'VALUES', 3, '1e-3', '-12345.678', '3.4e10', 'c', 'NOQUANT')
    add(g, 'VADD', 'm', 'VALUES', 2, 1, 0, 'a', 'M', 64)
    add(g, 'VADD', 'm', 'VALUES', 2, 0, 1, 'b', 'M', 32)

    g = 'vadd-errors'
    add(g, 'VADD', 's', 'VALUES', 2, 1, 0, 'zz')
    add(g, 'VADD', 's', 'VALUES', 4, 1, 0, 0, 0, 'zz')
    add(g, 'VADD', 's', 'FP32', fp32(1, 0), 'zz')
    add(g, 'VADD', 's', 'FP32', fp32(1, 0, 0)[:11], 'zz')
    add(g, 'VADD', 's', 'FP32', '', 'zz')
    add(g, 'VADD', 'e0', 'FP32', fp32(1, 0, 0) + 'x', 'zz')
    add(g, 'VADD', 'e1', 'VALUES', 3, 'nan', 0, 1, 'zz')
    add(g, 'VADD', 'e1', 'VALUES', 3, 'inf', 0, 1, 'zz')
    add(g, 'VADD', 'e2', 'VALUES', 3, '-inf', 0, 1, 'zz')
    add(g, 'VADD', 'e3', 'VALUES', 3, '1e39', 0, 1, 'zz')
    add(g, 'VADD', 'e4', 'VALUES', 3, '1e-50', 0, 1, 'zz')
    add(g, 'VEMB', 'e4', 'zz')
    add(g, 'VADD', 'e5', 'FP32', struct.pack('<3f', float('inf'), 0, 1).decode('latin-1'), 'zz')
    add(g, 'VADD', 'e6', 'VALUES', 3, 0, 0, 0, 'zero')
    add(g, 'EXISTS', 'e6')
    add(g, 'VEMB', 'e6', 'zero')
    add(g, 'VEMB', 'e6', 'zero', 'RAW')
    add(g, 'VADD', 'e6', 'VALUES', 3, 0, 0, 1, 'one')
    add(g, 'VSIM', 'e6', 'ELE', 'zero', 'WITHSCORES', kind='pairs')
    add(g, 'VADD', 'e7', 'VALUES', 3, 0, 0, 0, 'zero', 'NOQUANT')
    add(g, 'VEMB', 'e7', 'zero')
    add(g, 'VADD', 'e8', 'VALUES', 3, '-0', '0', '-0.0', 'negzero', 'BIN')
    add(g, 'VEMB', 'e8', 'negzero')
    add(g, 'VADD', 'e9', 'VALUES', 3, 'abc', 0, 1, 'zz')
    add(g, 'VADD', 'e9', 'VALUES', 3, '1.5x', 0, 1, 'zz')
    add(g, 'VADD', 'e9', 'VALUES', 3, '', 0, 1, 'zz')
    add(g, 'VADD', 'e9', 'VALUES', 3, ' 1', 0, 1, 'zz')
    add(g, 'VADD', 'e9', 'VALUES', 3, '0x10', 0, 1, 'zz')
    add(g, 'VADD', 'e9', 'VALUES', 3, 1, 0, 'zz')
    add(g, 'VADD', 'e9', 'VALUES', 3, 1, 0)
    add(g, 'VADD', 'e9', 'VALUES', 0, 'zz')
    add(g, 'VADD', 'e9', 'VALUES', -1, 1, 'zz')
    add(g, 'VADD', 'e9', 'VALUES', 'x', 1, 'zz')
    add(g, 'VADD', 'e9', 'VALUES', 99999999999, 1, 'zz')
    add(g, 'VADD', 'e9', 'VALUES', 1, 1)
    add(g, 'VADD', 'e9', 'NOPE', 1, 1, 'zz')
    add(g, 'EXISTS', 'e9')
    # option checks, each on a fresh key so that a valid one shows its success
    fresh = iter(range(1000))
    for opts in (('NOPE',), ('EF',), ('EF', 0), ('EF', -1), ('EF', 'x'), ('EF', 1000000),
                 ('EF', 1000001), ('M', 0), ('M', 1), ('M', 2), ('M', 4096), ('M', 4097),
                 ('M', 'x'), ('SETATTR',), ('Q8', 'BIN'), ('BIN', 'NOQUANT'), ('CAS', 'CAS'),
                 ('SETATTR', '{}', 'SETATTR', '{"a": 1}'), ('EF', 10, 'M', 8, 'NOQUANT', 'CAS')):
        add(g, 'VADD', 'o%d' % next(fresh), 'VALUES', 1, 1, 'zz', *opts)
    for red in (0, -1, 3, 2, 1, 'x'):
        add(g, 'VADD', 'o%d' % next(fresh), 'REDUCE', red, 'VALUES', 2, 1, 1, 'zz')
    add(g, 'VADD', 'o%d' % next(fresh), 'VALUES', 2, 1, 1, 'zz', 'REDUCE', 1)
    add(g, 'VADD', 'o%d' % next(fresh), 'REDUCE', 1, 'FP32', fp32(1, 2), 'zz')
    add(g, 'VADD', 'o%d' % next(fresh), 'VALUES', 1, 1, 'zz', 'NOQUANT')
    add(g, 'VINFO', 'o%d' % (next(fresh) - 1), kind='vinfo')
    add(g, 'VADD', 's', 'VALUES', 3, 1, 0, 0, 'zz', 'NOQUANT')
    add(g, 'VADD', 's', 'VALUES', 3, 1, 0, 0, 'zz', 'BIN')
    add(g, 'VADD', 's', 'VALUES', 3, 1, 0, 0, 'a', 'Q8')
    add(g, 'VADD', 'n', 'VALUES', 2, 1, 0, 'zz', 'Q8')
    add(g, 'VADD', 's')
    add(g, 'VADD', 's', 'VALUES')
    add(g, 'SET', 'str', 'x')
    add(g, 'VADD', 'str', 'VALUES', 1, 1, 'zz')
    add(g, 'VSIM', 'str', 'VALUES', 1, 1)
    add(g, 'VCARD', 'str')
    add(g, 'VDIM', 'str')
    add(g, 'VEMB', 'str', 'a')
    add(g, 'VINFO', 'str')
    add(g, 'VLINKS', 'str', 'a')
    add(g, 'VREM', 'str', 'a')
    add(g, 'VGETATTR', 'str', 'a')
    add(g, 'VSETATTR', 'str', 'a', '{}')
    add(g, 'VISMEMBER', 'str', 'a')
    add(g, 'VRANDMEMBER', 'str')
    add(g, 'VRANGE', 'str', '-', '+')
    add(g, 'LPUSH', 's', 'x')
    add(g, 'GET', 's')

    g = 'read'
    add(g, 'VCARD', 'nokey')
    add(g, 'VDIM', 'nokey')
    add(g, 'VEMB', 'nokey', 'a')
    add(g, 'VEMB', 's', 'nosuch')
    add(g, 'VEMB', 'n', 'x')
    add(g, 'VEMB', 'n', 'y')
    for e in 'abc':
        add(g, 'VEMB', 'nq', e)
        add(g, 'VEMB', 'nq', e, 'RAW')
    add(g, 'VSIM', 'nq', 'ELE', 'b', 'WITHSCORES')
    add(g, 'VEMB', 'n', 'x', 'RAW')
    add(g, 'VEMB', 'n', 'x', 'NOPE')
    add(g, 'VEMB', 's', 'a')
    add(g, 'VEMB', 's', 'b')
    add(g, 'VEMB', 's', 'b', 'RAW')
    add(g, 'VEMB', 's', 'g')
    add(g, 'VEMB', 'bq', 'p')
    add(g, 'VEMB', 'bq', 'q', 'RAW')
    add(g, 'VEMB', 'bq', 'r')
    add(g, 'VEMB', 'rd', 'a')
    add(g, 'VEMB', 's')
    add(g, 'VCARD', 'n')
    add(g, 'VDIM', 'n')
    add(g, 'VISMEMBER', 's', 'a')
    add(g, 'VISMEMBER', 's', 'nosuch')
    add(g, 'VISMEMBER', 'nokey', 'a')
    add(g, 'VISMEMBER', 's')
    add(g, 'VINFO', 's', kind='vinfo')
    add(g, 'VINFO', 'n', kind='vinfo')
    add(g, 'VINFO', 'bq', kind='vinfo')
    add(g, 'VINFO', 'rd', kind='vinfo')
    add(g, 'VINFO', 'nokey')
    add(g, 'VINFO', 's', 'extra')
    add(g, 'VLINKS', 's', 'a', kind='vlinks')
    add(g, 'VLINKS', 's', 'c', kind='vlinks')
    add(g, 'VLINKS', 'n', 'x', 'WITHSCORES', kind='vlinks')
    add(g, 'VLINKS', 's', 'nosuch')
    add(g, 'VLINKS', 'nokey', 'a')
    add(g, 'VLINKS', 's', 'a', 'NOPE')

    g = 'attributes'
    add(g, 'VGETATTR', 's', 'b')
    add(g, 'VGETATTR', 's', 'd')
    add(g, 'VGETATTR', 's', 'nosuch')
    add(g, 'VGETATTR', 'nokey', 'a')
    add(g, 'VSETATTR', 's', 'd', '{"year": 1999, "tags": ["x", "y"]}')
    add(g, 'VGETATTR', 's', 'd')
    add(g, 'VSETATTR', 's', 'd', 'not json at all')
    add(g, 'VGETATTR', 's', 'd')
    add(g, 'VSETATTR', 's', 'd', '')
    add(g, 'VGETATTR', 's', 'd')
    add(g, 'VSETATTR', 's', 'nosuch', '{}')
    add(g, 'VSETATTR', 'nokey', 'a', '{}')
    add(g, 'VSETATTR', 's', 'd')
    add(g, 'VSETATTR', 's', 'd', '{"year": 1999}')
    add(g, 'VINFO', 's', kind='vinfo')

    g = 'vsim'
    add(g, 'VSIM', 's', 'ELE', 'a')
    add(g, 'VSIM', 's', 'ELE', 'a', 'WITHSCORES')
    add(g, 'VSIM', 's', 'ELE', 'a', 'WITHSCORES', 'COUNT', 3)
    add(g, 'VSIM', 's', 'ELE', 'c', 'WITHATTRIBS')
    add(g, 'VSIM', 's', 'ELE', 'c', 'WITHSCORES', 'WITHATTRIBS', 'COUNT', 4)
    add(g, 'VSIM', 's', 'VALUES', 3, *vec3(95, 0.2), 'WITHSCORES')
    add(g, 'VSIM', 's', 'FP32', fp32(0.2, -0.9, 0.1), 'COUNT', 2, 'WITHSCORES')
    add(g, 'VSIM', 's', 'VALUES', 3, *vec3(10), 'EPSILON', 0.2, 'WITHSCORES')
    add(g, 'VSIM', 's', 'VALUES', 3, *vec3(10), 'EPSILON', 1)
    add(g, 'VSIM', 's', 'VALUES', 3, *vec3(10), 'EF', 1, 'COUNT', 1)
    add(g, 'VSIM', 's', 'VALUES', 3, *vec3(10), 'EF', 1000000, 'COUNT', 2)
    add(g, 'VSIM', 's', 'VALUES', 3, *vec3(10), 'COUNT', 1000000)
    add(g, 'VSIM', 's', 'VALUES', 3, *vec3(10), 'COUNT', 0)
    add(g, 'VSIM', 's', 'VALUES', 3, *vec3(10), 'TRUTH', 'WITHSCORES')
    add(g, 'VSIM', 's', 'VALUES', 3, *vec3(10), 'NOTHREAD', 'COUNT', 3)
    add(g, 'VSIM', 's', 'VALUES', 3, *vec3(10), 'FILTER', '.year > 1960')
    add(g, 'VSIM', 's', 'VALUES', 3, *vec3(10), 'FILTER', '.year > 1960', 'WITHATTRIBS')
    add(g, 'VSIM', 's', 'VALUES', 3, *vec3(10), 'FILTER', '.year < 1960 or .g == "x"',
        'WITHSCORES')
    add(g, 'VSIM', 's', 'VALUES', 3, *vec3(10), 'FILTER', '.missing', 'FILTER-EF', 0)
    add(g, 'VSIM', 's', 'VALUES', 3, *vec3(10), 'FILTER', '.year', 'TRUTH')
    add(g, 'VSIM', 'n', 'ELE', 'x', 'WITHSCORES')
    add(g, 'VSIM', 'n', 'VALUES', 2, 1, 0, 'WITHSCORES')
    add(g, 'VSIM', 'bq', 'VALUES', 4, 1, -1, 1, 1, 'WITHSCORES', kind='pairs')
    add(g, 'VSIM', 'bq', 'VALUES', 4, 1, -1, 1, -1, 'WITHSCORES')
    add(g, 'VSIM', 'rd', 'VALUES', 4, 1, 2, 3, 4, 'WITHSCORES')
    add(g, 'VSIM', 'nokey', 'VALUES', 3, 1, 0, 0)
    add(g, 'VSIM', 'nokey', 'ELE', 'a')
    add(g, 'VSIM', 's', 'ELE', 'nosuch')
    add(g, 'VSIM', 's', 'VALUES', 2, 1, 0)
    add(g, 'VSIM', 's', 'VALUES', 4, 1, 0, 0, 0)
    add(g, 'VSIM', 's', 'FP32', fp32(1, 0))
    add(g, 'VSIM', 's', 'FP32', 'abcdefghijk')
    add(g, 'VSIM', 's', 'VALUES', 3, 'nan', 0, 0)
    add(g, 'VSIM', 's', 'VALUES', 3, 0, 0, 0, 'WITHSCORES', kind='pairs')
    add(g, 'VSIM', 's', 'VALUES', 3, 1, 0)
    add(g, 'VSIM', 's', 'VALUES', 'x', 1, 0, 0)
    add(g, 'VSIM', 's', 'ELE')
    add(g, 'VSIM', 's')
    add(g, 'VSIM', 's', 'NOPE', 'a')
    add(g, 'VSIM', 's', 'ELE', 'a', 'NOPE')
    add(g, 'VSIM', 's', 'ELE', 'a', 'COUNT')
    add(g, 'VSIM', 's', 'ELE', 'a', 'COUNT', -1)
    add(g, 'VSIM', 's', 'ELE', 'a', 'COUNT', 'x')
    add(g, 'VSIM', 's', 'ELE', 'a', 'COUNT', 99999999999999999999)
    add(g, 'VSIM', 's', 'ELE', 'a', 'EF', 0)
    add(g, 'VSIM', 's', 'ELE', 'a', 'EF', -5)
    add(g, 'VSIM', 's', 'ELE', 'a', 'EF', 1000001)
    add(g, 'VSIM', 's', 'ELE', 'a', 'EF', 99999999999)
    add(g, 'VSIM', 's', 'ELE', 'a', 'EPSILON', -0.1)
    add(g, 'VSIM', 's', 'ELE', 'a', 'EPSILON', 2)
    add(g, 'VSIM', 's', 'ELE', 'a', 'EPSILON', 'x')
    add(g, 'VSIM', 's', 'ELE', 'a', 'FILTER-EF', -1)
    add(g, 'VSIM', 's', 'ELE', 'a', 'FILTER-EF', 'x')
    add(g, 'VSIM', 's', 'ELE', 'a', 'FILTER')
    for expr in ('.year >', '(.year', '', '.year > 1950 foo', '1e-5', '"abc', '!!1',
                 'a\nb', '.year == true'):
        add(g, 'VSIM', 's', 'ELE', 'a', 'FILTER', expr)
    add(g, 'VSIM', 's', 'ELE', 'a', 'FILTER', '.year >', 'COUNT', 'x')
    add(g, 'VSIM', 's', 'ELE', 'a', 'COUNT', 'x', 'FILTER', '.year >')
    add(g, 'VSIM', 'nokey', 'ELE', 'a', 'FILTER', '.year >')

    g = 'vrange'
    add(g, 'VRANGE', 's', '-', '+')
    add(g, 'VRANGE', 's', '+', '-')
    add(g, 'VRANGE', 's', '[b', '[d')
    add(g, 'VRANGE', 's', '(b', '(d')
    add(g, 'VRANGE', 's', '(b', '+', 2)
    add(g, 'VRANGE', 's', '-', '+', 0)
    add(g, 'VRANGE', 's', '-', '+', -1)
    add(g, 'VRANGE', 's', '-', '+', 1000000)
    add(g, 'VRANGE', 's', '-', '+', 'x')
    add(g, 'VRANGE', 's', 'b', '+')
    add(g, 'VRANGE', 's', '-', 'd')
    add(g, 'VRANGE', 's', '[zz', '+')
    add(g, 'VRANGE', 'nokey', '-', '+')
    add(g, 'VRANGE', 's', '-')
    add(g, 'VRANGE', 's', '-', '+', 1, 2)

    g = 'vrandmember'
    add(g, 'VRANDMEMBER', 'nokey')
    add(g, 'VRANDMEMBER', 'nokey', 3)
    add(g, 'VRANDMEMBER', 'nokey', -3)
    add(g, 'VRANDMEMBER', 's', kind='member')
    add(g, 'VRANDMEMBER', 's', 3, kind='count')
    add(g, 'VRANDMEMBER', 's', 100, kind='sorted')
    add(g, 'VRANDMEMBER', 's', -20, kind='count')
    add(g, 'VRANDMEMBER', 's', 0)
    add(g, 'VRANDMEMBER', 's', 'x')
    add(g, 'VRANDMEMBER', 's', 1, 2)
    add(g, 'VRANDMEMBER', 'm', 1, kind='count')

    g = 'vrem'
    add(g, 'VREM', 's', 'g')
    add(g, 'VREM', 's', 'g')
    add(g, 'VREM', 's', 'nosuch')
    add(g, 'VREM', 'nokey', 'a')
    add(g, 'VREM', 's')
    add(g, 'VREM', 's', 'a', 'b')
    add(g, 'VCARD', 's')
    add(g, 'VSIM', 's', 'FP32', fp32(0.2, -0.9, 0.1), 'COUNT', 2)
    add(g, 'VREM', 'm', 'a')
    add(g, 'VREM', 'm', 'b')
    add(g, 'EXISTS', 'm')
    add(g, 'TYPE', 'm')

    g = 'resp3'
    for args in (('VSIM', 's', 'ELE', 'a', 'COUNT', 3),
                 ('VSIM', 's', 'ELE', 'a', 'WITHSCORES', 'COUNT', 3),
                 ('VSIM', 's', 'ELE', 'c', 'WITHATTRIBS', 'COUNT', 3),
                 ('VSIM', 's', 'ELE', 'c', 'WITHSCORES', 'WITHATTRIBS', 'COUNT', 3),
                 ('VEMB', 'n', 'x'), ('VEMB', 'n', 'x', 'RAW'), ('VEMB', 's', 'b', 'RAW'),
                 ('VISMEMBER', 's', 'a'), ('VISMEMBER', 's', 'nosuch'), ('VCARD', 's'),
                 ('VGETATTR', 's', 'nosuch'), ('VGETATTR', 's', 'b'), ('VEMB', 'nokey', 'a'),
                 ('VLINKS', 'nokey', 'a'), ('VINFO', 'nokey'), ('VRANDMEMBER', 'nokey'),
                 ('VRANGE', 's', '-', '+', 2), ('VSIM', 'nokey', 'ELE', 'a')):
        add(g, *args)
    add(g, 'VINFO', 's', kind='vinfo')
    add(g, 'VLINKS', 's', 'a', 'WITHSCORES', kind='vlinks')
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--redis', required=True, help='path of a redis-server 8.8 binary')
    ap.add_argument('--port', type=int, default=7420)
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix='vset-rec-')
    srv = subprocess.Popen([args.redis, '--port', str(args.port), '--bind', '127.0.0.1',
                            '--save', '', '--appendonly', 'no', '--dir', tmp],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    steps = []
    try:
        for _ in range(200):
            try:
                c2 = Raw(args.port)
                break
            except OSError:
                time.sleep(0.05)
        c3 = Raw(args.port)
        c3.cmd('HELLO', '3')
        version = c2.cmd('INFO', 'server').split(b'redis_version:')[1].split(b'\r\n')[0]
        for group, kind, cmd in cases():
            proto = 3 if group == 'resp3' else 2
            reply = (c3 if proto == 3 else c2).cmd(*cmd)
            steps.append([group, proto, kind, cmd, reply.decode('latin-1')])
    finally:
        srv.terminate()
        srv.wait()
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        os.rmdir(tmp)
    w = sys.stdout.write
    w('{"server": "redis-server %s (tools/record-vset-redis.py)",\n "steps": [\n'
      % version.decode())
    w(',\n'.join('  ' + json.dumps(s) for s in steps))
    w('\n ]}\n')


if __name__ == '__main__':
    main()
