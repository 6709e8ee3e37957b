#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Randomized differential fuzzer: xkvd against redis-server, reply by reply.

Starts a private xkvd and a private redis-server (harness.Server), then issues
random commands of every data type both servers share (strings, bitmaps, the
keyspace, lists, hashes, sets, sorted sets, SORT, MULTI/EXEC/WATCH, SELECT/
SWAPDB/MOVE), well-formed and deliberately malformed, over a small key space
so that types collide. Three sessions (two RESP2, one RESP3) interleave, so
WATCH sees other clients' writes. Every reply is compared byte for byte,
except where the reply is legitimately unordered or random:
  - unordered replies (SMEMBERS, HGETALL, KEYS, SORT BY nosort on a set...)
    are compared as multisets, keeping their RESP type markers;
  - TTL/PTTL/EXPIRETIME/PEXPIRETIME integers may differ by a second;
  - SRANDMEMBER/HRANDFIELD/ZRANDMEMBER/RANDOMKEY must have the same shape and
    name existing members; SPOP's pops are checked, then both sets are made
    equal again by removing the other server's pops;
  - SCAN/HSCAN/SSCAN/ZSCAN are iterated to the end on both servers and the
    sets of results compared.
Every so often the whole dataset is compared (DBSIZE of every db, and each
key's TYPE, TTL and content in dbs 0-3), and short-lived TTLs are exercised
in an "expiry episode" that waits them out before the dataset is compared.

Each run is reproducible from its seed: the command stream is a function of
(seed, step) only. On a mismatch it prints the seed, the step, the last
commands of every session and the command line to replay, and exits 1.

Skipped on purpose: commands whose replies depend on time or memory (INFO,
OBJECT, MEMORY, DEBUG, TIME), HELLO's server details, and README's known
differences (OBJECT ENCODING, ZRANK WITHSCORE, Redis 7.2+/8 commands).

With --redis naming a Redis 8.8 build (a peer you built yourself; nothing in
the tree builds one), four families join in: arrays (AR*; array keys are
compared by ARSCAN, ARINFO FULL (the layout) and DUMP, byte-identical
payloads), streams with consumer groups (explicit and 'N-*' IDs only, XPENDING
compared without idle times; stream keys by XRANGE, XINFO GROUPS and each
group's PEL), HyperLogLogs (their bytes, by GET, in the dataset check) and geo
(GEOSEARCH without an order compared as a multiset, with ANY by size).
Without --redis the reference is Debian's redis-server 7.0.15, whose double
replies (ZSCORE, ZINCRBY ...) and a few argument checks differ from Redis
8.8's, which xkvd follows: the soak (make soak REDIS_88=PATH) uses 8.8. --only restricts the families (e.g. --only arrays,keyspace), for a
reference whose other replies differ from the 7.0 ones xkvd gives.

Usage: fuzz.py [--xkvd PATH] [--redis PATH] [--only F,F] [--seed N] [--seeds N]
               [--steps N | --seconds S] [--io-engine io_uring|epoll|both]
               [--history N] [--dump FILE]
A failing seed's replay line repeats its run exactly (with the same engine)."""

import argparse
import os
import random
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'integration'))
import harness  # noqa: E402

DBS = 4                      # dbs the generator uses (the dataset check reads all 16)
KEYS = ['a', 'b', 'c', '{t}1', '{t}2', 'w_1', 'w_2', 'w_a', 'h_1', 'h_a']
# 'z\x00y' is binary; SORT ... ALPHA in Redis collates with strcoll(), which
# stops at a NUL, so a NUL must not make two elements equal ('\x00' vs '').
ELEMS = ['1', '2', '3', '10', '-5', '0', 'a', 'b', 'c', 'xy', '', '1.5', 'z\x00y']
FIELDS = ['f', 'g', 'h', '1', '2', 'field']
SCORES = ['0', '1', '2', '-1', '1.5', '3', '10', 'inf', '-inf', '+inf', '1e3', '-0.5']
INTS = ['0', '1', '2', '3', '-1', '-2', '5', '10', '-10', '100']
JUNK = ['x', '', '-1', '1.5', 'inf', 'nan', '9223372036854775808', '-0', ' 1', '1x']
BIG_INTS = ['9223372036854775807', '-9223372036854775808', '9223372036854775806']
# Array indices near the edges of slices, of the flat directory (slice 2048 of
# 4096 positions), of 64 bits; values of every inline kind and heap strings.
AR_BASES = [0, 4090, 4096 * 2048 - 5, 1 << 40, 2 ** 64 - 8]
AR_VALUES = ELEMS + ['1.0', '-0.0', '2.5', '0.1', '2305843009213693952', 'abcdefg', 'abcdefgh',
                     '007', '1e5']
# Stream IDs over a few milliseconds, so that ranges, trims and groups meet;
# 'N-*' lets the server pick the sequence (deterministic, unlike '*').
ST_MS = [0, 1, 2, 3, 5, 8, 13, 20]
GROUPS = ['g1', 'g2']
CONSUMERS = ['c1', 'c2', 'c3']
# Points near Palermo and Catania (Redis's docs' example) and near the edges
# of the geohash range; members named m0..m7.
GEO_POINTS = [('13.361389', '38.115556'), ('15.087269', '37.502669'), ('13.5', '38.0'),
              ('14.0', '37.8'), ('-179.9', '85.05'), ('179.9', '-85.05'), ('0', '0'),
              ('13.4', '38.2')]
GEO_UNITS = ['m', 'km', 'ft', 'mi']
BASE_FAMILIES = ('strings', 'keyspace', 'lists', 'hashes', 'sets', 'zsets', 'sort')
# Families compared only against a Redis 8.8 reference: arrays are new in 8.8,
# and xkvd's streams, HyperLogLogs and geo commands answer as 8.8 does.
R88_FAMILIES = ('arrays', 'streams', 'hll', 'geo')
FAMILIES = BASE_FAMILIES + R88_FAMILIES


DUMP = None                  # --dump: keep the whole command log and write it here


class Mismatch(Exception):
    pass


# ------------------------------------------------------------------ RESP trees

def parse(raw):
    """Raw reply -> a tree of (type byte, payload) keeping RESP types."""
    node, end = _parse(raw, 0)
    if end != len(raw):
        raise ValueError('trailing bytes: %r' % raw)
    return node


def _parse(raw, i):
    j = raw.index(b'\r\n', i)
    kind, body, nxt = raw[i:i + 1], raw[i + 1:j], j + 2
    if kind in b'+-:_,#(':
        return (kind, body), nxt
    n = int(body)
    if kind in b'$!=':
        if n < 0:
            return (kind, None), nxt
        return (kind, raw[nxt:nxt + n]), nxt + n + 2
    if n < 0:
        return (kind, None), nxt
    items = []
    for _ in range(n * (2 if kind in b'%|' else 1)):
        item, nxt = _parse(raw, nxt)
        items.append(item)
    if kind in b'%|':
        items = [(b'pair', (items[k], items[k + 1])) for k in range(0, len(items), 2)]
    return (kind, items), nxt


def unordered(node, pairs=False):
    """Sorts an array/set/map's children; pairs=True groups a RESP2 flat
    name/value array (HGETALL) into pairs first."""
    kind, val = node
    if not isinstance(val, list):
        return node
    if pairs and kind == b'*':
        val = [(b'pair', (val[k], val[k + 1])) for k in range(0, len(val) - 1, 2)]
    return (kind, sorted(val, key=repr))


def elements(node):
    """The strings in a reply tree, flattened (for membership checks)."""
    kind, val = node
    if kind == b'_' or val is None:
        return []
    if isinstance(val, list):
        return [e for v in val for e in elements(v)]
    if kind == b'pair':
        return elements(val[0]) + elements(val[1])
    return [val]


# ------------------------------------------------------------------ generator

