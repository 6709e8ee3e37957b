# SPDX-License-Identifier: GPL-2.0-only
"""Set commands: SADD SREM SCARD SISMEMBER SMISMEMBER SMEMBERS, SINTER SUNION
SDIFF and their STORE forms, SINTERCARD, SMOVE, SPOP, SRANDMEMBER, SSCAN.

Redis 7.0 keeps small string sets in a hash table and xkv (as 7.2) in a
listpack, so member order differs: multi-member replies are compared as
their first line (type and length) plus the sorted members, and random
replies (SPOP, SRANDMEMBER) by shape: type, length, distinctness and
membership."""

import threading
import time

from harness import decode, test

INTS = list(range(-300, 300))                      # 600 integers: past the intset limit
WORDS = ['w%d' % i for i in range(200)]           # past the listpack entry limit
LONG = 'L' * 65                                   # past the listpack value limit


class SetReply:
    """A step whose reply is a collection in unspecified order: compared as
    its header line (RESP2 '*n' or RESP3 '~n') and its sorted items. Other
    replies (errors, integers) are compared as they are."""

    def __init__(self, *args):
        self.args = args

    def run(self, c):
        raw = c.cmd(*self.args)
        if raw[:1] not in b'*~':
            return raw
        value = decode(raw)
        if value is None:
            return raw
        head = raw[:raw.index(b'\r\n')]
        # SSCAN: [cursor, [members]]
        if len(value) == 2 and isinstance(value[1], list) and self.args[0].upper() == 'SSCAN':
            return head, value[0], sorted(value[1])
        return head, sorted(value)

    def __repr__(self):
        return ' '.join(map(str, self.args)) + ' (unordered)'


class Shape:
    """A step whose reply is random: compared by header line, whether the
    members are distinct (if `distinct`), and whether they all belong to
    pool. A single bulk reply is reduced to its membership in pool."""

    def __init__(self, pool, *args, distinct=True):
        self.pool = set(x if isinstance(x, bytes) else str(x).encode() for x in pool)
        self.args, self.distinct = args, distinct

    def run(self, c):
        raw = c.cmd(*self.args)
        value = decode(raw)
        if isinstance(value, bytes):
            return 'bulk', value in self.pool
        if not isinstance(value, list):
            return raw
        head = raw[:raw.index(b'\r\n')]
        return (head, all(v in self.pool for v in value),
                len(set(value)) == len(value) if self.distinct else None)

    def __repr__(self):
        return ' '.join(map(str, self.args)) + ' (shape)'


class ScanKeys:
    """A step: a whole SCAN iteration with the given options, as sorted keys."""

    def __init__(self, *opts):
        self.opts = opts

    def run(self, c):
        cursor, keys = b'0', []
        while True:
            cursor, batch = c.call('SCAN', cursor, *self.opts)
            keys += batch
            if cursor == b'0':
                return sorted(keys)

    def __repr__(self):
        return 'SCAN ... ' + ' '.join(map(str, self.opts))


def both(t, steps):
    """Compare in RESP2 and RESP3, on a fresh database each time."""
    for proto in (2, 3):
        t.compare([('FLUSHALL',)] + steps, proto=proto)


@test
def sadd_srem_membership(t):
    both(t, [
        ('SADD', 's', 'a', 'b', 'c', 'a'), ('SADD', 's', 'a'), ('SADD', 's', 'd', 'b'),
        ('SCARD', 's'), ('SISMEMBER', 's', 'a'), ('SISMEMBER', 's', 'zz'), ('SISMEMBER', 'nokey', 'a'),
        ('SMISMEMBER', 's', 'a', 'zz', 'd', 'a'), ('SMISMEMBER', 'nokey', 'a', 'b'),
        SetReply('SMEMBERS', 's'), SetReply('SMEMBERS', 'nokey'), ('SCARD', 'nokey'),
        ('SREM', 's', 'a', 'zz', 'a'), ('SREM', 's', 'zz'), ('SREM', 'nokey', 'a'), ('SCARD', 's'),
        ('SREM', 's', 'b', 'c', 'd', 'e'), ('EXISTS', 's'), ('TYPE', 's'),
        ('SADD', 'bin', b'a\x00b', b'\r\n', b'\xff', ''), ('SISMEMBER', 'bin', b'a\x00b'),
        ('SISMEMBER', 'bin', b'a'), ('SISMEMBER', 'bin', ''), SetReply('SMEMBERS', 'bin'),
        ('SREM', 'bin', ''), ('SCARD', 'bin'), ('TYPE', 'bin'),
        ('SADD', 's'), ('SADD',), ('SREM', 's'), ('SCARD',), ('SCARD', 'a', 'b'),
        ('SISMEMBER', 's'), ('SISMEMBER', 's', 'a', 'b'), ('SMISMEMBER', 's'), ('SMEMBERS',),
        ('smembers', 's', 'x'), ('sadd', 'lower', 'x'), ('scard', 'lower'),
    ])


