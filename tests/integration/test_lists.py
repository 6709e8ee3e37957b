# SPDX-License-Identifier: GPL-2.0-only
"""List commands (the non-blocking ones), in RESP2 and RESP3, and a
randomized differential run with small list-max-listpack-size values so
that node splits, merges and encoding changes happen in xkvd."""

import random

from harness import Ignore, RespError, info_fields, test, xkv_only

WRONGTYPE_STEPS = [
    ('SET', 's', 'str'),
    ('LPUSH', 's', 'a'), ('RPUSH', 's', 'a'), ('LPUSHX', 's', 'a'), ('RPUSHX', 's', 'a'),
    ('LPOP', 's'), ('RPOP', 's'), ('LPOP', 's', 2), ('RPOP', 's', 0), ('LLEN', 's'),
    ('LRANGE', 's', 0, -1), ('LINDEX', 's', 0), ('LSET', 's', 0, 'x'),
    ('LINSERT', 's', 'BEFORE', 'a', 'b'), ('LREM', 's', 0, 'a'), ('LTRIM', 's', 0, 1),
    ('LPOS', 's', 'a'), ('LPOS', 's', 'a', 'COUNT', 0), ('LMOVE', 's', 'd', 'LEFT', 'RIGHT'),
    ('RPOPLPUSH', 's', 'd'), ('RPUSH', 'l', 'x'), ('LMOVE', 'l', 's', 'LEFT', 'LEFT'),
    ('RPOPLPUSH', 'l', 's'), ('LRANGE', 'l', 0, -1), ('LMPOP', 1, 's', 'LEFT'),
    ('LMPOP', 2, 'nokey', 's', 'RIGHT'), ('LMPOP', 2, 'l', 's', 'RIGHT'), ('EXISTS', 'l'),
    ('GET', 's'), ('TYPE', 's'),
]

# Values that must come back as the exact bytes sent: canonical integers are
# stored compactly, everything else that looks like a number is not one.
TRICKY = ['0', '-1', '127', '128', '-128', '-129', '32767', '-32768', '65536', '2147483648',
          '-2147483649', '9223372036854775807', '-9223372036854775808', '9223372036854775808',
          '-9223372036854775809', '007', '-0', '+1', ' 1', '1 ', '1.5', '1e3', '0x10', '',
          'a\r\nb', b'\x00\xff\x80', 'x' * 63, 'y' * 64, 'z' * 4095, 'w' * 4096]


@test
def push_pop(t):
    for proto in (2, 3):
        t.compare([
            ('LPUSH', 'l', 'a'), ('LPUSH', 'l', 'b', 'c'), ('RPUSH', 'l', 'd', 'e'), ('LLEN', 'l'),
            ('LRANGE', 'l', 0, -1), ('LPUSHX', 'l', 'f', 'g'), ('RPUSHX', 'l', 'h'),
            ('LPUSHX', 'nokey', 'x'), ('RPUSHX', 'nokey', 'x', 'y'), ('EXISTS', 'nokey'),
            ('LPOP', 'l'), ('RPOP', 'l'), ('LPOP', 'l', 2), ('RPOP', 'l', 2), ('LPOP', 'l', 0),
            ('RPOP', 'l', 0), ('LRANGE', 'l', 0, -1), ('LPOP', 'l', 100), ('EXISTS', 'l'),
            ('LPOP', 'l'), ('RPOP', 'l'), ('LPOP', 'l', 0), ('RPOP', 'l', 3), ('LPOP', 'nokey', 1),
            ('RPUSH', 'l', 'only'), ('RPOP', 'l'), ('EXISTS', 'l'), ('TYPE', 'l'),
            ('RPUSH', 'l', 'x'), ('LPOP', 'l', -1), ('LPOP', 'l', 'abc'), ('RPOP', 'l', '1.5'),
            ('LPOP', 'l', '9223372036854775807'), ('RPOP', 'nokey', -1), ('LPOP', 'l', 1, 2),
            ('RPOP', 'l', 1, 2), ('LPOP', 'nokey', 1, 2), ('LPUSH', 'l'), ('RPUSH',), ('LPUSHX', 'l'),
            ('LPOP',), ('RPOP',), ('lpush', 'l', 'lower'), ('Rpop', 'l'), ('TYPE', 'l'),
            ('DEL', 'l'),
        ], proto=proto)