class Gen:
    """Random commands. Each returns (args, mode); mode says how to compare."""

    def __init__(self, rnd, families=BASE_FAMILIES):
        self.r = rnd
        self.families = families

    def key(self):
        return self.r.choice(KEYS)

    def elem(self):
        r = self.r.random()
        if r < 0.05:
            return 'v' * self.r.choice([65, 100, 300])    # past listpack value sizes
        if r < 0.1:
            return str(self.r.randint(-1000, 100000))
        return self.r.choice(ELEMS)

    def elems(self, lo=1, hi=4):
        if self.r.random() < 0.03:
            return ['m%d' % i for i in range(self.r.choice([130, 200, 520]))]
        return [self.elem() for _ in range(self.r.randint(lo, hi))]

    def int(self):
        return self.r.choice(INTS) if self.r.random() < 0.9 else self.r.choice(BIG_INTS)

    def idx(self):
        return str(self.r.randint(-6, 6))

    def score(self):
        return self.r.choice(SCORES) if self.r.random() < 0.8 else \
            '%g' % self.r.uniform(-100, 100)

    def ttl_s(self):
        # Far away, so nothing expires during a run (short TTLs: episodes).
        return str(self.r.randint(10 ** 6, 10 ** 8))

    def ttl_abs(self, ms=False, future=False):
        t = self.r.choice([2 * 10 ** 9, 4 * 10 ** 9] + ([] if future else [1, 10 ** 5]))
        t += self.r.randint(0, 10 ** 4)
        return str(t * 1000 if ms else t)

    def timeout(self):
        return self.r.choice(['0.01', '0.02'])

    def pick(self, *opts):
        return self.r.choice(opts)

    def maybe(self, p, *args):
        return list(args) if self.r.random() < p else []

    # ---- families: each a list of (weight, function)

    def strings(self):
        k, r = self.key(), self.r
        c = r.randrange(27)
        if c == 0:
            return ['GET', k]
        if c == 1:
            args = ['SET', k, self.elem()]
            ex = r.randrange(7)
            if ex == 1:
                args += ['EX', self.ttl_s()]
            elif ex == 2:
                args += ['PX', self.ttl_s()]
            elif ex == 3:
                # Only future deadlines: 7.0 stores a key SET with a past one,
                # and DBSIZE counts it until active expiry (a race).
                args += ['EXAT', self.ttl_abs(future=True)]
            elif ex == 4:
                args += ['PXAT', self.ttl_abs(True, future=True)]
            elif ex == 5:
                args += ['KEEPTTL']
            args += self.maybe(0.3, self.pick('NX', 'XX'))
            args += self.maybe(0.3, 'GET')
            return args
        if c == 2:
            return ['SETNX', k, self.elem()]
        if c == 3:
            return ['SETEX', k, self.ttl_s(), self.elem()]
        if c == 4:
            return ['PSETEX', k, self.ttl_s(), self.elem()]
        if c == 5:
            return ['GETSET', k, self.elem()]
        if c == 6:
            return ['GETDEL', k]
        if c == 7:
            opt = self.pick([], ['EX', self.ttl_s()], ['PX', self.ttl_s()],
                            ['EXAT', self.ttl_abs()], ['PXAT', self.ttl_abs(True)], ['PERSIST'])
            return ['GETEX', k] + opt
        if c == 8:
            return ['MGET'] + [self.key() for _ in range(r.randint(1, 4))]
        if c == 9:
            return ['MSET'] + [x for _ in range(r.randint(1, 3)) for x in (self.key(), self.elem())]
        if c == 10:
            return ['MSETNX'] + [x for _ in range(r.randint(1, 3)) for x in (self.key(), self.elem())]
        if c == 11:
            return ['APPEND', k, self.elem()]
        if c == 12:
            return ['STRLEN', k]
        if c == 13:
            return [self.pick('INCR', 'DECR'), k]
        if c == 14:
            return [self.pick('INCRBY', 'DECRBY'), k, self.int()]
        if c == 15:
            return ['INCRBYFLOAT', k, self.pick('0.1', '1', '-1.5', '3.0e3', '1e-5', '5.0e-1',
                                                 '10.50', '-0', '0x10', '1.7976931348623157e308')]
        if c == 16:
            return [self.pick('GETRANGE', 'SUBSTR'), k, self.idx(), self.pick(self.idx(), '100', '-100')]
        if c == 17:
            return ['SETRANGE', k, self.pick('0', '1', '3', '10', '100', '1000', '536870912'),
                    self.pick('', 'x', 'hello', '\x00')]
        if c == 18:
            args = ['LCS', self.key(), self.key()]
            if r.random() < 0.5:
                args.append(self.pick('LEN', 'IDX'))
                args += self.maybe(0.3, 'MINMATCHLEN', self.pick('0', '1', '2', '4'))
                args += self.maybe(0.3, 'WITHMATCHLEN')
            return args
        if c == 19:
            return ['SET', k, self.pick('abcdefgh', 'ohmytext', 'mynewtext', '12345', '-7')]
        # bitmaps
        if c == 20:
            return ['SETBIT', k, self.pick('0', '1', '7', '8', '63', '100', '1000', '4294967296'),
                    self.pick('0', '1', '1', '2')]
        if c == 21:
            return ['GETBIT', k, self.pick('0', '1', '7', '100', '99999')]
        if c == 22:
            args = ['BITCOUNT', k]
            if r.random() < 0.6:
                args += [self.idx(), self.idx()] + self.maybe(0.5, self.pick('BYTE', 'BIT'))
            return args
        if c == 23:
            args = ['BITPOS', k, self.pick('0', '1')]
            if r.random() < 0.6:
                args.append(self.idx())
                if r.random() < 0.6:
                    args += [self.idx()] + self.maybe(0.5, self.pick('BYTE', 'BIT'))
            return args
        if c == 24:
            op = self.pick('AND', 'OR', 'XOR', 'NOT')
            srcs = [self.key() for _ in range(1 if op == 'NOT' else r.randint(1, 3))]
            return ['BITOP', op, self.key()] + srcs
        if c in (25, 26):
            args = [self.pick('BITFIELD', 'BITFIELD_RO') if c == 26 else 'BITFIELD', k]
            for _ in range(r.randint(1, 3)):
                t = self.pick('i', 'u') + str(r.choice([1, 3, 8, 16, 31, 32, 63, 64]))
                off = self.pick('0', '1', '5', '#1', '#2', '100')
                sub = r.randrange(4)
                if sub == 0 or args[0] == 'BITFIELD_RO':
                    args += ['GET', t, off]
                elif sub == 1:
                    args += ['SET', t, off, self.int()]
                elif sub == 2:
                    args += ['INCRBY', t, off, self.int()]
                else:
                    args += ['OVERFLOW', self.pick('WRAP', 'SAT', 'FAIL')]
            return args

    def keyspace(self):
        k, r = self.key(), self.r
        c = r.randrange(21)
        if c == 0:
            return [self.pick('DEL', 'UNLINK', 'EXISTS', 'TOUCH')] + \
                [self.key() for _ in range(r.randint(1, 3))]
        if c == 1:
            return ['TYPE', k]
        if c == 2:
            return [self.pick('EXPIRE', 'PEXPIRE'), k, self.ttl_s()] + \
                self.maybe(0.3, self.pick('NX', 'XX'))
        if c == 3:
            return [self.pick('EXPIREAT', 'PEXPIREAT'), k, self.ttl_abs()] + \
                self.maybe(0.4, self.pick('NX', 'XX', 'GT', 'LT'))
        if c == 4:
            # Deadlines already past: the key goes at once, deterministically.
            return self.pick(['EXPIRE', k, self.pick('0', '-1', '-100')],
                             ['PEXPIRE', k, self.pick('0', '-1', '-100')],
                             [self.pick('EXPIREAT', 'PEXPIREAT'), k, self.pick('0', '-1', '1', '100')])
        if c in (5, 6):
            return [self.pick('TTL', 'PTTL', 'EXPIRETIME', 'PEXPIRETIME'), k]
        if c == 7:
            return ['PERSIST', k]
        if c == 8:
            return ['KEYS', self.pick('*', 'w_*', '?', '{t}*', 'h_[a1]', '[^w]*', '*\\*', 'a*')]
        if c == 9:
            args = ['SCAN', '0']
            args += self.maybe(0.5, 'MATCH', self.pick('*', 'w_*', '?', '{t}*'))
            args += self.maybe(0.5, 'COUNT', self.pick('1', '2', '10'))
            args += self.maybe(0.5, 'TYPE', self.pick('string', 'list', 'hash', 'set', 'zset',
                                                        'none', 'bogus'))
            return args
        if c == 10:
            return ['RANDOMKEY']
        if c == 11:
            return [self.pick('RENAME', 'RENAMENX'), k, self.key()]
        if c == 12:
            return ['COPY', k, self.key()] + \
                self.maybe(0.4, 'DB', str(r.randrange(DBS))) + self.maybe(0.4, 'REPLACE')
        if c == 13:
            return ['MOVE', k, str(r.randrange(DBS))]
        if c == 14:
            return ['DBSIZE']
        if c == 15:
            return ['SELECT', str(r.randrange(DBS))]
        if c == 16:
            return ['SWAPDB', str(r.randrange(DBS)), str(r.randrange(DBS))]
        if c == 17:
            return ['FLUSHDB'] + self.maybe(0.3, self.pick('ASYNC', 'SYNC')) \
                if r.random() < 0.15 else ['EXISTS', k]
        if c == 18:
            return ['FLUSHALL'] if r.random() < 0.05 else ['TYPE', k]
        if c == 19:
            return ['PING'] + self.maybe(0.5, self.elem())
        return ['ECHO', self.elem()]

    def lists(self):
        k, r = self.key(), self.r
        c = r.randrange(20)
        if c in (0, 1):
            return [self.pick('LPUSH', 'RPUSH', 'LPUSHX', 'RPUSHX'), k] + self.elems()
        if c == 2:
            return [self.pick('LPOP', 'RPOP'), k] + self.maybe(0.5, self.pick('0', '1', '2', '5'))
        if c == 3:
            return ['LLEN', k]
        if c in (4, 5):
            return ['LRANGE', k, self.idx(), self.pick(self.idx(), '-1', '100')]
        if c == 6:
            return ['LINDEX', k, self.idx()]
        if c == 7:
            return ['LSET', k, self.idx(), self.elem()]
        if c == 8:
            return ['LINSERT', k, self.pick('BEFORE', 'AFTER'), self.elem(), self.elem()]
        if c == 9:
            return ['LREM', k, self.pick('0', '1', '-1', '2', '-2'), self.elem()]
        if c == 10:
            return ['LTRIM', k, self.idx(), self.idx()]
        if c == 11:
            args = ['LPOS', k, self.elem()]
            args += self.maybe(0.4, 'RANK', self.pick('1', '-1', '2', '-2', '0'))
            args += self.maybe(0.4, 'COUNT', self.pick('0', '1', '2'))
            args += self.maybe(0.3, 'MAXLEN', self.pick('0', '1', '3'))
            return args
        if c == 12:
            return ['LMOVE', k, self.key(), self.pick('LEFT', 'RIGHT'), self.pick('LEFT', 'RIGHT')]
        if c == 13:
            return ['RPOPLPUSH', k, self.key()]
        if c == 14:
            keys = [self.key() for _ in range(r.randint(1, 3))]
            return ['LMPOP', str(len(keys))] + keys + [self.pick('LEFT', 'RIGHT')] + \
                self.maybe(0.5, 'COUNT', self.pick('1', '2', '10'))
        if c == 15:
            return [self.pick('BLPOP', 'BRPOP'), k] + self.maybe(0.5, self.key()) + [self.timeout()]
        if c == 16:
            return ['BLMOVE', k, self.key(), self.pick('LEFT', 'RIGHT'), self.pick('LEFT', 'RIGHT'),
                    self.timeout()]
        if c == 17:
            return ['BRPOPLPUSH', k, self.key(), self.timeout()]
        if c == 18:
            keys = [self.key() for _ in range(r.randint(1, 2))]
            return ['BLMPOP', self.timeout(), str(len(keys))] + keys + \
                [self.pick('LEFT', 'RIGHT')] + self.maybe(0.5, 'COUNT', self.pick('1', '3'))
        return ['RPUSH', k] + [self.pick('1', '2', '3', '10', '-5', '2.5')
                               for _ in range(r.randint(1, 5))]

    def hashes(self):
        k, r = self.key(), self.r
        c = r.randrange(16)
        fv = lambda: [x for _ in range(r.randint(1, 3)) for x in (self.pick(*FIELDS), self.elem())]
        if c in (0, 1):
            return ['HSET', k] + fv()
        if c == 2:
            return ['HMSET', k] + fv()
        if c == 3:
            return ['HSETNX', k, self.pick(*FIELDS), self.elem()]
        if c == 4:
            return ['HGET', k, self.pick(*FIELDS)]
        if c == 5:
            return ['HMGET', k] + [self.pick(*FIELDS) for _ in range(r.randint(1, 3))]
        if c == 6:
            return [self.pick('HGETALL', 'HKEYS', 'HVALS'), k]
        if c == 7:
            return ['HDEL', k] + [self.pick(*FIELDS) for _ in range(r.randint(1, 3))]
        if c == 8:
            return ['HLEN', k]
        if c == 9:
            return [self.pick('HEXISTS', 'HSTRLEN'), k, self.pick(*FIELDS)]
        if c == 10:
            return ['HINCRBY', k, self.pick(*FIELDS), self.int()]
        if c == 11:
            return ['HINCRBYFLOAT', k, self.pick(*FIELDS), self.pick('1.5', '-2', '1e2', '0.1', 'x')]
        if c == 12:
            return ['HRANDFIELD', k] + self.maybe(
                0.7, self.pick('1', '2', '3', '-2', '-5', '0', '10')) + self.maybe(0.3, 'WITHVALUES')
        if c == 13:
            return ['HSCAN', k, '0'] + self.maybe(0.4, 'MATCH', self.pick('*', 'f*', '?')) + \
                self.maybe(0.4, 'COUNT', self.pick('1', '5'))
        if c == 14:
            return ['HSET', k] + [x for i in range(r.choice([3, 130, 200]))
                                  for x in ('fld%d' % i, str(i))]
        return ['HGET', k, self.pick(*FIELDS)]

    def sets(self):
        k, r = self.key(), self.r
        c = r.randrange(17)
        if c in (0, 1):
            return ['SADD', k] + self.elems()
        if c == 2:
            return ['SREM', k] + self.elems(1, 3)
        if c == 3:
            return ['SCARD', k]
        if c == 4:
            return ['SISMEMBER', k, self.elem()]
        if c == 5:
            return ['SMISMEMBER', k] + self.elems(1, 3)
        if c == 6:
            return ['SMEMBERS', k]
        if c == 7:
            return [self.pick('SINTER', 'SUNION', 'SDIFF'), k] + [self.key() for _ in range(r.randint(0, 2))]
        if c == 8:
            return [self.pick('SINTERSTORE', 'SUNIONSTORE', 'SDIFFSTORE'), self.key(), k] + \
                [self.key() for _ in range(r.randint(0, 2))]
        if c == 9:
            keys = [self.key() for _ in range(r.randint(1, 3))]
            return ['SINTERCARD', str(len(keys))] + keys + self.maybe(0.4, 'LIMIT', self.pick('0', '1', '2'))
        if c == 10:
            return ['SMOVE', k, self.key(), self.elem()]
        if c == 11:
            return ['SPOP', k] + self.maybe(0.5, self.pick('0', '1', '2', '5', '100'))
        if c == 12:
            return ['SRANDMEMBER', k] + self.maybe(0.7, self.pick('0', '1', '2', '-3', '5', '100', '-100'))
        if c == 13:
            return ['SSCAN', k, '0'] + self.maybe(0.4, 'MATCH', self.pick('*', '1*', '?')) + \
                self.maybe(0.4, 'COUNT', self.pick('1', '5'))
        if c == 14:
            return ['SADD', k] + [str(self.r.randint(-50, 600)) for _ in range(r.randint(1, 6))]
        if c == 15:
            return ['SADD', k] + [str(i) for i in range(r.choice([10, 513, 600]))]
        return ['SISMEMBER', k, self.elem()]

    def zrange_bounds(self, by):
        if by == 'BYLEX':
            b = lambda: self.pick('-', '+', '[a', '(a', '[b', '(c', '[1', 'a', '[', '(xy')
        else:
            b = lambda: self.pick('-inf', '+inf', '0', '1', '(1', '2', '(2.5', '1.5', 'x', '(inf', '3')
        return [b(), b()]

    def zsets(self):
        k, r = self.key(), self.r
        c = r.randrange(26)
        if c in (0, 1, 2):
            args = ['ZADD', k]
            args += self.maybe(0.2, self.pick('NX', 'XX'))
            args += self.maybe(0.2, self.pick('GT', 'LT'))
            args += self.maybe(0.2, 'CH')
            n = 1 if r.random() < 0.2 else r.randint(1, 4)
            if r.random() < 0.15:
                args.append('INCR')
            for _ in range(n):
                args += [self.score(), self.elem()]
            return args
        if c == 3:
            return ['ZINCRBY', k, self.score(), self.elem()]
        if c == 4:
            return ['ZREM', k] + self.elems(1, 3)
        if c == 5:
            return ['ZCARD', k]
        if c == 6:
            return ['ZSCORE', k, self.elem()]
        if c == 7:
            return ['ZMSCORE', k] + self.elems(1, 3)
        if c == 8:
            return [self.pick('ZRANK', 'ZREVRANK'), k, self.elem()]
        if c == 9:
            return ['ZCOUNT', k] + self.zrange_bounds('BYSCORE')
        if c == 10:
            return ['ZLEXCOUNT', k] + self.zrange_bounds('BYLEX')
        if c in (11, 12):
            by = self.pick('', 'BYSCORE', 'BYLEX')
            args = ['ZRANGE', k] + (self.zrange_bounds(by) if by else [self.idx(), self.idx()])
            args += [by] if by else []
            args += self.maybe(0.3, 'REV')
            args += self.maybe(0.3, 'LIMIT', self.pick('0', '1', '-1'), self.pick('1', '2', '-1', '0'))
            args += self.maybe(0.4, 'WITHSCORES')
            return args
        if c == 13:
            by = self.pick('', 'BYSCORE', 'BYLEX')
            args = ['ZRANGESTORE', self.key(), k] + \
                (self.zrange_bounds(by) if by else [self.idx(), self.idx()])
            args += [by] if by else []
            args += self.maybe(0.3, 'REV')
            args += self.maybe(0.3, 'LIMIT', self.pick('0', '1'), self.pick('1', '2', '-1'))
            return args
        if c == 14:
            return ['ZREVRANGE', k, self.idx(), self.idx()] + self.maybe(0.4, 'WITHSCORES')
        if c == 15:
            cmd = self.pick('ZRANGEBYSCORE', 'ZREVRANGEBYSCORE')
            return [cmd, k] + self.zrange_bounds('BYSCORE') + self.maybe(0.4, 'WITHSCORES') + \
                self.maybe(0.3, 'LIMIT', self.pick('0', '1'), self.pick('1', '2', '-1'))
        if c == 16:
            cmd = self.pick('ZRANGEBYLEX', 'ZREVRANGEBYLEX')
            return [cmd, k] + self.zrange_bounds('BYLEX') + \
                self.maybe(0.3, 'LIMIT', self.pick('0', '1'), self.pick('1', '2', '-1'))
        if c == 17:
            kind = r.randrange(3)
            if kind == 0:
                return ['ZREMRANGEBYRANK', k, self.idx(), self.idx()]
            if kind == 1:
                return ['ZREMRANGEBYSCORE', k] + self.zrange_bounds('BYSCORE')
            return ['ZREMRANGEBYLEX', k] + self.zrange_bounds('BYLEX')
        if c == 18:
            return [self.pick('ZPOPMIN', 'ZPOPMAX'), k] + self.maybe(0.5, self.pick('0', '1', '2', '10'))
        if c == 19:
            keys = [self.key() for _ in range(r.randint(1, 3))]
            return ['ZMPOP', str(len(keys))] + keys + [self.pick('MIN', 'MAX')] + \
                self.maybe(0.5, 'COUNT', self.pick('1', '2', '10'))
        if c in (20, 21):
            keys = [self.key() for _ in range(r.randint(1, 3))]
            store = r.random() < 0.5
            cmd = self.pick('ZUNION', 'ZINTER', 'ZDIFF')
            args = ([cmd + 'STORE', self.key()] if store else [cmd]) + [str(len(keys))] + keys
            if cmd != 'ZDIFF':
                args += self.maybe(0.4, 'WEIGHTS', *[self.pick('1', '2', '0', '-1', '0.5', 'inf')
                                                     for _ in keys])
                args += self.maybe(0.4, 'AGGREGATE', self.pick('SUM', 'MIN', 'MAX'))
            if not store:
                args += self.maybe(0.5, 'WITHSCORES')
            return args
        if c == 22:
            keys = [self.key() for _ in range(r.randint(1, 3))]
            return ['ZINTERCARD', str(len(keys))] + keys + self.maybe(0.4, 'LIMIT', self.pick('0', '1', '3'))
        if c == 23:
            return ['ZRANDMEMBER', k] + self.maybe(0.7, self.pick('1', '2', '-3', '5', '0', '-10')) + \
                self.maybe(0.3, 'WITHSCORES')
        if c == 24:
            return ['ZSCAN', k, '0'] + self.maybe(0.4, 'MATCH', self.pick('*', 'a*', '?')) + \
                self.maybe(0.4, 'COUNT', self.pick('1', '5'))
        if r.random() < 0.5:     # equal scores: lex ranges are defined
            return ['ZADD', k] + [x for e in self.elems() for x in ('0', e)]
        return ['ZADD', k] + [x for i in range(r.choice([5, 129, 200]))
                              for x in (str(i % 17), 'z%d' % i)]

    def sort(self):
        r = self.r
        args = [self.pick('SORT', 'SORT', 'SORT_RO'), self.key()]
        nosort = False
        if r.random() < 0.5:
            by = self.pick('w_*', 'h_*->f', 'nosort', 'nokey*', 'w_*->f')
            nosort = by == 'nosort'
            args += ['BY', by]
        if r.random() < 0.3:
            args += ['LIMIT', self.pick('0', '1', '-1'), self.pick('1', '2', '-1', '10')]
        for _ in range(r.choice([0, 0, 1, 2])):
            args += ['GET', self.pick('#', 'w_*', 'h_*->f', 'h_*->g')]
        args += self.maybe(0.3, self.pick('ASC', 'DESC'))
        args += self.maybe(0.4, 'ALPHA')
        if args[0] == 'SORT' and not ('BY' in args and 'ALPHA' in args and not nosort) \
                and r.random() < 0.3:
            args += ['STORE', self.key()]
        return args

    def ar_index(self):
        r = self.r.random()
        if r < 0.03:
            return self.r.choice(JUNK + ['18446744073709551615', ' 7', '+3'])
        return str(min(self.r.choice(AR_BASES) + self.r.randint(0, 40), 2 ** 64 - 2))

    def ar_value(self):
        r = self.r.random()
        if r < 0.1:
            return 'v' * self.r.choice([8, 100, 300])
        if r < 0.2:
            return str(self.r.randint(-10 ** 6, 10 ** 6))
        return self.r.choice(AR_VALUES)

    def arrays(self):
        k, r = self.key(), self.r
        c = r.randrange(20)
        if c < 3:
            return ['ARSET', k, self.ar_index()] + [self.ar_value() for _ in range(r.choice(
                [1, 1, 2, 5, 12, 30]))]
        if c == 3:
            return ['ARMSET', k] + [x for _ in range(r.randint(1, 4))
                                    for x in (self.ar_index(), self.ar_value())]
        if c == 4:
            return ['ARGET', k, self.ar_index()]
        if c == 5:
            return ['ARMGET', k] + [self.ar_index() for _ in range(r.randint(1, 4))]
        if c == 6:
            return ['ARDEL', k] + [self.ar_index() for _ in range(r.randint(1, 3))]
        if c == 7:
            return ['ARDELRANGE', k, self.ar_index(), self.ar_index()]
        if c == 8:
            return [self.pick('ARLEN', 'ARCOUNT', 'ARNEXT'), k]
        if c == 9:
            lo = self.ar_index()
            hi = lo if r.random() < 0.5 or not lo.isdigit() else str(
                min(int(lo) + r.randint(0, 2000), 2 ** 64 - 2))
            return ['ARGETRANGE', k] + ([lo, hi] if r.random() < 0.5 else [hi, lo])
        if c == 10:
            return ['ARSCAN', k, self.ar_index(), self.ar_index()] + self.maybe(
                0.5, 'LIMIT', self.pick('1', '3', '100'))
        if c == 11:
            args = ['ARGREP', k, self.pick('-', '+', '0', '5000'), self.pick('+', '-', '100')]
            for _ in range(r.randint(1, 3)):
                args += [self.pick('EXACT', 'MATCH', 'GLOB', 'RE'),
                         self.pick('a', '1', 'v*', '^[0-9]+$', 'b|c', '(', '')]
            args += self.maybe(0.3, self.pick('AND', 'OR'))
            args += self.maybe(0.3, 'NOCASE')
            args += self.maybe(0.3, 'WITHVALUES')
            args += self.maybe(0.3, 'LIMIT', self.pick('1', '2', '0'))
            return args
        if c == 12:
            op = self.pick('SUM', 'MIN', 'MAX', 'AND', 'OR', 'XOR', 'USED', 'MATCH', 'NOPE')
            return ['AROP', k, self.ar_index(), self.ar_index(), op] + (
                [self.ar_value()] if op == 'MATCH' else [])
        if c in (13, 14):
            return ['ARINSERT', k] + [self.ar_value() for _ in range(r.randint(1, 5))]
        if c == 15:
            return ['ARRING', k, self.pick('1', '3', '5', '50', '0', 'x')] + \
                [self.ar_value() for _ in range(r.randint(1, 6))]
        if c == 16:
            return ['ARSEEK', k, self.pick('0', '1', '10', '18446744073709551615',
                                           self.ar_index())]
        if c == 17:
            return ['ARLASTITEMS', k, self.pick('1', '3', '100', '0', '-1')] + self.maybe(0.3, 'REV')
        if c == 18:
            return ['ARINFO', k] + self.maybe(0.5, 'FULL')
        return ['ARLEN', k]

    # ---- streams (compared against 8.8 only)

    def st_id(self, special=True):
        r = self.r.random()
        if special and r < 0.15:
            return self.pick('-', '+', '0', '0-0', '$', '>', '(1-0', '(5', 'x', '1-x',
                             '18446744073709551615-18446744073709551615')
        ms = self.r.choice(ST_MS)
        if r < 0.3:
            return str(ms)
        return '%d-%d' % (ms, self.r.randint(0, 3))

    def st_fields(self):
        return [x for _ in range(self.r.choice([1, 1, 2, 3]))
                for x in (self.r.choice(FIELDS), self.elem())]

    def st_trim(self):
        return [self.pick('MAXLEN', 'MINID'), self.pick('=', '', '~'),
                self.pick('0', '1', '2', '5', '3-0', '8', '-1')]

    def st_mode(self):
        return self.maybe(0.5, self.pick('KEEPREF', 'DELREF', 'ACKED'))

    def streams(self):
        k, r = self.key(), self.r
        g, cons = r.choice(GROUPS), r.choice(CONSUMERS)
        c = r.randrange(22)
        if c < 5:
            args = ['XADD', k] + self.maybe(0.1, 'NOMKSTREAM')
            if r.random() < 0.2:
                args += [a for a in self.st_trim() if a]
                if args[-2] == '~':
                    args += self.maybe(0.5, 'LIMIT', self.pick('1', '10', '0'))
            ms = r.choice(ST_MS)
            idv = self.pick('%d-*' % ms, '%d-%d' % (ms, r.randint(0, 3)), str(ms), '0-0', '0-*')
            return args + [idv] + self.st_fields()
        if c == 5:
            return ['XLEN', k]
        if c in (6, 7):
            cmd = self.pick('XRANGE', 'XREVRANGE')
            lo, hi = self.pick('-', self.st_id(False), '(0-1'), self.pick('+', self.st_id(False))
            if cmd == 'XREVRANGE':
                lo, hi = hi, lo
            return [cmd, k, lo, hi] + self.maybe(0.4, 'COUNT', self.pick('0', '1', '2', '-1'))
        if c == 8:
            return ['XDEL', k] + [self.st_id(False) for _ in range(r.randint(1, 3))]
        if c == 9:
            return ['XTRIM', k] + [a for a in self.st_trim() if a]
        if c == 10:
            sub = r.randrange(5)
            if sub == 0:
                return ['XGROUP', 'CREATE', k, g, self.pick('$', '0', self.st_id(False))] + \
                    self.maybe(0.5, 'MKSTREAM') + self.maybe(0.2, 'ENTRIESREAD',
                                                             self.pick('0', '2', '-1', '100'))
            if sub == 1:
                return ['XGROUP', 'DESTROY', k, g]
            if sub == 2:
                return ['XGROUP', 'CREATECONSUMER', k, g, cons]
            if sub == 3:
                return ['XGROUP', 'DELCONSUMER', k, g, cons]
            return ['XGROUP', 'SETID', k, g, self.pick('$', '0', self.st_id(False))] + \
                self.maybe(0.3, 'ENTRIESREAD', self.pick('0', '1', '5'))
        if c in (11, 12):
            return ['XREADGROUP', 'GROUP', g, cons] + self.maybe(
                0.5, 'COUNT', self.pick('1', '2', '10')) + self.maybe(0.1, 'NOACK') + [
                'STREAMS', k, self.pick('>', '>', '0', self.st_id(False))]
        if c == 13:
            return ['XREAD'] + self.maybe(0.5, 'COUNT', self.pick('1', '3')) + [
                'STREAMS', k, self.pick('0', '$', self.st_id(False))]
        if c == 14:
            return ['XACK', k, g] + [self.st_id(False) for _ in range(r.randint(1, 3))]
        if c == 15:
            if r.random() < 0.4:
                return ['XPENDING', k, g]
            return ['XPENDING', k, g] + self.maybe(0.2, 'IDLE', '0') + [
                '-', '+', self.pick('1', '10', '0')] + self.maybe(0.4, cons)
        if c == 16:
            return ['XCLAIM', k, g, cons, '0'] + [self.st_id(False) for _ in range(
                r.randint(1, 3))] + self.maybe(0.3, 'JUSTID') + self.maybe(0.2, 'FORCE') + \
                self.maybe(0.2, 'RETRYCOUNT', self.pick('0', '5'))
        if c == 17:
            return ['XAUTOCLAIM', k, g, cons, '0', self.pick('0', '0-0', self.st_id(False))] + \
                self.maybe(0.4, 'COUNT', self.pick('1', '2', '100')) + self.maybe(0.3, 'JUSTID')
        if c == 18:
            return ['XINFO', 'GROUPS', k]
        if c == 19:
            return ['XSETID', k, self.st_id(False)] + self.maybe(
                0.3, 'ENTRIESADDED', self.pick('0', '5', '100')) + self.maybe(
                0.3, 'MAXDELETEDID', self.st_id(False))
        if c == 20:
            ids = [self.st_id(False) for _ in range(r.randint(1, 3))]
            return ['XDELEX', k] + self.st_mode() + ['IDS', str(len(ids))] + ids
        ids = [self.st_id(False) for _ in range(r.randint(1, 3))]
        return ['XACKDEL', k, g] + self.st_mode() + ['IDS', str(len(ids))] + ids

    # ---- HyperLogLogs (8.8 only; the dataset check compares their bytes)

    def hll(self):
        k, r = self.key(), self.r
        c = r.randrange(10)
        if c < 4:
            n = r.choice([0, 1, 3, 10, 200, 600])
            return ['PFADD', k] + ['e%d' % r.randint(0, 5000) for _ in range(n)]
        if c < 7:
            return ['PFCOUNT'] + [self.key() for _ in range(r.choice([1, 1, 2, 3]))]
        if c == 7:
            return ['PFMERGE', k] + [self.key() for _ in range(r.randint(0, 3))]
        if c == 8:
            return ['SET', k, self.pick('x', 'HYLL', 'HYLL\x00\x00\x00\x00')]
        # Corrupts a HyperLogLog with ZERO (0x01) or VAL (UTF-8 c3 bf) opcodes.
        # Not with an XZERO's first byte ('x' is 0x78) at the end: Redis then
        # reads the XZERO's second byte from past its string's end, which
        # holds whatever its last edit left there.
        return ['SETRANGE', k, self.pick('4', '16', '20', '100'), self.pick('\x01', '\xff')]

    # ---- geo (8.8 only)

    def geo_member(self):
        return 'm%d' % self.r.randrange(9)       # m8 never added: a missing member

    def geo_from(self):
        if self.r.random() < 0.5:
            return ['FROMMEMBER', self.geo_member()]
        lon, lat = self.r.choice(GEO_POINTS)
        return ['FROMLONLAT', lon, lat]

    def geo_by(self):
        if self.r.random() < 0.6:
            return ['BYRADIUS', self.pick('0', '1', '50', '100', '200', '1000', '-1'),
                    self.pick(*GEO_UNITS)]
        return ['BYBOX', self.pick('10', '100', '400'), self.pick('10', '100', '400', '0'),
                self.pick(*GEO_UNITS)]

    def geo_radius(self):
        return [self.pick('0', '1', '50', '200', '1000', '-1'), self.pick(*GEO_UNITS)]

    def geo_opts(self, store=False):
        args = self.maybe(0.5, self.pick('ASC', 'DESC'))
        if self.r.random() < 0.4:
            args += ['COUNT', self.pick('1', '2', '5', '0')]
            if not store and self.r.random() < 0.2:
                args.append('ANY')
        if not store:
            args += self.maybe(0.3, 'WITHCOORD') + self.maybe(0.3, 'WITHDIST') + \
                self.maybe(0.3, 'WITHHASH')
        return args

    def geo(self):
        k, r = self.key(), self.r
        c = r.randrange(14)
        if c < 4:
            args = ['GEOADD', k] + self.maybe(0.2, self.pick('NX', 'XX')) + self.maybe(0.2, 'CH')
            for _ in range(r.randint(1, 3)):
                lon, lat = r.choice(GEO_POINTS + [('200', '0'), ('0', '86')])
                args += [lon, lat, 'm%d' % r.randrange(8)]
            return args
        if c == 4:
            return ['GEOPOS', k] + [self.geo_member() for _ in range(r.randint(1, 3))]
        if c == 5:
            return ['GEODIST', k, self.geo_member(), self.geo_member()] + self.maybe(
                0.6, self.pick(*GEO_UNITS + ['yd']))
        if c == 6:
            return ['GEOHASH', k] + [self.geo_member() for _ in range(r.randint(0, 3))]
        if c in (7, 8, 9):
            return ['GEOSEARCH', k] + self.geo_from() + self.geo_by() + self.geo_opts()
        if c == 10:
            return ['GEOSEARCHSTORE', self.key(), k] + self.geo_from() + self.geo_by() + \
                self.geo_opts(True) + self.maybe(0.4, 'STOREDIST')
        if c == 11:
            lon, lat = r.choice(GEO_POINTS)
            return [self.pick('GEORADIUS', 'GEORADIUS_RO'), k, lon, lat] + self.geo_radius() + \
                self.geo_opts()
        if c == 12:
            return [self.pick('GEORADIUSBYMEMBER', 'GEORADIUSBYMEMBER_RO'), k,
                    self.geo_member()] + self.geo_radius() + self.geo_opts()
        lon, lat = r.choice(GEO_POINTS)
        return ['GEORADIUS', k, lon, lat, self.pick('100', '500'), 'km'] + self.maybe(
            0.5, 'COUNT', '3') + [self.pick('STORE', 'STOREDIST'), self.key()]

    def command(self, in_multi):
        """A random command (args) for one session, from the enabled
        families (their usual shares, renormalized)."""
        weights = {'strings': 0.2, 'keyspace': 0.16, 'lists': 0.14, 'hashes': 0.13,
                   'sets': 0.13, 'zsets': 0.17, 'sort': 0.07, 'arrays': 0.15, 'streams': 0.2,
                   'hll': 0.1, 'geo': 0.15}
        names = [f for f in FAMILIES if f in self.families]
        args = getattr(self, self.r.choices(names, [weights[n] for n in names])[0])()
        if self.r.random() < 0.1:
            args = self.mutate(args)
        return args

    def mutate(self, args):
        """A malformed variant: an argument dropped, added, or replaced by junk."""
        args = list(args)
        # For the blocking pops '-0' is a zero timeout: it would block for ever.
        junk = [j for j in JUNK if j != '-0'] if args[0][0] == 'B' else JUNK
        m = self.r.randrange(4)
        if m == 0 and len(args) > 1:
            del args[-1]
        elif m == 1 and args[0] not in ('ZRANK', 'ZREVRANK'):   # 7.2's WITHSCORE
            args.append(self.r.choice(junk + ['WITHSCORES', 'LIMIT', 'COUNT']))
        elif len(args) > 1:
            args[self.r.randrange(1, len(args))] = self.r.choice(junk)
        else:
            args[0] = args[0][:-1] or 'x'
        return args