@test
def integer_members(t):
    # Canonical integers and look-alikes: an intset must not confuse them.
    both(t, [
        ('SADD', 'i', 1, 2, 3, -5, 0, 40000, -40000, 3000000000, '9223372036854775807',
         '-9223372036854775808'),
        ('SISMEMBER', 'i', '01'), ('SISMEMBER', 'i', '+1'), ('SISMEMBER', 'i', ' 1'),
        ('SISMEMBER', 'i', '-0'), ('SISMEMBER', 'i', '1'), ('SISMEMBER', 'i', '-9223372036854775808'),
        ('SISMEMBER', 'i', '9223372036854775808'), ('SADD', 'i', '01', '+1', '-0', '1.0'),
        ('SCARD', 'i'), ('SISMEMBER', 'i', '01'), ('SISMEMBER', 'i', '1'), SetReply('SMEMBERS', 'i'),
        ('SREM', 'i', '1', '01', '2'), ('SCARD', 'i'), SetReply('SMEMBERS', 'i'),
        ('SADD', 'j', 10, 9, 8, 7), ('SMEMBERS', 'j'),    # an intset in both: ordered
    ])


@test
def encoding_thresholds(t):
    # Sets that cross each threshold answer the same whatever the encoding.
    both(t, [
        ('SADD', 'ints', *INTS), ('SCARD', 'ints'), ('SISMEMBER', 'ints', 299),
        ('SISMEMBER', 'ints', 300), SetReply('SMEMBERS', 'ints'),
        ('SADD', 'small', *INTS[:100]), ('SADD', 'small', 'x'), ('SCARD', 'small'),
        ('SISMEMBER', 'small', -250), ('SISMEMBER', 'small', 'x'), SetReply('SMEMBERS', 'small'),
        ('SADD', 'words', *WORDS[:128]), ('SADD', 'words', WORDS[128]), ('SCARD', 'words'),
        ('SISMEMBER', 'words', 'w128'), SetReply('SMEMBERS', 'words'),
        ('SADD', 'long', 'a', 1), ('SADD', 'long', LONG), ('SISMEMBER', 'long', LONG),
        ('SISMEMBER', 'long', LONG[:64]), ('SCARD', 'long'), SetReply('SMEMBERS', 'long'),
        ('SADD', 'grow', 1), *[('SADD', 'grow', i) for i in range(2, 520, 37)],
        ('SADD', 'grow', *range(500, 530)), ('SCARD', 'grow'), SetReply('SMEMBERS', 'grow'),
        ('SREM', 'ints', *INTS[:590]), ('SCARD', 'ints'), SetReply('SMEMBERS', 'ints'),
        ('SADD', 'ints', 'now-a-string'), ('SCARD', 'ints'),
    ])