@test
def exact_bytes(t):
    t.compare([('RPUSH', 'l') + tuple(TRICKY), ('LRANGE', 'l', 0, -1), ('LLEN', 'l')]
              + [('LINDEX', 'l', i) for i in range(len(TRICKY))]
              + [('LPOS', 'l', v) for v in TRICKY]
              + [('LPOS', 'l', v, 'COUNT', 0) for v in ['1', '01', '-0', '0', '1.0', '']]
              + [('LSET', 'l', 0, '-0'), ('LSET', 'l', 1, '00'), ('LSET', 'l', 2, '12'),
                 ('LRANGE', 'l', 0, 3), ('LREM', 'l', 0, '128'), ('LREM', 'l', 0, '0128'),
                 ('LINSERT', 'l', 'AFTER', '-0', '-0'), ('LINSERT', 'l', 'BEFORE', '0', 'x'),
                 ('LRANGE', 'l', 0, 5)]
              + [('RPOP', 'l') for _ in TRICKY])


@test
def range_and_index(t):
    steps = [('RPUSH', 'l') + tuple(range(10))]
    for a, b in [(0, -1), (0, 0), (-1, -1), (2, 5), (5, 2), (-3, -1), (-100, 100), (0, 100),
                 (9, 9), (10, 10), (11, 20), (-11, -10), (-10, -10), (3, -3), (-2, 1),
                 (-9223372036854775808, 9223372036854775807), (9223372036854775807, 0)]:
        steps.append(('LRANGE', 'l', a, b))
    for i in [0, 1, 9, 10, -1, -10, -11, 100, -100, 9223372036854775807, -9223372036854775808]:
        steps.append(('LINDEX', 'l', i))
    steps += [
        ('LRANGE', 'l', 'a', 1), ('LRANGE', 'l', 0, 'b'), ('LRANGE', 'l', '1.0', 2),
        ('LRANGE', 'l', 0, '9223372036854775808'), ('LRANGE', 'nokey', 0, -1),
        ('LRANGE', 'nokey', 'a', 0), ('LRANGE', 'l', 0), ('LRANGE', 'l', 0, 1, 2),
        ('LINDEX', 'l', 'x'), ('LINDEX', 'nokey', 'x'), ('LINDEX', 'nokey', 0), ('LINDEX', 'l'),
        ('LLEN', 'nokey'), ('LLEN', 'l'), ('LLEN',), ('LLEN', 'l', 'x'),
    ]
    t.compare(steps)
    t.compare(steps[-16:], proto=3)


@test
def lset_linsert(t):
    for proto in (2, 3):
        t.compare([
            ('RPUSH', 'l', 'a', 'b', 'c', 'b'), ('LSET', 'l', 0, 'A'), ('LSET', 'l', -1, 'B'),
            ('LSET', 'l', 4, 'x'), ('LSET', 'l', -5, 'x'), ('LSET', 'l', 'x', 'y'),
            ('LSET', 'nokey', 0, 'x'), ('LSET', 'nokey', 'x', 'y'), ('LRANGE', 'l', 0, -1),
            ('LSET', 'l', 1, 'x' * 10000), ('LINDEX', 'l', 1), ('LSET', 'l', 1, 'short'),
            ('LINSERT', 'l', 'BEFORE', 'b', 'before-b'), ('LINSERT', 'l', 'after', 'B', 'end'),
            ('LINSERT', 'l', 'before', 'A', 'start'), ('LINSERT', 'l', 'AFTER', 'zz', 'x'),
            ('LINSERT', 'nokey', 'BEFORE', 'a', 'x'), ('LINSERT', 'l', 'MIDDLE', 'a', 'x'),
            ('LINSERT', 'nokey', 'MIDDLE', 'a', 'x'), ('EXISTS', 'nokey'), ('LRANGE', 'l', 0, -1),
            ('LSET', 'l', 0), ('LINSERT', 'l', 'BEFORE', 'a'), ('LSET', 'l', 0, 'a', 'b'),
            ('DEL', 'l'),
        ], proto=proto)