# ------------------------------------------------------------------ compare modes

UNORDERED = {'SMEMBERS', 'SINTER', 'SUNION', 'SDIFF', 'KEYS', 'HKEYS', 'HVALS'}
PAIRS = {'HGETALL'}
RANDOM = {'SRANDMEMBER', 'HRANDFIELD', 'ZRANDMEMBER', 'RANDOMKEY'}
TIMES = {'TTL': 2, 'PTTL': 2000, 'EXPIRETIME': 2, 'PEXPIRETIME': 2000}
SCANS = {'SCAN', 'HSCAN', 'SSCAN', 'ZSCAN'}


LEX = {'ZRANGEBYLEX', 'ZREVRANGEBYLEX', 'ZLEXCOUNT', 'ZREMRANGEBYLEX'}


def is_lex(args):
    return len(args) > 1 and (args[0].upper() in LEX or 'BYLEX' in [a.upper() for a in args])


def mode_of(args):
    name = args[0].upper()
    if name in UNORDERED:
        return 'unordered'
    if name in PAIRS:
        return 'pairs'
    if name in RANDOM:
        return 'random'
    if name in TIMES:
        return 'time'
    if name in SCANS:
        return 'scan'
    if name == 'SPOP':
        return 'spop'
    if name == 'XPENDING' and len(args) > 3:
        return 'pending'
    if name.startswith('GEORADIUS') or name == 'GEOSEARCH':
        up = [a.upper() for a in args]
        if 'ANY' in up:
            return 'random'
        if 'ASC' not in up and 'DESC' not in up and 'COUNT' not in up:
            return 'unordered'
    if name in ('SORT', 'SORT_RO'):
        up = [a.upper() for a in args]
        by = up.index('BY') if 'BY' in up[2:] else -1
        if 'STORE' in up and (by < 0 or by + 1 >= len(up) or '*' not in up[by + 1]):
            return 'exact'      # Redis sorts a set it stores even BY nosort
        if by >= 0 and (by + 1 >= len(up) or '*' not in up[by + 1] or 'ALPHA' in up):
            # BY without a '*' (nosort) keeps a set's encoding order, and BY with ALPHA leaves
            # equal weights in qsort's order: only the multiset is defined,
            # and with LIMIT only the count.
            return 'nosort-limit' if 'LIMIT' in up else 'unordered'
    return 'exact'