@test
def wrong_type(t):
    t.compare([
        ('SET', 'str', 'x'), ('SADD', 's', 'a'),
        ('SADD', 'str', 'a'), ('SREM', 'str', 'a'), ('SCARD', 'str'), ('SISMEMBER', 'str', 'a'),
        ('SMISMEMBER', 'str', 'a'), ('SMEMBERS', 'str'), ('SINTER', 'str'), ('SINTER', 's', 'str'),
        ('SINTER', 'nokey', 'str'), ('SINTER', 'str', 'nokey'), ('SUNION', 'nokey', 'str'),
        ('SDIFF', 'nokey', 'str'), ('SDIFF', 's', 'nokey', 'str'), ('SINTERSTORE', 'd', 'str'),
        ('SUNIONSTORE', 'd', 's', 'str'), ('SDIFFSTORE', 'd', 'str'), ('EXISTS', 'd'),
        ('SINTERCARD', 1, 'str'), ('SINTERCARD', 2, 'nokey', 'str'), ('SINTERCARD', 2, 'str', 'nokey'),
        ('SMOVE', 's', 'str', 'a'), ('SMOVE', 'str', 's', 'a'), ('SMOVE', 'nokey', 'str', 'a'),
        ('SMEMBERS', 's'), ('SPOP', 'str'), ('SPOP', 'str', 1), ('SPOP', 'str', -1),
        ('SRANDMEMBER', 'str'), ('SRANDMEMBER', 'str', 1), ('SRANDMEMBER', 'str', 'abc'),
        ('SSCAN', 'str', 0), ('SSCAN', 'str', 'abc'), ('GET', 'str'),
    ])


def algebra_fixture():
    return [
        ('SADD', 'a', 1, 2, 3, 4, 5), ('SADD', 'b', 4, 5, 6, 'x'), ('SADD', 'c', 5, 'x', 'y'),
        ('SADD', 'big', *WORDS), ('SADD', 'big', 5), ('SADD', 'ints', *INTS),
        ('SADD', 'half', *WORDS[::2]), ('SET', 'str', 'v'),
    ]


@test
def inter_union_diff(t):
    both(t, algebra_fixture() + [
        SetReply('SINTER', 'a', 'b'), SetReply('SINTER', 'a', 'b', 'c'), SetReply('SINTER', 'a'),
        SetReply('SINTER', 'a', 'a'), SetReply('SINTER', 'a', 'nokey'), SetReply('SINTER', 'nokey'),
        SetReply('SINTER', 'big', 'half'), SetReply('SINTER', 'big', 'ints', 'a'),
        SetReply('SUNION', 'a', 'b', 'c'), SetReply('SUNION', 'a', 'nokey'), SetReply('SUNION', 'nokey'),
        SetReply('SUNION', 'half', 'a', 'ints'), SetReply('SUNION', 'a', 'a'),
        SetReply('SDIFF', 'a', 'b'), SetReply('SDIFF', 'b', 'a', 'c'), SetReply('SDIFF', 'a', 'a'),
        SetReply('SDIFF', 'a', 'nokey'), SetReply('SDIFF', 'nokey', 'a'), SetReply('SDIFF', 'big', 'half'),
        SetReply('SDIFF', 'half', 'big'), SetReply('SDIFF', 'ints', 'a', 'b'),
        SetReply('SDIFF', 'big', 'a', 'b', 'c', 'x1', 'x2', 'x3', 'half'),
        SetReply('SDIFF', 'a', 'big', 'half', 'ints'),
        # More keys than a lockset holds: the dispatcher locks the whole database.
        SetReply('SUNION', *['k%d' % i for i in range(200)], 'a', 'c'),
        SetReply('SINTER', 'a', *(['b'] * 200)), ('SINTERCARD', 201, 'a', *(['a', 'b'] * 100)),
        ('SUNIONSTORE', 'many', *['k%d' % i for i in range(200)], 'b'), ('SCARD', 'many'),
        ('SINTER',), ('SUNION',), ('SDIFF',),
    ])