@test
def lrem_ltrim(t):
    t.compare([
        ('RPUSH', 'l', 'a', 'b', 'a', 'c', 'a', 'b', 'a'), ('LREM', 'l', 1, 'a'),
        ('LRANGE', 'l', 0, -1), ('LREM', 'l', -1, 'a'), ('LRANGE', 'l', 0, -1),
        ('LREM', 'l', 0, 'a'), ('LRANGE', 'l', 0, -1), ('LREM', 'l', 5, 'zz'),
        ('LREM', 'l', -9223372036854775808, 'b'), ('LRANGE', 'l', 0, -1), ('LREM', 'l', 0, 'c'),
        ('EXISTS', 'l'), ('LREM', 'nokey', 0, 'a'), ('LREM', 'nokey', 'x', 'a'),
        ('LREM', 'l', '1.5', 'a'), ('LREM', 'l', 0), ('LREM', 'l', 0, 'a', 'b'),
        ('RPUSH', 'l', 1, 2, 3, 4, 5, 6, 7, 8, 9), ('LTRIM', 'l', 1, -2), ('LRANGE', 'l', 0, -1),
        ('LTRIM', 'l', -3, 100), ('LRANGE', 'l', 0, -1), ('LTRIM', 'l', 0, 0),
        ('LRANGE', 'l', 0, -1), ('LTRIM', 'l', 0, -1), ('LRANGE', 'l', 0, -1),
        ('LTRIM', 'l', 1, 0), ('EXISTS', 'l'), ('RPUSH', 'l', 1, 2, 3), ('LTRIM', 'l', 5, 10),
        ('EXISTS', 'l'), ('RPUSH', 'l', 1, 2, 3), ('LTRIM', 'l', -100, -50), ('EXISTS', 'l'),
        ('RPUSH', 'l', 1, 2, 3), ('LTRIM', 'l', 2, 1), ('EXISTS', 'l'),
        ('LTRIM', 'nokey', 0, 1), ('LTRIM', 'nokey', 'a', 1), ('LTRIM', 'l', 0, 'x'),
        ('LTRIM', 'l', 0), ('LTRIM', 'l', 0, 1, 2),
    ])