def same(mode, args, ra, rb):
    """Whether two raw replies agree under a compare mode."""
    if ra == rb:
        return True
    if mode == 'exact':
        return False
    try:
        ta, tb = parse(ra), parse(rb)
    except ValueError:
        return False
    if ta[0] in (b'-', b'!') or tb[0] in (b'-', b'!'):
        return False
    return same_tree(mode, args, ta, tb)


def same_tree(mode, args, ta, tb):
    if mode == 'unordered':
        return unordered(ta) == unordered(tb)
    if mode == 'pairs':
        return unordered(ta, True) == unordered(tb, True)
    if mode == 'time':
        if ta[0] != b':' or tb[0] != b':':
            return False
        a, b = int(ta[1]), int(tb[1])
        return (a < 0 and a == b) or (a >= 0 and b >= 0 and abs(a - b) <= TIMES[args[0].upper()])
    if mode == 'pending':
        return idle_masked(ta) == idle_masked(tb)
    if mode in ('random', 'nosort-limit', 'spop'):
        # Same type and size; membership is checked by the caller.
        if ta[0] != tb[0]:
            return False
        if isinstance(ta[1], list):
            return len(ta[1]) == len(tb[1])
        return (ta[1] is None) == (tb[1] is None)
    return False


def idle_masked(node):
    """XPENDING's extended reply without the idle times (each entry's third
    element), which depend on when each server ran the command."""
    kind, val = node
    if kind != b'*' or not isinstance(val, list):
        return node
    return (kind, [(k, v[:2] + [(b':', b'')] + v[3:]) if k == b'*' and isinstance(v, list) and
                   len(v) == 4 else (k, v) for k, v in val])