@test
def store_variants(t):
    both(t, algebra_fixture() + [
        ('SINTERSTORE', 'd', 'a', 'b'), SetReply('SMEMBERS', 'd'),
        ('SUNIONSTORE', 'd', 'a', 'b', 'c'), SetReply('SMEMBERS', 'd'),
        ('SDIFFSTORE', 'd', 'a', 'b'), SetReply('SMEMBERS', 'd'),
        ('SDIFFSTORE', 'd', 'big', 'half'), ('SCARD', 'd'), SetReply('SMEMBERS', 'd'),
        # The destination is overwritten whatever its type, and loses its TTL.
        ('SUNIONSTORE', 'str', 'a'), ('TYPE', 'str'), SetReply('SMEMBERS', 'str'),
        ('SET', 'str2', 'v', 'EX', 100), ('SINTERSTORE', 'str2', 'a', 'a'), ('TTL', 'str2'),
        ('EXPIRE', 'd', 100), ('SUNIONSTORE', 'd', 'c'), ('TTL', 'd'),
        # An empty result deletes the destination.
        ('SINTERSTORE', 'd', 'a', 'nokey'), ('EXISTS', 'd'), ('SET', 'd', 'v'),
        ('SDIFFSTORE', 'd', 'a', 'a'), ('EXISTS', 'd'), ('SET', 'd', 'v'),
        ('SUNIONSTORE', 'd', 'nokey'), ('EXISTS', 'd'), ('SINTERSTORE', 'd', 'nokey'),
        # The destination can be a source.
        ('SUNIONSTORE', 'a', 'a', 'c'), SetReply('SMEMBERS', 'a'),
        ('SINTERSTORE', 'b', 'b', 'a'), SetReply('SMEMBERS', 'b'),
        ('SDIFFSTORE', 'c', 'c', 'b'), SetReply('SMEMBERS', 'c'),
        ('SINTERSTORE', 'd'), ('SUNIONSTORE', 'd'), ('SDIFFSTORE', 'd'),
        ('SINTERSTORE', 'd', 'str', 'nokey'), ('SUNIONSTORE', 'd', 'big', 'ints'), ('SCARD', 'd'),
    ])


@test
def sintercard(t):
    both(t, algebra_fixture() + [
        ('SINTERCARD', 2, 'a', 'b'), ('SINTERCARD', 3, 'a', 'b', 'c'), ('SINTERCARD', 1, 'a'),
        ('SINTERCARD', 2, 'a', 'nokey'), ('SINTERCARD', 1, 'nokey'), ('SINTERCARD', 2, 'big', 'half'),
        ('SINTERCARD', 2, 'big', 'half', 'LIMIT', 10), ('SINTERCARD', 2, 'big', 'half', 'limit', 0),
        ('SINTERCARD', 2, 'big', 'half', 'LIMIT', 1000), ('SINTERCARD', 1, 'a', 'LIMIT', 1, 'LIMIT', 3),
        ('SINTERCARD', 2, 'a', 'LIMIT'), ('SINTERCARD', 1, 'LIMIT'), ('SINTERCARD', 1, 'LIMIT', 'LIMIT', 5),
        ('SINTERCARD', 0, 'a'), ('SINTERCARD', -1, 'a'), ('SINTERCARD', 'abc', 'a'),
        ('SINTERCARD', '9223372036854775808', 'a'), ('SINTERCARD', 3, 'a', 'b'),
        ('SINTERCARD', 1, 'a', 'LIMIT', -1), ('SINTERCARD', 1, 'a', 'LIMIT', 'abc'),
        ('SINTERCARD', 1, 'str', 'LIMIT', -1), ('SINTERCARD', 1, 'a', 'LIMIT'),
        ('SINTERCARD', 1, 'a', 'FOO'), ('SINTERCARD', 1, 'a', 'LIMIT', 1, 'extra'),
        ('SINTERCARD', 1), ('SINTERCARD',),
        ('SINTERCARD', 9, 'a', 'b', 'c', 'a', 'b', 'c', 'a', 'b', 'c'),
    ])


@test
def smove(t):
    both(t, [
        ('SADD', 's', 'a', 'b', 1), ('SADD', 'd', 'x'), ('SET', 'str', 'v'),
        ('SMOVE', 's', 'd', 'a'), ('SMOVE', 's', 'd', 'a'), SetReply('SMEMBERS', 's'),
        SetReply('SMEMBERS', 'd'), ('SMOVE', 's', 'new', 1), SetReply('SMEMBERS', 'new'),
        ('SMOVE', 's', 's', 'b'), ('SMOVE', 's', 's', 'zz'), ('SMOVE', 'nokey', 'd', 'a'),
        ('SMOVE', 'nokey', 'str', 'a'), ('SMOVE', 's', 'str', 'b'), ('SMOVE', 'str', 's', 'b'),
        ('SMOVE', 's', 'd', 'x'), ('SMOVE', 's', 'd', 'b'), ('EXISTS', 's'),   # emptied: deleted
        SetReply('SMEMBERS', 'd'), ('SMOVE', 'd', 'new', 'x'), ('SCARD', 'new'),
        ('SADD', 'ints', 1, 2), ('SMOVE', 'd', 'ints', 'a'), SetReply('SMEMBERS', 'ints'),
        ('SMOVE', 's', 'd'), ('SMOVE', 's', 'd', 'a', 'b'),
    ])