@test
def lpos(t):
    base = [('RPUSH', 'l', 'a', 'b', 'c', 'a', 'b', 'c', 'a', 1, 2, 1)]
    opts = [(), ('RANK', 1), ('RANK', 2), ('RANK', 3), ('RANK', 4), ('RANK', -1), ('RANK', -2),
            ('RANK', -3), ('RANK', -4), ('COUNT', 0), ('COUNT', 1), ('COUNT', 2), ('COUNT', 5),
            ('RANK', 2, 'COUNT', 0), ('RANK', -2, 'COUNT', 0), ('RANK', -1, 'COUNT', 2),
            ('MAXLEN', 1), ('MAXLEN', 4), ('MAXLEN', 0), ('COUNT', 0, 'MAXLEN', 6),
            ('RANK', -1, 'MAXLEN', 3), ('RANK', -1, 'COUNT', 0, 'MAXLEN', 5),
            ('RANK', 2, 'RANK', 1), ('COUNT', 1, 'COUNT', 0), ('maxlen', 2, 'rank', -1, 'count', 0),
            ('RANK', 9223372036854775807), ('RANK', -9223372036854775807),
            ('RANK', -9223372036854775807, 'COUNT', 1), ('COUNT', 9223372036854775807)]
    errors = [('RANK', 0), ('RANK', 'x'), ('RANK', 9223372036854775808), ('COUNT', -1),
              ('COUNT', 'x'), ('MAXLEN', -1), ('MAXLEN', 'x'), ('RANK',), ('COUNT',),
              ('MAXLEN',), ('FOO',), ('FOO', 1), ('RANK', 1, 'COUNT'), ('RANK', 0, 'COUNT', -1),
              ('COUNT', -1, 'RANK', 0)]
    steps = list(base)
    for elem in ('a', 'c', 1, 'zz'):
        steps += [('LPOS', 'l', elem) + o for o in opts]
    steps += [('LPOS', 'l', 'a') + o for o in errors]
    steps += [('LPOS', 'nokey', 'a'), ('LPOS', 'nokey', 'a', 'COUNT', 0),
              ('LPOS', 'nokey', 'a', 'RANK', 0), ('LPOS', 'nokey', 'a', 'COUNT', 'x'),
              ('LPOS', 'l'), ('LPOS',)]
    t.compare(steps)
    t.compare(steps[:1] + steps[-30:], proto=3)


@test
def lmove_rpoplpush(t):
    for proto in (2, 3):
        t.compare([
            ('RPUSH', 'a', 1, 2, 3), ('LMOVE', 'a', 'b', 'LEFT', 'RIGHT'),
            ('LMOVE', 'a', 'b', 'right', 'left'), ('LRANGE', 'a', 0, -1), ('LRANGE', 'b', 0, -1),
            ('LMOVE', 'a', 'a', 'LEFT', 'RIGHT'), ('LMOVE', 'a', 'b', 'LEFT', 'LEFT'),
            ('EXISTS', 'a'), ('LRANGE', 'b', 0, -1), ('LMOVE', 'a', 'b', 'LEFT', 'LEFT'),
            ('RPUSH', 'r', 'x', 'y', 'z'), ('LMOVE', 'r', 'r', 'LEFT', 'RIGHT'),
            ('LRANGE', 'r', 0, -1), ('LMOVE', 'r', 'r', 'RIGHT', 'LEFT'), ('LRANGE', 'r', 0, -1),
            ('LMOVE', 'r', 'r', 'LEFT', 'LEFT'), ('LMOVE', 'r', 'r', 'RIGHT', 'RIGHT'),
            ('LRANGE', 'r', 0, -1), ('RPOPLPUSH', 'r', 'r'), ('LRANGE', 'r', 0, -1),
            ('RPOPLPUSH', 'r', 'q'), ('RPOPLPUSH', 'nokey', 'q'), ('LRANGE', 'q', 0, -1),
            ('RPUSH', 'one', 'v'), ('LMOVE', 'one', 'one', 'LEFT', 'RIGHT'),
            ('LRANGE', 'one', 0, -1), ('RPOPLPUSH', 'one', 'other'), ('EXISTS', 'one'),
            ('LMOVE', 'other', 'x', 'UP', 'LEFT'), ('LMOVE', 'nokey', 'x', 'LEFT', 'DOWN'),
            ('LMOVE', 'other', 'x', 'LEFT'), ('LMOVE', 'other'), ('RPOPLPUSH', 'other'),
            ('RPOPLPUSH', 'a', 'b', 'c'), ('RPUSH', 'big', 'v' * 20000),
            ('LMOVE', 'big', 'dst', 'LEFT', 'RIGHT'), ('LINDEX', 'dst', 0), ('EXISTS', 'big'),
            ('DEL', 'a', 'b', 'r', 'q', 'other', 'dst'),
        ], proto=proto)