def exec_modes(queued):
    return [mode_of(a) for a in queued]


# ------------------------------------------------------------------ the fuzzer

class Session:
    def __init__(self, sid, ref, sut, proto):
        self.sid, self.proto = sid, proto
        self.a, self.b = ref.client(proto, timeout=10), sut.client(proto, timeout=10)
        self.queued = None        # args of commands QUEUED in MULTI, or None

    def close(self):
        self.a.close()
        self.b.close()


class Fuzzer:
    def __init__(self, ref, sut, seed, history):
        self.ref, self.sut, self.seed = ref, sut, seed
        self.rnd = random.Random(seed)
        self.gen = Gen(self.rnd)
        self.sessions = [Session(0, ref, sut, 2), Session(1, ref, sut, 2), Session(2, ref, sut, 3)]
        self.check_a, self.check_b = ref.client(2, timeout=10), sut.client(2, timeout=10)
        self.log = []             # (step, sid, args)
        self.history = history
        self.step = 0
        self.stats = {'commands': 0, 'errors': 0, 'dataset_checks': 0, 'episodes': 0}

    def close(self):
        for s in self.sessions:
            s.close()
        self.check_a.close()
        self.check_b.close()

    # ---- one command on both servers

    def both(self, s, args, mode=None, record=True):
        if record:
            self.log.append((self.step, s.sid, args))
            if len(self.log) > 4 * self.history and not DUMP:
                del self.log[:-self.history]
        ra, rb = self.send(s.a, self.ref, args), self.send(s.b, self.sut, args)
        mode = mode or mode_of(args)
        if not same(mode, args, ra, rb):
            self.fail('reply differs (%s compare)' % mode, s, args, ra, rb)
        return ra, rb

    def send(self, client, srv, args):
        try:
            return client.cmd(*args)
        except Exception as e:     # timeout, closed connection, unparsable reply
            if srv is self.sut and not srv.alive():
                e = '%s; xkvd exited (rc %s)\n%s' % (e, srv.proc.returncode, srv.log_tail())
            self.fail('%s: no valid reply: %s' % (srv.label, e or type(e).__name__), None, args,
                      b'', bytes(client.buf))

    def fail(self, why, s, args, ra, rb):
        lines = ['MISMATCH: %s' % why,
                 'seed %d, step %d, session %s (RESP%s): %s' % (
                     self.seed, self.step, s.sid if s else '-', s.proto if s else '-', show(args)),
                 '  redis: %s' % trunc(ra), '  xkvd:  %s' % trunc(rb),
                 'last %d commands (step session: command):' % min(self.history, len(self.log))]
        for step, sid, a in self.log[-self.history:]:
            lines.append('  %6d s%d: %s' % (step, sid, show(a)))
        lines.append('replay: tests/soak/fuzz.py --seed %d --steps %d --io-engine %s' % (
            self.seed, self.step, self.engine))
        if DUMP:
            with open(DUMP, 'w') as f:
                for step, sid, a in self.log:
                    f.write(repr((step, sid, self.sessions[sid].proto, a)) + '\n')
            lines.append('full command log in %s' % DUMP)
        raise Mismatch('\n'.join(lines))

    # ---- a step

    def run_step(self):
        self.step += 1
        s = self.rnd.choice(self.sessions)
        r = self.rnd.random()
        if r < 0.01:
            return self.expiry_episode(s)
        if r < 0.05:
            return self.transaction_op(s)
        if s.queued is not None and self.rnd.random() < 0.2:
            return self.finish_multi(s)
        args = self.gen.command(s.queued is not None)
        src = args[2] if args[0] == 'ZRANGESTORE' and len(args) > 2 else args[1:2] and args[1]
        if is_lex(args) and (s.queued is not None or not self.same_scores(s, src)):
            # By lex on mixed scores is unspecified (Redis's docs): not compared.
            args = ['ZCARD', args[1]]
        mode = mode_of(args)
        if s.queued is not None:
            if mode in ('random', 'spop', 'scan', 'nosort-limit') or \
                    args[0].upper() in ('SELECT', 'FLUSHALL'):
                args = ['EXISTS', args[1] if len(args) > 1 else 'a']
            self.stats['commands'] += 1
            ra, _ = self.both(s, args, 'exact')
            if ra == b'+QUEUED\r\n':
                s.queued.append(args)
            return
        self.stats['commands'] += 1
        if mode == 'scan':
            return self.full_scan(s, args)
        ra, rb = self.both(s, args)
        if ra[:1] in b'-!':
            self.stats['errors'] += 1
        elif mode == 'spop':
            self.resync_spop(s, args, ra, rb)
        elif mode in ('random', 'nosort-limit'):
            self.check_members(s, args, ra, rb)

    def same_scores(self, s, key):
        reply = harness.decode(s.a.cmd('ZRANGE', key, '0', '-1', 'WITHSCORES'))
        if not isinstance(reply, list):
            return True        # an error (WRONGTYPE) either way
        scores = [x[1] for x in reply] if reply and isinstance(reply[0], list) else reply[1::2]
        return len(set(scores)) <= 1

    def transaction_op(self, s):
        c = self.rnd.randrange(5)
        if c == 0 or (c == 1 and s.queued is None):
            keys = [self.gen.key() for _ in range(self.rnd.randint(1, 3))]
            self.both(s, ['WATCH'] + keys)
        elif c == 1:
            self.finish_multi(s)
        elif c == 2:
            ra, _ = self.both(s, ['UNWATCH'], 'exact')
            if s.queued is not None and ra == b'+QUEUED\r\n':
                s.queued.append(['UNWATCH'])
        else:
            ra, _ = self.both(s, ['MULTI'])
            if ra == b'+OK\r\n':
                s.queued = []

    def finish_multi(self, s):
        args = ['EXEC'] if self.rnd.random() < 0.8 else ['DISCARD']
        self.log.append((self.step, s.sid, args))
        ra, rb = self.send(s.a, self.ref, args), self.send(s.b, self.sut, args)
        queued, s.queued = s.queued or [], None
        if ra == rb:
            return
        ok = False
        try:
            ta, tb = parse(ra), parse(rb)
            if args[0] == 'EXEC' and ta[0] == tb[0] == b'*' and isinstance(ta[1], list) \
                    and isinstance(tb[1], list) and len(ta[1]) == len(tb[1]) == len(queued):
                ok = all(x == y or (x[0] not in b'-!' and same_tree(mode_of(q), q, x, y))
                         for q, x, y in zip(queued, ta[1], tb[1]))
        except ValueError:
            pass
        if not ok:
            self.fail('EXEC replies differ', s, args, ra, rb)

    # ---- random and unordered replies

    def resync_spop(self, s, args, ra, rb):
        ta, tb = parse(ra), parse(rb)
        if not same_tree('random', args, ta, tb):
            self.fail('SPOP shapes differ', s, args, ra, rb)
        pa = set(e for e in elements(ta) if e is not None)
        pb = set(e for e in elements(tb) if e is not None)
        # Both sets lose the union of what either popped.
        if pb - pa:
            self.send(s.a, self.ref, ['SREM', args[1]] + sorted(pb - pa))
        if pa - pb:
            self.send(s.b, self.sut, ['SREM', args[1]] + sorted(pa - pb))

    def check_members(self, s, args, ra, rb):
        """Every member xkvd named exists on the reference (same db)."""
        name = args[0].upper()
        tb = parse(rb)
        got = [e for e in elements(tb) if e is not None]
        if not got:
            return
        if name == 'RANDOMKEY':
            if s.a.cmd('EXISTS', got[0]) != b':1\r\n':
                self.fail('RANDOMKEY named a key redis lacks', s, args, ra, rb)
            return
        kind = {'SRANDMEMBER': 'set', 'HRANDFIELD': 'hash', 'ZRANDMEMBER': 'zset'}.get(name)
        if kind == 'set':
            have = set(harness.decode(s.a.cmd('SMEMBERS', args[1])) or [])
        elif kind == 'hash':
            have = set(elements(parse(s.a.cmd('HGETALL', args[1]))))
        elif kind == 'zset':
            have = set(elements(parse(s.a.cmd('ZRANGE', args[1], '0', '-1', 'WITHSCORES'))))
        else:      # SORT BY nosort LIMIT: members of the sorted key or GET results
            return
        if isinstance(have, list):
            have = set(have)
        missing = [e for e in got if e not in have]
        if missing:
            self.fail('%s returned non-members %r' % (name, missing[:5]), s, args, ra, rb)
        up = [a.upper() for a in args]
        if len(args) > 2 and args[2].lstrip('-').isdigit() and not args[2].startswith('-') \
                and 'WITHSCORES' not in up and 'WITHVALUES' not in up and len(got) != len(set(got)):
            self.fail('%s with a positive count repeated members' % name, s, args, ra, rb)

    def full_scan(self, s, args):
        """Iterates a SCAN to the end on both servers; compares the sets."""
        pos = 1 if args[0].upper() == 'SCAN' else 2
        if len(args) <= pos:          # a malformed SCAN: compared as it is
            self.both(s, args, 'exact')
            return
        results = []
        for client, srv in ((s.a, self.ref), (s.b, self.sut)):
            cursor, seen, rounds, err = '0', set(), 0, None
            while True:
                a = list(args)
                a[pos] = cursor
                raw = self.send(client, srv, a)
                t = parse(raw)
                if t[0] in b'-!':
                    err = raw
                    break
                cursor = t[1][0][1].decode()
                items = t[1][1][1]
                if args[0].upper() in ('HSCAN', 'ZSCAN'):
                    items = [(items[k][1], items[k + 1][1]) for k in range(0, len(items), 2)]
                else:
                    items = [x[1] for x in items]
                seen.update(items)
                rounds += 1
                if cursor == '0' or rounds > 10000:
                    break
            results.append((err, sorted(seen, key=repr)))
        self.log.append((self.step, s.sid, list(args) + ['(full iteration)']))
        if results[0] != results[1]:
            self.fail('full %s differs' % args[0], s, args, repr(results[0]).encode(),
                      repr(results[1]).encode())

    # ---- short TTLs, waited out

    def expiry_episode(self, s):
        """Short TTLs on a few keys, a wait past them, then a dataset check:
        lazy and active expiry must agree once the deadlines have passed."""
        self.stats['episodes'] += 1
        if s.queued is not None:
            self.finish_multi(s)
        # Distinct keys, deadlines well past the episode's own few commands.
        for k in self.rnd.sample(KEYS, self.rnd.randint(1, 3)):
            ms = self.rnd.randint(10, 30)
            args = self.rnd.choice([['PEXPIRE', k, str(ms)], ['SET', k, 'tmp', 'PX', str(ms)],
                                    ['PSETEX', k, str(ms), 'tmp'], ['GETEX', k, 'PX', str(ms)]])
            self.log.append((self.step, s.sid, args))
            ra, rb = self.send(s.a, self.ref, args), self.send(s.b, self.sut, args)
            if ra != rb:
                self.fail('reply differs', s, args, ra, rb)
        time.sleep(0.06)
        # Reading the keys makes both servers notice the deadlines (lazy expiry).
        self.log.append((self.step, s.sid, ['EXISTS', '<every key>']))
        for k in KEYS:
            ra, rb = self.send(s.a, self.ref, ['EXISTS', k]), self.send(s.b, self.sut, ['EXISTS', k])
            if ra != rb:
                self.fail('reply differs after expiry', s, ['EXISTS', k], ra, rb)
        self.check_dataset()

    # ---- the whole dataset

    def check_dataset(self):
        self.stats['dataset_checks'] += 1
        a, b = self.check_a, self.check_b
        for db in range(16):
            self.send(a, self.ref, ['SELECT', db])
            self.send(b, self.sut, ['SELECT', db])
            sa, sb = self.send(a, self.ref, ['DBSIZE']), self.send(b, self.sut, ['DBSIZE'])
            for _ in range(10):
                if sa == sb:
                    break
                # DBSIZE counts expired keys until expiry reclaims them, on
                # both servers' own schedules: give both active expiries time.
                time.sleep(0.2)
                sa, sb = self.send(a, self.ref, ['DBSIZE']), self.send(b, self.sut, ['DBSIZE'])
            if sa != sb:
                self.fail('DBSIZE of db %d differs' % db, None, ['DBSIZE'], sa, sb)
            if db >= DBS and sa == b':0\r\n':
                continue
            ka = sorted(harness.decode(self.send(a, self.ref, ['KEYS', '*'])))
            kb = sorted(harness.decode(self.send(b, self.sut, ['KEYS', '*'])))
            if ka != kb:
                self.fail('keys of db %d differ' % db, None, ['KEYS', '*'],
                          repr(ka).encode(), repr(kb).encode())
            for k in ka:
                self.compare_key(db, k)

    def compare_key(self, db, k):
        a, b = self.check_a, self.check_b
        ta, tb = self.send(a, self.ref, ['TYPE', k]), self.send(b, self.sut, ['TYPE', k])
        if ta != tb:
            self.fail('TYPE of %r in db %d differs' % (k, db), None, ['TYPE', k], ta, tb)
        pa, pb = self.send(a, self.ref, ['PTTL', k]), self.send(b, self.sut, ['PTTL', k])
        if not same('time', ['PTTL'], pa, pb):
            self.fail('PTTL of %r in db %d differs' % (k, db), None, ['PTTL', k], pa, pb)
        kind = ta[1:-2].decode()
        read = {'string': (['GET', k], 'exact'), 'list': (['LRANGE', k, '0', '-1'], 'exact'),
                'hash': (['HGETALL', k], 'pairs'), 'set': (['SMEMBERS', k], 'unordered'),
                'zset': (['ZRANGE', k, '0', '-1', 'WITHSCORES'], 'exact'),
                'array': (['ARSCAN', k, '0', '18446744073709551614'], 'exact'),
                'stream': (['XRANGE', k, '-', '+'], 'exact')}.get(kind)
        if kind == 'stream':
            extras = [['XINFO', 'GROUPS', k]]
            groups = parse(self.send(a, self.ref, ['XINFO', 'GROUPS', k]))
            for g in groups[1] if isinstance(groups[1], list) else []:
                if g[0] in b'*%' and isinstance(g[1], list):
                    flat = elements(g)
                    if b'name' in flat:
                        extras.append(['XPENDING', k, flat[flat.index(b'name') + 1].decode(),
                                       '-', '+', '1000'])
            for extra in extras:
                ea, eb = self.send(a, self.ref, extra), self.send(b, self.sut, extra)
                if not same(mode_of(extra), extra, ea, eb):
                    self.fail('%s of %r in db %d differs' % (extra[0], k, db), None, extra,
                              ea, eb)
        if kind == 'array':
            for extra in (['ARINFO', k, 'FULL'], ['ARNEXT', k], ['DUMP', k]):
                ea, eb = self.send(a, self.ref, extra), self.send(b, self.sut, extra)
                if ea != eb:
                    self.fail('%s of %r in db %d differs' % (extra[0], k, db), None, extra,
                              ea, eb)
        if read:
            ca, cb = self.send(a, self.ref, read[0]), self.send(b, self.sut, read[0])
            if not same(read[1], read[0], ca, cb):
                self.fail('content of %r (%s) in db %d differs' % (k, kind, db), None,
                          read[0], ca, cb)