@test
def spop(t):
    both(t, [
        ('SPOP', 'nokey'), ('SPOP', 'nokey', 0), ('SPOP', 'nokey', 3), ('SPOP', 'nokey', -1),
        ('SPOP', 'nokey', 'abc'), ('SPOP', 'nokey', '1.5'), ('SPOP', 'nokey', 1, 2), ('SPOP',),
        ('SADD', 's', 'a', 'b', 'c'), ('SPOP', 's', 0), ('SPOP', 's', -5), ('SPOP', 's', 1, 2),
        Shape('abc', 'SPOP', 's'), ('SCARD', 's'), Shape('abc', 'SPOP', 's', 1), ('SCARD', 's'),
        Shape('abc', 'SPOP', 's', 5), ('EXISTS', 's'),
        ('SADD', 's', 'a', 'b', 'c'), SetReply('SPOP', 's', 3), ('EXISTS', 's'),
        ('SADD', 's', 'a'), Shape('a', 'SPOP', 's'), ('EXISTS', 's'),
        ('SADD', 'ints', *INTS), Shape(INTS, 'SPOP', 'ints', 100), ('SCARD', 'ints'),
        Shape(INTS, 'SPOP', 'ints'), ('SCARD', 'ints'), Shape(INTS, 'SPOP', 'ints', 450), ('SCARD', 'ints'),
        Shape(INTS, 'SPOP', 'ints', '9223372036854775807'), ('EXISTS', 'ints'),
        ('SADD', 'w', *WORDS), Shape(WORDS, 'SPOP', 'w', 199), ('SCARD', 'w'),
        Shape(WORDS, 'SPOP', 'w', 1), ('EXISTS', 'w'),
        ('SADD', 'small', *INTS[:50]), Shape(INTS, 'SPOP', 'small', 20), ('SCARD', 'small'),
        ('SADD', 'lp', *WORDS[:50]), Shape(WORDS, 'SPOP', 'lp', 49), ('SCARD', 'lp'),
    ])