@test
def lmpop(t):
    for proto in (2, 3):
        t.compare([
            ('RPUSH', 'a', 1, 2, 3), ('RPUSH', 'b', 'x', 'y'), ('LMPOP', 1, 'a', 'LEFT'),
            ('LMPOP', 2, 'nokey', 'b', 'RIGHT'), ('LMPOP', 2, 'a', 'b', 'LEFT', 'COUNT', 10),
            ('EXISTS', 'a'), ('LMPOP', 2, 'a', 'b', 'right', 'count', 1), ('LMPOP', 1, 'b', 'LEFT'),
            ('LMPOP', 3, 'a', 'b', 'c', 'LEFT'), ('LMPOP', 1, 'nokey', 'LEFT', 'COUNT', 5),
            ('RPUSH', '{t}1', 'p'), ('RPUSH', '{t}2', 'q'), ('LMPOP', 2, '{t}1', '{t}2', 'LEFT'),
            ('LMPOP', 2, '{t}1', '{t}2', 'LEFT'), ('RPUSH', 'c', 'v'),
            ('LMPOP', 3, 'c', 'c', 'c', 'LEFT'),
            ('LMPOP', 0, 'a', 'LEFT'), ('LMPOP', -1, 'a', 'LEFT'), ('LMPOP', 'x', 'a', 'LEFT'),
            ('LMPOP', 2, 'a', 'LEFT'), ('LMPOP', 1, 'a', 'UP'), ('LMPOP', 1, 'a', 'LEFT', 'COUNT'),
            ('LMPOP', 1, 'a', 'LEFT', 'COUNT', 0), ('LMPOP', 1, 'a', 'LEFT', 'COUNT', -1),
            ('LMPOP', 1, 'a', 'LEFT', 'COUNT', 'x'), ('LMPOP', 1, 'a', 'LEFT', 'COUNT', 1, 'COUNT', 1),
            ('LMPOP', 1, 'a', 'LEFT', 'FOO'), ('LMPOP', 1, 'a', 'LEFT', 'COUNT', 1, 'FOO'),
            ('LMPOP', 9223372036854775807, 'a', 'LEFT'), ('LMPOP', '9223372036854775808', 'a', 'LEFT'),
            ('LMPOP', 1, 'a'), ('LMPOP', 1), ('LMPOP',),
            ('RPUSH', 'many', *range(100)), ('LMPOP', 1, 'many', 'RIGHT', 'COUNT', 40),
            ('LMPOP', 1, 'many', 'LEFT', 'COUNT', 9223372036854775807), ('EXISTS', 'many'),
        ], proto=proto)


@test
def wrongtype(t):
    t.compare(WRONGTYPE_STEPS)
    t.compare([('FLUSHALL',)] + WRONGTYPE_STEPS, proto=3)


@test
def keyspace_integration(t):
    t.compare([
        ('RPUSH', 'l', 'a', 'b', 'c'), ('TYPE', 'l'), ('EXISTS', 'l'), ('COPY', 'l', 'l2'),
        ('RPUSH', 'l2', 'd'), ('LRANGE', 'l', 0, -1), ('LRANGE', 'l2', 0, -1),
        ('RENAME', 'l2', 'l3'), ('LRANGE', 'l3', 0, -1), ('MOVE', 'l3', 1), ('SELECT', 1),
        ('LRANGE', 'l3', 0, -1), ('LPOP', 'l3', 10), ('EXISTS', 'l3'), ('SELECT', 0),
        ('EXPIRE', 'l', 100), ('RPUSH', 'l', 'e'), ('TTL', 'l'), ('LPOP', 'l', 4), ('TTL', 'l'),
        ('RPUSH', 'l', 'x'), ('TTL', 'l'), ('PEXPIRE', 'l', 1), Ignore('DEBUG', 'SLEEP', '0.05'),
        ('LLEN', 'l'), ('EXISTS', 'l'), ('RPUSH', 'k1', 1), ('SET', 'k2', 1),
        ('SCAN', 0, 'TYPE', 'list'), ('SCAN', 0, 'TYPE', 'string'), ('DEL', 'k1', 'k2'),
        ('DBSIZE',),
    ])
    # A long list copies node by node.
    t.compare([('RPUSH', 'big') + tuple('e%d' % i for i in range(3000)), ('COPY', 'big', 'big2'),
               ('RPOP', 'big', 1000), ('LLEN', 'big2'), ('LRANGE', 'big2', 1990, 2010),
               ('LINDEX', 'big2', -1)])