def show(args, limit=300):
    s = ' '.join(harness._show_arg(a) for a in args)
    return s if len(s) <= limit else s[:limit] + '... (%d args)' % len(args)


def trunc(raw, limit=400):
    s = repr(raw)
    return s if len(s) <= limit else s[:limit] + '... (%d bytes)' % len(raw)


def run(xkvd, engine, seed, steps, seconds, history, check_every=500, quiet=False,
        redis=None, only=None):
    """One fuzz run on fresh servers. Returns (ok, message, stats)."""
    ref = harness.Server('redis', label='redis', redis_binary=redis).start()
    sut = None
    fz = None
    try:
        sut = harness.Server('xkvd', binary=xkvd, engine=engine, label='xkvd').start()
        families = list(only or BASE_FAMILIES)
        with ref.client() as c:
            version = harness.info_fields(c.call('INFO', 'server'))['server']['redis_version']
        r88 = tuple(int(x) for x in version.split('.')[:2]) >= (8, 8)
        if r88 and not only:
            families += R88_FAMILIES
        if not r88 and set(families) & set(R88_FAMILIES):
            raise SystemExit('fuzz: %s need a Redis 8.8 reference (--redis)' %
                             ','.join(sorted(set(families) & set(R88_FAMILIES))))
        fz = Fuzzer(ref, sut, seed, history)
        fz.gen.families = families
        fz.engine = engine
        deadline = time.monotonic() + seconds if seconds else None
        while (steps is None or fz.step < steps) and \
                (deadline is None or time.monotonic() < deadline):
            fz.run_step()
            if fz.step % check_every == 0:
                for s in fz.sessions:
                    if s.queued is not None:
                        fz.finish_multi(s)
                fz.check_dataset()
        for s in fz.sessions:
            if s.queued is not None:
                fz.finish_multi(s)
        fz.check_dataset()
        reports = sut.sanitizer_reports()
        if reports:
            return False, 'sanitizer reports:\n' + '\n'.join(reports[:40]), fz.stats, fz.step
        return True, '', fz.stats, fz.step
    except Mismatch as e:
        return False, str(e), fz.stats if fz else {}, fz.step if fz else 0
    finally:
        if fz:
            fz.close()
        if sut:
            sut.close()
        ref.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--xkvd', default=os.path.join(harness.REPO, '.output', 'xkvd'))
    ap.add_argument('--io-engine', choices=('io_uring', 'epoll', 'both'), default='io_uring',
                    help="xkvd's I/O engine; 'both' alternates seed by seed")
    ap.add_argument('--seed', type=int, default=None, help='first seed (default: from the clock)')
    ap.add_argument('--seeds', type=int, default=1, help='how many consecutive seeds (time split evenly)')
    ap.add_argument('--steps', type=int, default=None, help='steps per seed')
    ap.add_argument('--seconds', type=float, default=None, help='total time budget')
    ap.add_argument('--history', type=int, default=40, help='commands shown on a mismatch')
    ap.add_argument('--dump', help='on a mismatch, write every command sent to this file')
    ap.add_argument('--redis', help='the reference redis-server (default: Debian\'s)')
    ap.add_argument('--only', help='comma-separated families: ' + ','.join(FAMILIES))
    args = ap.parse_args()
    only = args.only.split(',') if args.only else None
    if only and set(only) - set(FAMILIES):
        ap.error('unknown family: %s' % ','.join(sorted(set(only) - set(FAMILIES))))
    global DUMP
    DUMP = args.dump
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.steps is None and args.seconds is None:
        args.steps = 20000
    seed0 = args.seed if args.seed is not None else int(time.time()) % 1000000
    failed = 0
    total_steps = 0
    t0 = time.monotonic()
    for i in range(args.seeds):
        seed = seed0 + i
        per = None
        if args.seconds:
            per = max(1.0, (args.seconds - (time.monotonic() - t0)) / (args.seeds - i))
        engine = args.io_engine if args.io_engine != 'both' else ('io_uring', 'epoll')[i % 2]
        ok, msg, stats, step = run(os.path.abspath(args.xkvd), engine, seed,
                                   args.steps, per, args.history, redis=args.redis, only=only)
        total_steps += step
        print('fuzz: seed %d (%s): %s after %d steps %s' % (
            seed, engine, 'ok' if ok else 'FAILED', step, stats))
        if not ok:
            failed += 1
            print(msg)
        sys.stdout.flush()
    print('fuzz: %d seeds, %d steps, %d failed, %.0f s' % (
        args.seeds, total_steps, failed, time.monotonic() - t0))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