@test
def spop_leaves_no_member_behind(t):
    # Popped members are gone, and together with the rest make the set.
    for srv in (t.ref, t.sut):
        with srv.client() as c:
            for key, members in (('ints', INTS), ('w', WORDS), ('lp', WORDS[:100])):
                c.call('SADD', key, *members)
                popped = c.call('SPOP', key, len(members) // 3)
                popped.append(c.call('SPOP', key))
                rest = c.call('SMEMBERS', key)
                assert not set(popped) & set(rest), (srv.label, key)
                want = set(str(m).encode() for m in members)
                assert set(popped) | set(rest) == want, (srv.label, key)
                assert len(popped) + len(rest) == len(members), (srv.label, key)


@test
def srandmember(t):
    both(t, [
        ('SRANDMEMBER', 'nokey'), ('SRANDMEMBER', 'nokey', 0), ('SRANDMEMBER', 'nokey', 5),
        ('SRANDMEMBER', 'nokey', -5), ('SRANDMEMBER', 'nokey', 'abc'),
        ('SRANDMEMBER', 'nokey', '-9223372036854775808'), ('SRANDMEMBER', 'nokey', 1, 2),
        ('SRANDMEMBER',), ('SADD', 's', 'a', 'b', 'c'), ('SRANDMEMBER', 's', 0),
        ('SRANDMEMBER', 's', '1.5'), ('SRANDMEMBER', 's', '-9223372036854775808'),
        Shape('abc', 'SRANDMEMBER', 's'), Shape('abc', 'SRANDMEMBER', 's', 1),
        Shape('abc', 'SRANDMEMBER', 's', 2), SetReply('SRANDMEMBER', 's', 3),
        SetReply('SRANDMEMBER', 's', 100), Shape('abc', 'SRANDMEMBER', 's', -1),
        Shape('abc', 'SRANDMEMBER', 's', -10, distinct=False), ('SCARD', 's'),
        ('SADD', 'ints', *INTS), ('SADD', 'w', *WORDS), ('SADD', 'lp', *WORDS[:100]),
        ('SADD', 'is', *INTS[:100]),
        *[Shape(pool, 'SRANDMEMBER', key, n)
          for key, pool in (('ints', INTS), ('w', WORDS), ('lp', WORDS), ('is', INTS))
          for n in (1, 5, 40, 70, 99, 150, 199)],
        *[Shape(pool, 'SRANDMEMBER', key, n, distinct=False)
          for key, pool in (('ints', INTS), ('w', WORDS), ('lp', WORDS), ('is', INTS))
          for n in (-1, -5, -99, -100, -1000)],
        SetReply('SRANDMEMBER', 'w', 200), SetReply('SRANDMEMBER', 'is', 1000), ('SCARD', 'w'),
    ])


@test
def srandmember_covers_the_set(t):
    # Many draws with repeats reach every member (a sanity check on spread).
    for srv in (t.ref, t.sut):
        with srv.client() as c:
            for key, members in (('w', WORDS), ('lp', WORDS[:60]), ('is', INTS[:60])):
                c.call('SADD', key, *members)
                got = c.call('SRANDMEMBER', key, -20 * len(members))
                assert len(got) == 20 * len(members)
                assert set(got) == set(str(m).encode() for m in members), (srv.label, key)
                got = c.call('SRANDMEMBER', key, len(members) - 1)
                assert len(set(got)) == len(members) - 1, (srv.label, key)


@test
def sscan(t):
    both(t, [
        ('SADD', 'is', *INTS[:40]), ('SADD', 's', 'a', 'b', 'c', 'ab'), ('SET', 'str', 'v'),
        ('SSCAN', 'is', 0), ('SSCAN', 'is', 12345), ('SSCAN', 'is', 0, 'MATCH', '-1*'),
        ('SSCAN', 'is', 0, 'COUNT', 1), ('SSCAN', 'is', 0, 'count', 3, 'match', '*5'),
        SetReply('SSCAN', 's', 0), SetReply('SSCAN', 's', 0, 'MATCH', 'a*'),
        SetReply('SSCAN', 's', 0, 'MATCH', '*'), SetReply('SSCAN', 's', 0, 'MATCH', 'zz*'),
        SetReply('SSCAN', 's', 0, 'MATCH', 'a*', 'MATCH', '?'),
        ('SSCAN', 'nokey', 0), ('SSCAN', 'nokey', 'abc'), ('SSCAN', 'nokey', 0, 'COUNT', 0),
        ('SSCAN', 's', 'abc'), ('SSCAN', 's', '1.5'), ('SSCAN', 's', ' 0'), ('SSCAN', 's', '0 '),
        ('SSCAN', 's', '18446744073709551616'), ('SSCAN', 'is', '-1'), ('SSCAN', 'is', '+0'),
        ('SSCAN', 'is', ''), ('SSCAN', 'is', '18446744073709551615'),
        ('SSCAN', 's', 0, 'COUNT', 0), ('SSCAN', 's', 0, 'COUNT', -1), ('SSCAN', 's', 0, 'COUNT', 'x'),
        ('SSCAN', 's', 0, 'MATCH'), ('SSCAN', 's', 0, 'COUNT'), ('SSCAN', 's', 0, 'TYPE', 'set'),
        ('SSCAN', 's', 0, 'FOO', 'bar'), ('SSCAN', 's'), ('SSCAN',),
    ])


def full_scan(c, key, *opts):
    cursor, seen, calls = b'0', [], 0
    while True:
        cursor, batch = c.call('SSCAN', key, cursor, *opts)
        seen += batch
        calls += 1
        if cursor == b'0':
            return seen, calls


@test
def sscan_iterates_big_sets(t):
    members = ['m%d' % i for i in range(5000)]

    def scan(srv):
        with srv.client() as c:
            c.call('SADD', 'big', *members)
            c.call('SADD', 'ints', *INTS)
            out = []
            for key, opts in (('big', ()), ('big', ('COUNT', 100)), ('big', ('MATCH', 'm1*')),
                              ('ints', ('COUNT', 7)), ('ints', ('MATCH', '-*', 'COUNT', 1000))):
                seen, calls = full_scan(c, key, *opts)
                out.append((key, opts, sorted(set(seen))))
                # Every step of a big table is bounded by COUNT (roughly).
                if key == 'big' and not opts:
                    assert calls > 50, calls
            return out
    t.same(scan, 'SSCAN iterations')


@test
def sscan_guarantee_while_changing(t):
    # Members present for a whole iteration are returned while others are
    # added and removed between calls (the table grows and shrinks).
    stay = ['s%d' % i for i in range(2000)]
    for srv in (t.ref, t.sut):
        with srv.client() as c:
            c.call('SADD', 'k', *stay)
            cursor, seen, step = b'0', set(), 0
            while True:
                cursor, batch = c.call('SSCAN', 'k', cursor, 'COUNT', 20)
                seen.update(batch)
                step += 1
                if step == 3:
                    c.call('SADD', 'k', *['x%d' % i for i in range(20000)])
                if step == 30:
                    c.call('SREM', 'k', *['x%d' % i for i in range(20000)])
                if cursor == b'0':
                    break
            missing = set(s.encode() for s in stay) - seen
            assert not missing, (srv.label, len(missing))


@test
def expired_sets(t):
    steps = [('SADD', 's', 'a', 'b'), ('PEXPIRE', 's', 1)]
    t.compare(steps)
    time.sleep(0.05)
    t.compare([
        ('SCARD', 's'), ('SISMEMBER', 's', 'a'), ('SADD', 's', 'c'), SetReply('SMEMBERS', 's'),
        ('TTL', 's'), ('SADD', 'e', 1), ('PEXPIRE', 'e', 1),
    ])
    time.sleep(0.05)
    t.compare([('SMOVE', 's', 'e', 'c'), ('TTL', 'e'), SetReply('SMEMBERS', 'e'), ('EXISTS', 's')])


@test
def key_ops_on_sets(t):
    # Generic commands see the set type (TYPE, SCAN TYPE, COPY, RENAME).
    both(t, [
        ('SADD', 's', 'a', 'b', 1), ('SADD', 'ints', *INTS[:10]), ('SET', 'str', 'v'),
        ('TYPE', 's'), ('TYPE', 'ints'), ScanKeys('TYPE', 'set'), ScanKeys('TYPE', 'SET', 'MATCH', 'i*'),
        ('RENAME', 's', 's2'), SetReply('SMEMBERS', 's2'), ('COPY', 's2', 's3'),
        ('SADD', 's3', 'new'), ('SCARD', 's2'), ('SCARD', 's3'), ('DEL', 's2', 'ints'),
        ('EXISTS', 's2', 's3', 'ints'),
    ])


@test
def concurrent_moves_keep_every_member(t):
    # SMOVE, SINTERSTORE/SUNIONSTORE and SINTERCARD over keys in different
    # shards, from several connections at once: no deadlock, nothing lost.
    keys = ['a', 'b', 'c', 'd']
    members = ['m%d' % i for i in range(300)]
    srv = t.sut
    with srv.client() as c:
        c.call('SADD', 'a', *members)
    errors = []

    def worker(n):
        try:
            with srv.client(timeout=20) as c:
                for i in range(300):
                    src, dst = keys[(n + i) % 4], keys[(n + i + 1) % 4]
                    c.call('SMOVE', src, dst, members[(n * 37 + i) % len(members)])
                    c.call('SINTERCARD', 4, 'd', 'c', 'b', 'a', 'LIMIT', 5)
                    c.call('SUNIONSTORE', 'u%d' % n, *keys)
                    c.call('SINTER', 'a', 'c')
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert not errors, errors
    assert not any(th.is_alive() for th in threads), 'workers stuck'
    with srv.client() as c:
        total = sum(c.call('SCARD', k) for k in keys)
        union = c.call('SUNION', *keys)
    assert total == len(members) and sorted(union) == sorted(m.encode() for m in members)