@test
def keyspace_hits(t):
    """Reads count hits and misses where Redis's lookupKeyRead does."""
    def run(srv):
        with srv.client() as c:
            c.call('RPUSH', 'l', 'a')
            c.call('CONFIG', 'RESETSTAT')
            for args in [('LLEN', 'l'), ('LLEN', 'x'), ('LRANGE', 'l', 0, -1), ('LRANGE', 'x', 0, 1),
                         ('LINDEX', 'l', 0), ('LINDEX', 'x', 0), ('LPOS', 'l', 'a'), ('LPOS', 'x', 'a'),
                         ('LPUSH', 'l', 'b'), ('LPOP', 'x'), ('LSET', 'l', 0, 'c'),
                         ('LMOVE', 'l', 'm', 'LEFT', 'LEFT'), ('LMPOP', 1, 'x', 'LEFT')]:
                c.call(*args)
            stats = info_fields(c.call('INFO', 'stats'))['stats']
            return stats['keyspace_hits'], stats['keyspace_misses']
    t.same(run, 'keyspace hits/misses')


@test
def big_list_default_bounds(t):
    """Default list-max-listpack-size (-2, 8 KiB nodes): thousands of elements
    and large elements across many nodes."""
    rnd = random.Random(11)
    steps = []
    for chunk in range(10):
        steps.append(('RPUSH', 'l') + tuple('%d-%s' % (chunk * 1000 + i, 'v' * (i % 40))
                                            for i in range(1000)))
    steps.append(('LPUSH', 'l') + tuple(range(-1, -2001, -1)))
    steps += [('LLEN', 'l'), ('LINDEX', 'l', 0), ('LINDEX', 'l', -1), ('LINDEX', 'l', 6000),
              ('LRANGE', 'l', 5990, 6010), ('LRANGE', 'l', -20, -1)]
    for _ in range(30):
        i = rnd.randrange(-12000, 12000)
        steps.append(('LINDEX', 'l', i))
    for big in (100, 5000, 9000, 20000, 70000):
        i = rnd.randrange(0, 12000)
        steps += [('LSET', 'l', i, 'B' * big), ('LINDEX', 'l', i), ('LRANGE', 'l', i - 2, i + 2)]
        steps += [('LINSERT', 'l', 'BEFORE', '%d-%s' % (i, 'v' * (i % 1000 % 40)), 'I' * big)]
    steps += [('LPOS', 'l', '-1000'), ('LPOS', 'l', '7000-' + 'v'), ('LPOS', 'l', 'B' * 5000),
              ('LREM', 'l', 0, 'B' * 9000), ('LLEN', 'l'), ('LTRIM', 'l', 3000, -3000),
              ('LLEN', 'l'), ('LRANGE', 'l', 0, 5), ('LPOP', 'l', 2500), ('RPOP', 'l', 2500),
              ('LRANGE', 'l', 0, -1), ('LMPOP', 1, 'l', 'LEFT', 'COUNT', 100000), ('EXISTS', 'l')]
    t.compare(steps)


def _value(rnd, big):
    r = rnd.random()
    if r < 0.35:
        return str(rnd.randrange(-3, 12))                # small ints: many duplicates
    if r < 0.45:
        return rnd.choice(['007', '-0', '+5', '5.0', '', '9223372036854775807',
                           '-9223372036854775808', '18446744073709551616', '-129', '70000'])
    if r < 0.8:
        return rnd.choice('abcdefgh') * rnd.randrange(1, 4)
    if r < 0.95 or not big:
        return 'm%d' % rnd.randrange(50) + 'x' * rnd.randrange(20, 300)
    return 'L' * rnd.randrange(1000, 9000)


def _random_steps(rnd, n, lens, keys, big):
    """n random list commands over keys; lens holds the lists' current
    lengths (as the reference reported them) to aim indexes."""
    steps = []
    for _ in range(n):
        k = rnd.choice(keys)
        ln = lens.get(k, 0)
        span = ln + 3

        def idx():
            return rnd.randrange(-span, span)

        def val():
            return _value(rnd, big)

        op = rnd.random()
        want_grow = ln < 20
        if op < (0.30 if want_grow else 0.15):
            cmd = rnd.choice(['LPUSH', 'RPUSH', 'LPUSH', 'RPUSH', 'LPUSHX', 'RPUSHX'])
            steps.append((cmd, k) + tuple(val() for _ in range(rnd.randrange(1, 8))))
        elif op < 0.36:
            cmd = rnd.choice(['LPOP', 'RPOP'])
            steps.append((cmd, k) if rnd.random() < 0.5 else (cmd, k, rnd.randrange(0, 6)))
        elif op < 0.44:
            steps.append(('LINDEX', k, idx()))
        elif op < 0.52:
            steps.append(('LSET', k, idx(), val()))
        elif op < 0.62:
            steps.append(('LINSERT', k, rnd.choice(['BEFORE', 'AFTER']), val(), val()))
        elif op < 0.68:
            steps.append(('LREM', k, rnd.randrange(-3, 4), val()))
        elif op < 0.72:
            a = rnd.randrange(-span, span)
            steps.append(('LTRIM', k, a, a + rnd.randrange(ln // 2, ln + 5)) if rnd.random() < 0.7
                         else ('LTRIM', k, rnd.randrange(0, 3), rnd.randrange(-3, 0)))
        elif op < 0.80:
            steps.append(('LRANGE', k, idx(), idx()))
        elif op < 0.86:
            opts = []
            if rnd.random() < 0.5:
                opts += ['RANK', rnd.choice([1, 2, 3, -1, -2, -3])]
            if rnd.random() < 0.5:
                opts += ['COUNT', rnd.randrange(0, 4)]
            if rnd.random() < 0.3:
                opts += ['MAXLEN', rnd.randrange(0, span)]
            steps.append(('LPOS', k, val()) + tuple(opts))
        elif op < 0.93:
            steps.append(('LMOVE', k, rnd.choice(keys), rnd.choice(['LEFT', 'RIGHT']),
                          rnd.choice(['LEFT', 'RIGHT'])))
        elif op < 0.95:
            steps.append(('RPOPLPUSH', k, rnd.choice(keys)))
        elif op < 0.98:
            ks = rnd.sample(keys + ['nokey'], rnd.randrange(1, 4))
            steps.append(('LMPOP', len(ks)) + tuple(ks) + (rnd.choice(['LEFT', 'RIGHT']),)
                         + (('COUNT', rnd.randrange(1, 8)) if rnd.random() < 0.6 else ()))
        else:
            steps.append(('LLEN', k))
    return steps


def _differential(t, directives, seed, batches, batch, big=False, proto=2, fill_changes=()):
    ref, sut = t.spawn_pair(**directives)
    rnd = random.Random(seed)
    keys = ['a', 'b', 'c', '{a}d']
    lens = {}
    for b in range(batches):
        steps = _random_steps(rnd, batch, lens, keys, big)
        if b in fill_changes:
            steps.insert(0, Ignore('CONFIG', 'SET', 'list-max-listpack-size', fill_changes[b]))
        steps += [('LRANGE', k, 0, -1) for k in keys] + [('LLEN', k) for k in keys]
        out = t.compare(steps, proto=proto, ref=ref, sut=sut)
        lens = {k: int(out[-len(keys) + i][1:-2]) for i, k in enumerate(keys)}


@test
def random_fill_4(t):
    _differential(t, {'list-max-listpack-size': 4}, seed=1, batches=30, batch=100)


@test
def random_fill_1_and_changes(t):
    _differential(t, {'list-max-listpack-size': 1}, seed=2, batches=20, batch=100,
                  fill_changes={5: 2, 10: 7, 15: -1})


@test
def random_bytes_bound(t):
    # 4 KiB nodes with values up to 9 KB: size-bounded nodes, oversized
    # elements in nodes of their own.
    _differential(t, {'list-max-listpack-size': -1}, seed=3, batches=15, batch=100, big=True)


@test
def random_resp3(t):
    _differential(t, {'list-max-listpack-size': 3}, seed=4, batches=10, batch=100, proto=3)


def expect(srv, steps):
    """Each (command, reply) in order on one connection (Redis 8.8's replies,
    where 7.0's differ, e.g. its lists are all quicklists)."""
    with srv.client() as c:
        for cmd, want in steps:
            got = c.call(*cmd)
            assert got == want, (cmd, got, want)


@test
@xkv_only
def encodings_convert_at_redis_88_thresholds(t):
    big = 'x' * 8192
    try:
        expect(t.sut, [
            # A first element past the bound makes a quicklist at once.
            (('RPUSH', 'l', big), 1), (('OBJECT', 'ENCODING', 'l'), b'quicklist'),
            (('DEL', 'l'), 1),
            # LSET grows a full listpack as one more entry would, then a
            # small element makes a lone node a listpack again.
            (('CONFIG', 'SET', 'list-max-listpack-size', '3'), b'OK'),
            (('RPUSH', 'l', 'a', 'b', 'c'), 3), (('OBJECT', 'ENCODING', 'l'), b'listpack'),
            (('LSET', 'l', '0', 'hello'), b'OK'), (('OBJECT', 'ENCODING', 'l'), b'quicklist'),
            (('DEL', 'l'), 1),
            (('CONFIG', 'SET', 'list-max-listpack-size', '-1'), b'OK'),
            (('RPUSH', 'l', big, 'a', 'b'), 3), (('RPOP', 'l', '2'), [b'b', b'a']),
            (('OBJECT', 'ENCODING', 'l'), b'quicklist'), (('LSET', 'l', '-1', 'c'), b'OK'),
            (('OBJECT', 'ENCODING', 'l'), b'listpack'), (('DEL', 'l'), 1),
            # 0 counts as 1 entry per node.
            (('CONFIG', 'SET', 'list-max-listpack-size', '0'), b'OK'),
            (('RPUSH', 'l', 'a'), 1), (('OBJECT', 'ENCODING', 'l'), b'listpack'),
            (('RPUSH', 'l', 'b'), 2), (('OBJECT', 'ENCODING', 'l'), b'quicklist'),
            (('DEL', 'l'), 1),
        ])
    finally:
        t.sut.call('CONFIG', 'SET', 'list-max-listpack-size', '-2')


@test
@xkv_only
def lpos_rank_refuses_llong_min(t):
    expect(t.sut, [
        (('RPUSH', 'l', 'a', 'c'), 2),
        (('LPOS', 'l', 'c', 'RANK', '-9223372036854775808'),
         RespError('ERR value is out of range, value must between -9223372036854775807 and '
                   '9223372036854775807')),
        (('LPOS', 'l', 'c', 'RANK', '-9223372036854775808', 'COUNT', '1'),
         RespError('ERR value is out of range, value must between -9223372036854775807 and '
                   '9223372036854775807')),
        (('LPOS', 'l', 'c', 'RANK', '-9223372036854775807'), None),
        (('LPOS', 'l', 'c', 'RANK', '-1'), 1), (('DEL', 'l'), 1),
    ])
