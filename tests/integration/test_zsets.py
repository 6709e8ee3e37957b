# SPDX-License-Identifier: GPL-2.0-only
"""Sorted set commands, compared with redis-server byte for byte in RESP2 and
RESP3: ZADD and its options, ranges by rank, score and lex, removals, pops,
the set operations, ZRANDMEMBER, ZSCAN, both encodings (small sets are packed,
sets past 128 members or with members over 64 bytes are skiplists), and a
randomized differential run of a few thousand operations."""

import random
import threading

from harness import Within, pairs, test, xkv_only

BOTH = (2, 3)


def both(t, steps, doubles8=True):
    """The steps in RESP2, then again (on an emptied keyspace) in RESP3. The
    reference's scores are compared as Redis 8.8 prints them (doubles8), but
    where a step shows a skiplist's scores as text (ZSCAN, "%.17g" in 8.8)."""
    for proto in BOTH:
        t.compare([('FLUSHALL',)] + steps, proto=proto, doubles8=doubles8)


def zadd_many(key, n, score=lambda i: i, member=lambda i: 'm%d' % i):
    args = ['ZADD', key]
    for i in range(n):
        args += [score(i), member(i)]
    return tuple(args)


class Pairs:
    """A compare step whose reply is [cursor, flat member/score list] or a
    flat member/score list in unspecified order: compared as a sorted list of
    pairs (the cursor as 'end' or 'more')."""

    def __init__(self, *args):
        self.args = args

    def run(self, c):
        value = c.call(*self.args)
        if isinstance(value, list) and len(value) == 2 and isinstance(value[1], list):
            cur, flat = value
            return ('end' if cur == b'0' else 'more', sorted(zip(flat[::2], flat[1::2])))
        return value

    def __repr__(self):
        return ' '.join(map(str, self.args)) + ' (pairs, unordered)'


# ---------------------------------------------------------------- ZADD, ZINCRBY

@test
def zadd_basic(t):
    both(t, [
        ('ZADD', 'z', 1, 'a', 2, 'b', 3, 'c'), ('ZRANGE', 'z', 0, -1, 'WITHSCORES'),
        ('ZADD', 'z', 1, 'a'), ('ZADD', 'z', 5, 'a', 6, 'd'), ('ZRANGE', 'z', 0, -1, 'WITHSCORES'),
        ('ZADD', 'z', '1.5', 'x', '1e20', 'big', '-inf', 'ni', '+inf', 'pi', 'inf', 'pi2'),
        ('ZADD', 'z', '0x10', 'hex', '-0', 'nz', '2.5e-7', 'tiny', '123456789012345678', 'huge'),
        ('ZADD', 'z', '0.1', 'tenth', '-1.5E+3', 'neg', '1e-310', 'denormal'),
        ('ZRANGE', 'z', 0, -1, 'WITHSCORES'), ('ZSCORE', 'z', 'nz'), ('ZSCORE', 'z', 'tenth'),
        ('ZADD', 'z', 7, 'a', 7, 'a', 8, 'a'), ('ZSCORE', 'z', 'a'),      # the last duplicate wins
        ('ZADD', 'bin', 0, b'a\x00b', 0, b'\xff', 0, b'', 0, b'a', 0, b'a\x00'),
        ('ZRANGE', 'bin', 0, -1), ('ZSCORE', 'bin', b''), ('ZCARD', 'bin'),
        ('ZADD', 'z', 1, 'a', 'x'), ('ZADD', 'z'), ('ZADD', 'z', 1), ('ZADD',),
        ('zadd', 'z', 'nx', 'ch', 'incr', 1, 'lower'),
    ])


@test
def zadd_options(t):
    both(t, [
        ('ZADD', 'z', 1, 'a', 2, 'b'),
        ('ZADD', 'z', 'NX', 5, 'a', 3, 'c'), ('ZADD', 'z', 'XX', 5, 'a', 4, 'd'), ('ZRANGE', 'z', 0, -1, 'WITHSCORES'),
        ('ZADD', 'z', 'CH', 5, 'a', 6, 'b', 7, 'e'), ('ZADD', 'z', 'CH', 5, 'a'), ('ZADD', 'z', 'ch', 'xx', 9, 'a', 1, 'q'),
        ('ZADD', 'z', 'GT', 1, 'a'), ('ZADD', 'z', 'GT', 'CH', 10, 'a'), ('ZADD', 'z', 'GT', 'CH', 10, 'a'),
        ('ZADD', 'z', 'LT', 'CH', 11, 'a', 1, 'a2'), ('ZADD', 'z', 'LT', 'CH', 2, 'a'), ('ZADD', 'z', 'GT', 'XX', 'CH', 3, 'a', 3, 'zz'),
        ('ZRANGE', 'z', 0, -1, 'WITHSCORES'),
        ('ZADD', 'z', 'INCR', 1, 'a'), ('ZADD', 'z', 'INCR', '-2.5', 'a'), ('ZADD', 'z', 'INCR', 0, 'a'),
        ('ZADD', 'z', 'INCR', 'XX', 1, 'nope'), ('ZADD', 'z', 'INCR', 'NX', 1, 'a'), ('ZADD', 'z', 'INCR', 'NX', 1, 'new'),
        ('ZADD', 'z', 'INCR', 'GT', -1, 'a'), ('ZADD', 'z', 'INCR', 'GT', 1, 'a'), ('ZADD', 'z', 'INCR', 'LT', 1, 'a'),
        ('ZADD', 'z', 'INCR', 'LT', -1, 'a'), ('ZADD', 'z', 'INCR', 'LT', 5, 'fresh'), ('ZADD', 'z', 'CH', 'INCR', 1, 'a'),
        ('ZADD', 'z', 'INCR', 'inf', 'a'), ('ZADD', 'z', 'INCR', '-inf', 'a'), ('ZSCORE', 'z', 'a'),
        ('ZADD', 'z', 'INCR', '-0', 'negzero'), ('ZSCORE', 'z', 'negzero'),
        ('ZADD', 'nokey', 'XX', 1, 'a'), ('EXISTS', 'nokey'), ('ZADD', 'nokey', 'XX', 'INCR', 1, 'a'),
        ('ZADD', 'nokey', 'XX', 'CH', 1, 'a'), ('EXISTS', 'nokey'),
        ('ZADD', 'new', 'GT', 5, 'a'), ('ZADD', 'new2', 'LT', 'INCR', 5, 'a'), ('ZRANGE', 'new2', 0, -1, 'WITHSCORES'),
    ])


@test
def zadd_errors(t):
    both(t, [
        ('ZADD', 'z', 1, 'a'),
        ('ZADD', 'z', 'NX', 'XX', 1, 'a'), ('ZADD', 'z', 'xx', 'nx', 'gt', 1, 'a'), ('ZADD', 'z', 'GT', 'LT', 1, 'a'),
        ('ZADD', 'z', 'NX', 'GT', 1, 'a'), ('ZADD', 'z', 'LT', 'NX', 1, 'a'), ('ZADD', 'z', 'GT', 'LT', 'NX', 1, 'a'),
        ('ZADD', 'z', 'INCR', 1, 'a', 2, 'b'), ('ZADD', 'z', 'INCR', 'NX', 'XX', 1, 'a', 2, 'b'),
        ('ZADD', 'z', 'INCR', 'GT', 'LT', 1, 'a', 2, 'b'),
        ('ZADD', 'z', 'nan', 'a'), ('ZADD', 'z', 'NaN', 'a'), ('ZADD', 'z', 'abc', 'a'), ('ZADD', 'z', '', 'a'),
        ('ZADD', 'z', ' 1', 'a'), ('ZADD', 'z', '1 ', 'a'), ('ZADD', 'z', '1e400', 'a'), ('ZADD', 'z', '-1e400', 'a'),
        ('ZADD', 'z', '1e-400', 'a'), ('ZADD', 'z', b'1\x002', 'a'), ('ZADD', 'z', '(1', 'a'),
        ('ZADD', 'z', 1, 'b', 'x', 'c'), ('ZCARD', 'z'),           # scores are checked before any add
        ('ZADD', 'z', 'NX', 1), ('ZADD', 'z', 'NX'), ('ZADD', 'z', 'FOO', 1, 'a'), ('ZADD', 'z', 1, 'a', 'NX'),
        ('ZADD', 'z', 'INCR', 'inf', 'a'), ('ZADD', 'z', 1, 'x', 'INCR'),
        ('ZADD', 'z', 'INCR', '-inf', 'a'), ('ZSCORE', 'z', 'a'),   # NaN: nothing changes
        ('ZADD', 'z', 'inf', 'b', 'INCR', '-inf', 'b'),
        ('SET', 's', 'v'), ('ZADD', 's', 1, 'a'), ('ZADD', 's', 'x', 'a'), ('ZADD', 's', 'NX', 'XX', 1, 'a'),
        ('ZADD', 's', 'XX', 1, 'a'), ('GET', 's'),
    ])


@test
def zincrby(t):
    both(t, [
        ('ZINCRBY', 'z', 1, 'a'), ('ZINCRBY', 'z', '2.5', 'a'), ('ZINCRBY', 'z', '-10', 'a'), ('ZSCORE', 'z', 'a'),
        ('ZINCRBY', 'z', 'inf', 'a'), ('ZINCRBY', 'z', '-inf', 'a'), ('ZSCORE', 'z', 'a'),
        ('ZINCRBY', 'z', 'abc', 'a'), ('ZINCRBY', 'z', 'nan', 'a'), ('ZINCRBY', 'z', '', 'a'),
        ('ZINCRBY', 'z', 'nx', 'a'), ('ZINCRBY', 'z', 'incr', 'a'), ('ZINCRBY', 'z', 'ch', 'a'),
        ('ZINCRBY', 'z', 1), ('ZINCRBY', 'z', 1, 'a', 'b'), ('ZINCRBY', 'z', '-0', 'nz'),
        ('ZINCRBY', 'z', '1e308', 'big'), ('ZINCRBY', 'z', '1e308', 'big'),
        ('SET', 's', 'v'), ('ZINCRBY', 's', 1, 'a'), ('ZINCRBY', 's', 'x', 'a'),
    ])


# ---------------------------------------------------------------- reads

@test
def zscore_zmscore_zcard(t):
    both(t, [
        ('ZADD', 'z', 1, 'a', '1.5', 'b', '-inf', 'c'),
        ('ZSCORE', 'z', 'a'), ('ZSCORE', 'z', 'b'), ('ZSCORE', 'z', 'c'), ('ZSCORE', 'z', 'x'), ('ZSCORE', 'no', 'a'),
        ('ZMSCORE', 'z', 'a', 'x', 'b', 'c'), ('ZMSCORE', 'no', 'a', 'b'), ('ZMSCORE', 'z', 'x'),
        ('ZCARD', 'z'), ('ZCARD', 'no'), ('ZSCORE', 'z'), ('ZMSCORE', 'z'), ('ZCARD',), ('ZCARD', 'z', 'x'),
        ('SET', 's', 'v'), ('ZSCORE', 's', 'a'), ('ZMSCORE', 's', 'a'), ('ZCARD', 's'),
    ])


@test
def zrank_zrevrank(t):
    both(t, [
        ('ZADD', 'z', 1, 'a', 2, 'b', 2, 'c', 3, 'd'),
        ('ZRANK', 'z', 'a'), ('ZRANK', 'z', 'c'), ('ZRANK', 'z', 'd'), ('ZRANK', 'z', 'x'), ('ZRANK', 'no', 'a'),
        ('ZREVRANK', 'z', 'a'), ('ZREVRANK', 'z', 'c'), ('ZREVRANK', 'z', 'd'), ('ZREVRANK', 'z', 'x'),
        ('ZRANK', 'z'), ('SET', 's', 'v'), ('ZRANK', 's', 'a'), ('ZREVRANK', 's', 'a'),
    ])


@test
@xkv_only
def zrank_withscore(t):
    """Redis 7.2's WITHSCORE (7.0 has no such option): [rank, score], a null
    array for a missing member or key."""
    with t.sut.client() as c:
        c.call('ZADD', 'z', 1, 'a', '2.5', 'b', 3, 'c')
        assert c.cmd('ZRANK', 'z', 'b', 'WITHSCORE') == b'*2\r\n:1\r\n$3\r\n2.5\r\n'
        assert c.cmd('ZREVRANK', 'z', 'b', 'withscore') == b'*2\r\n:1\r\n$3\r\n2.5\r\n'
        assert c.cmd('ZREVRANK', 'z', 'a', 'WITHSCORE') == b'*2\r\n:2\r\n$1\r\n1\r\n'
        assert c.cmd('ZRANK', 'z', 'x', 'WITHSCORE') == b'*-1\r\n'
        assert c.cmd('ZRANK', 'no', 'x', 'WITHSCORE') == b'*-1\r\n'
        assert c.cmd('ZRANK', 'z', 'x') == b'$-1\r\n'
        assert c.cmd('ZRANK', 'z', 'a', 'SCORES') == b'-ERR syntax error\r\n'
        assert c.cmd('ZRANK', 'z', 'a', 'WITHSCORE', 'x') == b'-ERR syntax error\r\n'
    with t.sut.client(3) as c:
        assert c.cmd('ZRANK', 'z', 'b', 'WITHSCORE') == b'*2\r\n:1\r\n,2.5\r\n'
        assert c.cmd('ZRANK', 'z', 'x', 'WITHSCORE') == b'_\r\n'


@test
def zcount_zlexcount(t):
    both(t, [
        ('ZADD', 'z', 1, 'a', 2, 'b', 3, 'c', '-inf', 'm', 'inf', 'p'),
        ('ZCOUNT', 'z', '-inf', '+inf'), ('ZCOUNT', 'z', 1, 3), ('ZCOUNT', 'z', '(1', 3), ('ZCOUNT', 'z', '(1', '(3'),
        ('ZCOUNT', 'z', 3, 1), ('ZCOUNT', 'z', '(2', '(2'), ('ZCOUNT', 'z', 2, 2), ('ZCOUNT', 'z', '-inf', '(-inf'),
        ('ZCOUNT', 'z', 'inf', 'inf'), ('ZCOUNT', 'z', '(inf', 'inf'), ('ZCOUNT', 'no', 0, 1),
        # Range bounds are read with a bare strtod: these pass...
        ('ZCOUNT', 'z', '', 3), ('ZCOUNT', 'z', '(', 3), ('ZCOUNT', 'z', ' 1', 3), ('ZCOUNT', 'z', '1e400', '+inf'),
        ('ZCOUNT', 'z', '0x1', '0x2'), ('ZCOUNT', 'z', '-infinity', 'Infinity'), ('ZCOUNT', 'z', b'1\x00x', 5),
        # ...these do not.
        ('ZCOUNT', 'z', 'x', 3), ('ZCOUNT', 'z', 1, '3 '), ('ZCOUNT', 'z', 'nan', 3), ('ZCOUNT', 'z', '((1', 3),
        ('ZCOUNT', 'z', '[1', 3), ('ZCOUNT', 'no', 'x', 3),
        ('ZADD', 'l', 0, 'a', 0, 'b', 0, 'ba', 0, 'c', 0, 'd', 0, '', 0, b'b\x00'),
        ('ZLEXCOUNT', 'l', '-', '+'), ('ZLEXCOUNT', 'l', '[b', '[c'), ('ZLEXCOUNT', 'l', '(b', '(c'),
        ('ZLEXCOUNT', 'l', '[', '(a'), ('ZLEXCOUNT', 'l', '(', '+'), ('ZLEXCOUNT', 'l', '+', '-'), ('ZLEXCOUNT', 'l', '[d', '[a'),
        ('ZLEXCOUNT', 'l', '[b', '[b'), ('ZLEXCOUNT', 'l', '(b', '[b'), ('ZLEXCOUNT', 'l', b'[b\x00', '+'),
        ('ZLEXCOUNT', 'l', 'b', '+'), ('ZLEXCOUNT', 'l', '', '+'), ('ZLEXCOUNT', 'l', '-', '++'), ('ZLEXCOUNT', 'l', '-a', '+'),
        ('ZLEXCOUNT', 'no', '-', '+'), ('ZLEXCOUNT', 'no', 'x', '+'),
        ('SET', 's', 'v'), ('ZCOUNT', 's', 0, 1), ('ZCOUNT', 's', 'x', 1), ('ZLEXCOUNT', 's', '-', '+'), ('ZLEXCOUNT', 's', 'x', '+'),
    ])


# ---------------------------------------------------------------- ranges

@test
def zrange_by_rank(t):
    both(t, [
        ('ZADD', 'z', 1, 'a', 2, 'b', 3, 'c', 4, 'd', 5, 'e'),
        ('ZRANGE', 'z', 0, -1), ('ZRANGE', 'z', 0, -1, 'WITHSCORES'), ('ZRANGE', 'z', 1, 3, 'withscores'),
        ('ZRANGE', 'z', -2, -1), ('ZRANGE', 'z', -100, 100), ('ZRANGE', 'z', 3, 1), ('ZRANGE', 'z', 5, 10),
        ('ZRANGE', 'z', -1, -2), ('ZRANGE', 'z', 0, 0), ('ZRANGE', 'z', 0, -1, 'REV'), ('ZRANGE', 'z', 1, 2, 'REV', 'WITHSCORES'),
        ('ZRANGE', 'z', -2, -1, 'REV'), ('ZRANGE', 'z', '9223372036854775807', '-9223372036854775808'),
        ('ZRANGE', 'z', '-9223372036854775808', '9223372036854775807'),
        ('ZREVRANGE', 'z', 0, -1), ('ZREVRANGE', 'z', 0, 1, 'WITHSCORES'), ('ZREVRANGE', 'z', 4, 4),
        ('ZRANGE', 'no', 0, -1), ('ZREVRANGE', 'no', 0, -1, 'WITHSCORES'),
    ])


@test
def zrange_by_score(t):
    both(t, [
        ('ZADD', 'z', 1, 'a', 2, 'b', 2, 'b2', 3, 'c', '-inf', 'm', 'inf', 'p', '1.5', 'h'),
        ('ZRANGE', 'z', '-inf', '+inf', 'BYSCORE'), ('ZRANGE', 'z', '(1', 3, 'BYSCORE', 'WITHSCORES'),
        ('ZRANGE', 'z', 3, '(1', 'BYSCORE', 'REV', 'WITHSCORES'), ('ZRANGE', 'z', 1, 3, 'BYSCORE', 'REV'),
        ('ZRANGE', 'z', '-inf', '+inf', 'BYSCORE', 'LIMIT', 1, 2), ('ZRANGE', 'z', '-inf', '+inf', 'BYSCORE', 'LIMIT', 1, -1),
        ('ZRANGE', 'z', '-inf', '+inf', 'BYSCORE', 'LIMIT', -1, 2), ('ZRANGE', 'z', '-inf', '+inf', 'BYSCORE', 'LIMIT', 0, 0),
        ('ZRANGE', 'z', '-inf', '+inf', 'BYSCORE', 'LIMIT', 7, 1), ('ZRANGE', 'z', '-inf', '+inf', 'BYSCORE', 'LIMIT', 6, 10),
        ('ZRANGE', 'z', 'inf', '-inf', 'BYSCORE', 'REV', 'LIMIT', 2, 3, 'WITHSCORES'),
        ('ZRANGE', 'z', 'inf', '-inf', 'BYSCORE', 'REV', 'LIMIT', '9223372036854775807', 1),
        ('ZRANGE', 'z', 'inf', '-inf', 'BYSCORE', 'REV', 'LIMIT', '-9223372036854775808', 1),
        ('ZRANGE', 'z', 0, 5, 'BYSCORE', 'LIMIT', 1, '-9223372036854775808'),
        ('ZRANGE', 'z', 1, 3, 'LIMIT', 1, 1, 'BYSCORE', 'WITHSCORES'), ('ZRANGE', 'z', 1, 3, 'withscores', 'byscore', 'rev'),
        ('ZRANGEBYSCORE', 'z', '-inf', 'inf'), ('ZRANGEBYSCORE', 'z', '(1', '(3', 'WITHSCORES'),
        ('ZRANGEBYSCORE', 'z', 1, 3, 'LIMIT', 1, 2, 'WITHSCORES'), ('ZRANGEBYSCORE', 'z', 3, 1),
        ('ZREVRANGEBYSCORE', 'z', 'inf', '-inf'), ('ZREVRANGEBYSCORE', 'z', 3, 1, 'WITHSCORES', 'LIMIT', 0, 2),
        ('ZREVRANGEBYSCORE', 'z', 1, 3), ('ZREVRANGEBYSCORE', 'z', '(3', '(1'),
        ('ZRANGEBYSCORE', 'no', 0, 1), ('ZRANGE', 'z', 2, 2, 'BYSCORE'), ('ZRANGE', 'z', '(2', 2, 'BYSCORE'),
    ])


@test
def zrange_by_lex(t):
    both(t, [
        ('ZADD', 'l', 0, 'a', 0, 'b', 0, 'ba', 0, 'c', 0, 'd', 0, 'e', 0, '', 0, b'b\x00', 0, b'\xff'),
        ('ZRANGE', 'l', '-', '+', 'BYLEX'), ('ZRANGE', 'l', '[b', '(d', 'BYLEX'), ('ZRANGE', 'l', '(a', '[c', 'BYLEX', 'LIMIT', 1, 2),
        ('ZRANGE', 'l', '+', '-', 'BYLEX', 'REV'), ('ZRANGE', 'l', '[d', '(a', 'BYLEX', 'REV', 'LIMIT', 0, 2),
        ('ZRANGE', 'l', '-', '+', 'BYLEX', 'LIMIT', -1, 5), ('ZRANGE', 'l', '-', '+', 'BYLEX', 'LIMIT', 3, -1),
        ('ZRANGEBYLEX', 'l', '-', '+'), ('ZRANGEBYLEX', 'l', '[', '[b'), ('ZRANGEBYLEX', 'l', '(', '[b'),
        ('ZRANGEBYLEX', 'l', '+', '-'), ('ZRANGEBYLEX', 'l', '[d', '[a'), ('ZRANGEBYLEX', 'l', '[b', '[b'),
        ('ZRANGEBYLEX', 'l', '-', '-'), ('ZRANGEBYLEX', 'l', '+', '+'), ('ZRANGEBYLEX', 'l', '(b', '(b'),
        ('ZRANGEBYLEX', 'l', b'[\xff', '+'), ('ZRANGEBYLEX', 'l', '[b', '+', 'LIMIT', 1, 3),
        ('ZREVRANGEBYLEX', 'l', '+', '-'), ('ZREVRANGEBYLEX', 'l', '[d', '(b', 'LIMIT', 1, 1), ('ZREVRANGEBYLEX', 'l', '-', '+'),
        ('ZRANGEBYLEX', 'l', 'a', '+'), ('ZRANGEBYLEX', 'l', '', '+'), ('ZRANGEBYLEX', 'l', '-a', '+'), ('ZRANGEBYLEX', 'l', '-', '+x'),
        ('ZRANGEBYLEX', 'no', '-', '+'), ('ZRANGEBYLEX', 'no', 'x', '+'),
    ])


@test
def zrange_errors(t):
    both(t, [
        ('ZADD', 'z', 1, 'a', 2, 'b'), ('SET', 's', 'v'),
        ('ZRANGE', 'z', 0, -1, 'LIMIT', 0, 1), ('ZRANGE', 'z', 0, -1, 'LIMIT', 5, -1), ('ZRANGE', 'z', 0, -1, 'LIMIT', 0, -5),
        ('ZREVRANGE', 'z', 0, 1, 'LIMIT', 0, 1), ('ZRANGE', 'z', '-', '+', 'BYLEX', 'WITHSCORES'),
        ('ZRANGEBYLEX', 'z', '-', '+', 'WITHSCORES'), ('ZRANGE', 'z', 0, -1, 'BYSCORE', 'BYLEX'), ('ZRANGE', 'z', 0, -1, 'BYLEX', 'BYLEX'),
        ('ZRANGE', 'z', 0, -1, 'REV', 'REV'), ('ZRANGEBYSCORE', 'z', '-inf', 'inf', 'REV'), ('ZRANGEBYSCORE', 'z', '-inf', 'inf', 'BYSCORE'),
        ('ZREVRANGEBYSCORE', 'z', 'inf', '-inf', 'REV'), ('ZRANGEBYLEX', 'z', '-', '+', 'BYLEX'), ('ZREVRANGE', 'z', 0, -1, 'REV'),
        ('ZRANGE', 'z', 'a', 'b'), ('ZRANGE', 'z', 0, 'x'), ('ZRANGE', 'z', '1.5', 2), ('ZRANGE', 'z', 'x', 1, 'BYSCORE'),
        ('ZRANGE', 'z', 'a', 'b', 'BYLEX'), ('ZRANGE', 'z', 0, -1, 'LIMIT', 'x', 1), ('ZRANGE', 'z', 0, -1, 'LIMIT', 1, 'x'),
        ('ZRANGE', 'z', 0, -1, 'BYSCORE', 'LIMIT', 1), ('ZRANGE', 'z', 0, -1, 'BYSCORE', 'LIMIT', 'x', 'y', 'z'),
        ('ZRANGE', 'z', 0, -1, 'FOO'), ('ZRANGE', 'z', 0, -1, 'WITHSCORES', 'WITHSCORES'), ('ZRANGE', 'z', 0),
        ('ZRANGE', 'z', 'x', 'y', 'LIMIT', 0, 1),   # the LIMIT error wins over the range
        ('ZRANGE', 's', 0, -1), ('ZRANGE', 's', 'x', 'y'), ('ZRANGE', 's', 0, -1, 'FOO'), ('ZRANGEBYSCORE', 's', 0, 1),
        ('ZRANGEBYSCORE', 'z', 1, 2, 'LIMIT', 0), ('ZRANGEBYSCORE', 'z', 1, 2, 'WITHSCORES', 'x'),
        ('ZRANGE', 'z', 0, -1, 'BYSCORE', 'LIMIT', 0, 1, 'LIMIT', 1, 1),
    ])


@test
def zrangestore(t):
    both(t, [
        ('ZADD', 'z', 1, 'a', 2, 'b', 3, 'c', 4, 'd'),
        ('ZRANGESTORE', 'd', 'z', 0, 1), ('ZRANGE', 'd', 0, -1, 'WITHSCORES'),
        ('ZRANGESTORE', 'd', 'z', 0, -1, 'REV'), ('ZRANGE', 'd', 0, -1, 'WITHSCORES'),
        ('ZRANGESTORE', 'd', 'z', '(1', '+inf', 'BYSCORE', 'LIMIT', 0, 2), ('ZRANGE', 'd', 0, -1, 'WITHSCORES'),
        ('ZRANGESTORE', 'd', 'z', '+inf', '(1', 'BYSCORE', 'REV', 'LIMIT', 1, 1), ('ZRANGE', 'd', 0, -1, 'WITHSCORES'),
        ('ZRANGESTORE', 'd', 'z', '[b', '+', 'BYLEX'), ('ZRANGE', 'd', 0, -1, 'WITHSCORES'),
        ('ZRANGESTORE', 'd', 'z', 5, 10), ('EXISTS', 'd'), ('ZRANGESTORE', 'd', 'z', 0, -1), ('ZRANGESTORE', 'd', 'no', 0, -1),
        ('EXISTS', 'd'), ('ZRANGESTORE', 'd', 'z', 0, -1, 'WITHSCORES'), ('ZRANGESTORE', 'd', 'z', 0),
        ('ZRANGESTORE', 'z', 'z', 1, -1), ('ZRANGE', 'z', 0, -1, 'WITHSCORES'),              # onto itself
        ('SET', 's', 'v', 'EX', 100), ('ZRANGESTORE', 's', 'z', 0, -1), ('TYPE', 's'), ('TTL', 's'),
        ('SET', 'src', 'v'), ('ZRANGESTORE', 'd', 'src', 0, -1), ('ZRANGESTORE', 'd', 'src', 'x', 'y'),
        ('ZADD', 'neg', -1, 'a'), ('ZRANGESTORE', 'd2', 'neg', 0, -1), ('ZSCORE', 'd2', 'a'),
    ])


# ---------------------------------------------------------------- removals and pops

@test
def zrem_and_zremrange(t):
    both(t, [
        ('ZADD', 'z', 1, 'a', 2, 'b', 3, 'c', 4, 'd', 5, 'e'),
        ('ZREM', 'z', 'a', 'x', 'a'), ('ZREM', 'z', 'x'), ('ZREM', 'no', 'a'), ('ZREM', 'z'),
        ('ZREMRANGEBYRANK', 'z', -1, -1), ('ZREMRANGEBYRANK', 'z', 5, 10), ('ZREMRANGEBYRANK', 'z', 2, 1),
        ('ZREMRANGEBYRANK', 'z', 'x', 1), ('ZREMRANGEBYRANK', 'z', 0, '1.0'), ('ZRANGE', 'z', 0, -1, 'WITHSCORES'),
        ('ZADD', 'z', 10, 'p', 11, 'q', 12, 'r'),
        ('ZREMRANGEBYSCORE', 'z', '(2', '(11'), ('ZREMRANGEBYSCORE', 'z', 'x', 3), ('ZREMRANGEBYSCORE', 'z', 5, 1),
        ('ZREMRANGEBYSCORE', 'z', '(12', 'inf'), ('ZRANGE', 'z', 0, -1, 'WITHSCORES'),
        ('ZREM', 'z', 'b', 'q', 'r'), ('EXISTS', 'z'),            # emptied: the key is gone
        ('ZADD', 'l', 0, 'a', 0, 'b', 0, 'c', 0, 'd'),
        ('ZREMRANGEBYLEX', 'l', '[b', '(d'), ('ZREMRANGEBYLEX', 'l', 'x', '[c'), ('ZREMRANGEBYLEX', 'l', '+', '-'),
        ('ZRANGE', 'l', 0, -1), ('ZREMRANGEBYLEX', 'l', '-', '+'), ('EXISTS', 'l'),
        ('ZADD', 'r', 1, 'a', 2, 'b'), ('ZREMRANGEBYRANK', 'r', 0, -1), ('EXISTS', 'r'),
        ('ZREMRANGEBYRANK', 'no', 0, -1), ('ZREMRANGEBYSCORE', 'no', 'a', 'b'), ('ZREMRANGEBYLEX', 'no', 'a', 'b'),
        ('SET', 's', 'v'), ('ZREM', 's', 'a'), ('ZREMRANGEBYRANK', 's', 0, 1), ('ZREMRANGEBYSCORE', 's', 0, 1),
        ('ZREMRANGEBYLEX', 's', '-', '+'), ('ZREMRANGEBYSCORE', 's', 'x', 1), ('ZREMRANGEBYLEX', 's', 'x', '+'),
        ('ZREMRANGEBYRANK', 's', 'x', 1),
    ])


@test
def zpopmin_zpopmax(t):
    both(t, [
        ('ZADD', 'z', 1, 'a', 2, 'b', 3, 'c', 4, 'd', '1.5', 'e'),
        ('ZPOPMIN', 'z'), ('ZPOPMAX', 'z'), ('ZPOPMIN', 'z', 2), ('ZPOPMAX', 'z', 1), ('ZPOPMIN', 'z', 0),
        ('ZPOPMIN', 'z', -1), ('ZPOPMIN', 'z', 'x'), ('ZPOPMIN', 'z', '1.5'), ('ZPOPMIN', 'z', 1, 2),
        ('ZPOPMAX', 'z', 100), ('EXISTS', 'z'), ('ZPOPMIN', 'z'), ('ZPOPMAX', 'no', 3), ('ZPOPMIN', 'no', 0),
        ('ZPOPMIN', 'no', -1), ('SET', 's', 'v'), ('ZPOPMIN', 's'), ('ZPOPMAX', 's', 0), ('ZPOPMIN', 's', -1),
        ('ZADD', 'one', 'inf', 'x'), ('ZPOPMAX', 'one', '9223372036854775807'), ('EXISTS', 'one'),
    ])


@test
def zmpop(t):
    both(t, [
        ('ZADD', 'a', 1, 'x', 2, 'y', 3, 'z'), ('ZADD', 'b', 10, 'p', 20, 'q'), ('SET', 's', 'v'),
        ('ZMPOP', 1, 'a', 'MIN'), ('ZMPOP', 2, 'no', 'b', 'max', 'COUNT', 1), ('ZMPOP', 1, 'a', 'MAX', 'COUNT', 10),
        ('EXISTS', 'a'), ('ZMPOP', 1, 'no', 'MIN'), ('ZMPOP', 2, 'no', 'a', 'MIN'),
        ('ZMPOP', 0, 'a', 'MIN'), ('ZMPOP', -1, 'a', 'MIN'), ('ZMPOP', 'x', 'a', 'MIN'), ('ZMPOP', 1, 'a', 'LEFT'),
        ('ZMPOP', 2, 'a', 'MIN'), ('ZMPOP', 5, 'a', 'MIN'), ('ZMPOP', 1, 'b', 'MIN', 'COUNT', 0), ('ZMPOP', 1, 'b', 'MIN', 'COUNT', -1),
        ('ZMPOP', 1, 'b', 'MIN', 'COUNT', 'x'), ('ZMPOP', 1, 'b', 'MIN', 'COUNT', 1, 'COUNT', 2), ('ZMPOP', 1, 'b', 'MIN', 'COUNT'),
        ('ZMPOP', 1, 'b', 'MIN', 'FOO'), ('ZMPOP', 2, 's', 'b', 'MIN'), ('ZMPOP', 2, 'b', 's', 'MIN'),
        ('ZMPOP', 2, 'no', 's', 'MIN'), ('ZMPOP', 1, 'b', 'min', 'count', 5), ('EXISTS', 'b'),
    ])


# ---------------------------------------------------------------- set operations

@test
def zunion_zinter_zdiff(t):
    both(t, [
        ('ZADD', 'a', 1, 'x', 2, 'y', 3, 'z'), ('ZADD', 'b', 10, 'y', 20, 'z', 30, 'w'), ('ZADD', 'c', 5, 'z', 6, 'v'),
        ('ZUNION', 2, 'a', 'b'), ('ZUNION', 2, 'a', 'b', 'WITHSCORES'), ('ZUNION', 3, 'a', 'b', 'c', 'WITHSCORES'),
        ('ZUNION', 2, 'a', 'b', 'WEIGHTS', 2, 3, 'WITHSCORES'), ('ZUNION', 2, 'a', 'b', 'WEIGHTS', '-1', '0.5', 'WITHSCORES'),
        ('ZUNION', 2, 'a', 'b', 'AGGREGATE', 'MIN', 'WITHSCORES'), ('ZUNION', 2, 'a', 'b', 'aggregate', 'max', 'withscores'),
        ('ZUNION', 2, 'a', 'b', 'AGGREGATE', 'SUM', 'AGGREGATE', 'MAX', 'WEIGHTS', 1, 2, 'WEIGHTS', 3, 4, 'WITHSCORES'),
        ('ZUNION', 2, 'a', 'no', 'WITHSCORES'), ('ZUNION', 1, 'no'), ('ZUNION', 2, 'a', 'a', 'WITHSCORES'),
        ('ZINTER', 2, 'a', 'b', 'WITHSCORES'), ('ZINTER', 3, 'a', 'b', 'c', 'WITHSCORES'), ('ZINTER', 2, 'a', 'no'),
        ('ZINTER', 2, 'a', 'b', 'WEIGHTS', 2, 3, 'AGGREGATE', 'MIN', 'WITHSCORES'), ('ZINTER', 1, 'a'),
        ('ZINTER', 2, 'b', 'a', 'AGGREGATE', 'MAX'), ('ZINTER', 2, 'a', 'a', 'WEIGHTS', 1, 2, 'WITHSCORES'),
        ('ZDIFF', 2, 'a', 'b', 'WITHSCORES'), ('ZDIFF', 3, 'b', 'a', 'c', 'WITHSCORES'), ('ZDIFF', 1, 'a'),
        ('ZDIFF', 2, 'no', 'a'), ('ZDIFF', 2, 'a', 'no', 'WITHSCORES'), ('ZDIFF', 2, 'a', 'a'),
    ])


@test
def zset_ops_errors(t):
    both(t, [
        ('ZADD', 'a', 1, 'x'), ('ZADD', 'b', 2, 'x'), ('SET', 's', 'v'),
        ('ZUNION', 0, 'a'), ('ZUNION', -1, 'a'), ('ZUNION', 'x', 'a'), ('ZUNION', 3, 'a', 'b'), ('ZINTER', 0, 'a'),
        ('ZDIFF', 0, 'a'), ('ZUNIONSTORE', 'd', 0, 'a'), ('ZINTERSTORE', 'd', -5, 'a'), ('ZDIFFSTORE', 'd', 0, 'a'),
        ('ZUNIONSTORE', 'd', 'x', 'a'), ('ZUNIONSTORE', 'd', 2, 'a'), ('ZINTERCARD', 0, 'a'), ('ZINTERCARD', 2, 'a'),
        ('ZUNION', 2, 'a', 's'), ('ZUNION', 2, 'a', 's', 'FOO'), ('ZUNION', 2, 'a', 'b', 'FOO'),
        ('ZUNION', 2, 'a', 'b', 'WEIGHTS', 1), ('ZUNION', 2, 'a', 'b', 'WEIGHTS', 1, 'x'), ('ZUNION', 2, 'a', 'b', 'WEIGHTS', 1, 'nan'),
        ('ZUNION', 2, 'a', 'b', 'WEIGHTS', 'x', 1, 'AGGREGATE', 'foo'),
        ('ZUNION', 2, 'a', 'b', 'AGGREGATE', 'avg'), ('ZUNION', 2, 'a', 'b', 'AGGREGATE'), ('ZUNION', 2, 'a', 'b', 'WITHSCORES', 'x'),
        ('ZDIFF', 2, 'a', 'b', 'WEIGHTS', 1, 2), ('ZDIFF', 2, 'a', 'b', 'AGGREGATE', 'SUM'), ('ZINTER', 2, 'a', 'b', 'LIMIT', 1),
        ('ZUNIONSTORE', 'd', 2, 'a', 'b', 'WITHSCORES'), ('ZINTERCARD', 2, 'a', 'b', 'WITHSCORES'),
        ('ZINTERCARD', 2, 'a', 'b', 'WEIGHTS', 1, 1), ('ZINTERCARD', 2, 'a', 'b', 'AGGREGATE', 'MIN'),
        ('ZINTERCARD', 2, 'a', 'b', 'LIMIT', -1), ('ZINTERCARD', 2, 'a', 'b', 'LIMIT', 'x'), ('ZINTERCARD', 2, 'a', 'b', 'LIMIT'),
        ('ZINTERCARD', 2, 'a', 's'), ('ZINTERCARD', 'x', 'a'), ('ZINTERCARD', -1, 'a'),
        ('ZUNIONSTORE', 's', 2, 'a', 'b'), ('TYPE', 's'),                 # the destination's type does not matter
    ])


@test
def zset_ops_store(t):
    both(t, [
        ('ZADD', 'a', 1, 'x', 2, 'y', 3, 'z'), ('ZADD', 'b', 10, 'y', 20, 'z', 30, 'w'),
        ('ZUNIONSTORE', 'd', 2, 'a', 'b'), ('ZRANGE', 'd', 0, -1, 'WITHSCORES'),
        ('ZUNIONSTORE', 'd', 2, 'a', 'b', 'WEIGHTS', 1, -1, 'AGGREGATE', 'MAX'), ('ZRANGE', 'd', 0, -1, 'WITHSCORES'),
        ('ZINTERSTORE', 'd', 2, 'a', 'b'), ('ZRANGE', 'd', 0, -1, 'WITHSCORES'),
        ('ZINTERSTORE', 'd', 2, 'a', 'no'), ('EXISTS', 'd'),
        ('ZDIFFSTORE', 'd', 2, 'a', 'b'), ('ZRANGE', 'd', 0, -1, 'WITHSCORES'), ('ZDIFFSTORE', 'd', 2, 'a', 'a'), ('EXISTS', 'd'),
        ('ZUNIONSTORE', 'a', 2, 'a', 'b'), ('ZRANGE', 'a', 0, -1, 'WITHSCORES'),        # onto an input
        ('ZDIFFSTORE', 'b', 2, 'b', 'a'), ('EXISTS', 'b'),
        ('ZADD', 't', 1, 'q'), ('EXPIRE', 't', 100), ('ZUNIONSTORE', 't', 1, 't'), ('TTL', 't'),
        ('ZINTERCARD', 1, 'a'), ('ZINTERCARD', 2, 'a', 'a', 'LIMIT', 2), ('ZINTERCARD', 2, 'a', 'a', 'LIMIT', 0),
        ('ZINTERCARD', 2, 'a', 'no'), ('ZINTERCARD', 1, 'no'),
        ('ZADD', '{x}1', 1, 'a'), ('ZADD', '{y}2', 2, 'a'), ('ZUNIONSTORE', '{z}3', 2, '{x}1', '{y}2'), ('ZSCORE', '{z}3', 'a'),
    ])


@test
def zset_ops_float_conventions(t):
    """inf * 0 weights count as 0; inf + -inf sums to 0; in ZINTER a NaN from
    a later input is ignored by MIN and MAX, as Redis does."""
    both(t, [
        ('ZADD', 'i1', 0, 'm', 5, 'n'), ('ZADD', 'i2', 'inf', 'm', 1, 'n'), ('ZADD', 'i3', '-inf', 'm', '-inf', 'n'),
        ('ZINTER', 2, 'i1', 'i2', 'WEIGHTS', 'inf', 1, 'AGGREGATE', 'MIN', 'WITHSCORES'),
        ('ZINTER', 2, 'i2', 'i1', 'WEIGHTS', 1, 'inf', 'AGGREGATE', 'MIN', 'WITHSCORES'),
        ('ZINTER', 2, 'i2', 'i1', 'WEIGHTS', 0, 'inf', 'AGGREGATE', 'MAX', 'WITHSCORES'),
        ('ZINTER', 2, 'i2', 'i1', 'WEIGHTS', 0, 'inf', 'WITHSCORES'),
        ('ZINTER', 2, 'i2', 'i3', 'WITHSCORES'), ('ZUNION', 2, 'i2', 'i3', 'WITHSCORES'),
        ('ZUNION', 2, 'i1', 'i2', 'WEIGHTS', 'inf', 0, 'AGGREGATE', 'MIN', 'WITHSCORES'),
        ('ZINTER', 3, 'i1', 'i2', 'i3', 'WEIGHTS', 1, 0, 'inf', 'AGGREGATE', 'MIN', 'WITHSCORES'),
        ('ZUNION', 2, 'i1', 'i1', 'WEIGHTS', 1, '-1', 'WITHSCORES'), ('ZUNION', 1, 'i2', 'WEIGHTS', '-inf', 'WITHSCORES'),
        ('ZADD', 'neg', -1, 'a'), ('ZUNION', 1, 'neg', 'WEIGHTS', 0, 'WITHSCORES'),
        ('ZUNIONSTORE', 'd', 1, 'neg', 'WEIGHTS', 0), ('ZSCORE', 'd', 'a'), ('ZSCAN', 'd', 0),
        ('ZADD', 'f1', '0.1', 'a', '0.2', 'b'), ('ZADD', 'f2', '0.2', 'a', '0.1', 'b'), ('ZADD', 'f3', '0.3', 'a', '0.3', 'b', 1, 'c'),
        ('ZUNION', 3, 'f1', 'f2', 'f3', 'WITHSCORES'), ('ZUNION', 3, 'f3', 'f2', 'f1', 'WITHSCORES'),
        ('ZINTER', 3, 'f3', 'f1', 'f2', 'WITHSCORES'), ('ZINTER', 3, 'f1', 'f3', 'f2', 'WEIGHTS', 3, 7, '0.1', 'WITHSCORES'),
    ])


@test
def zset_ops_with_sets(t):
    """Plain sets are accepted as inputs, every member scoring 1 (times its
    weight), in all three set encodings."""
    both(t, [
        ('ZADD', 'z', 1, 'a', 2, 'b', 5, '7'), ('SADD', 'si', 1, 2, 7, 3), ('SADD', 'sl', 'a', 'q', '7'),
        ('SADD', 'sh', *['h%d' % i for i in range(200)], 'a'),
        ('ZUNION', 2, 'z', 'si', 'WITHSCORES'), ('ZUNION', 3, 'z', 'si', 'sl', 'WEIGHTS', 1, 2, 3, 'WITHSCORES'),
        ('ZINTER', 2, 'z', 'sl', 'WITHSCORES'), ('ZINTER', 2, 'si', 'z', 'AGGREGATE', 'MAX', 'WITHSCORES'),
        ('ZINTER', 2, 'sh', 'z', 'WITHSCORES'), ('ZINTER', 2, 'sl', 'sh', 'WITHSCORES'), ('ZINTER', 1, 'si', 'WITHSCORES'),
        ('ZDIFF', 2, 'z', 'si', 'WITHSCORES'), ('ZDIFF', 2, 'si', 'z', 'WITHSCORES'), ('ZDIFF', 2, 'sl', 'sh', 'WITHSCORES'),
        ('ZUNIONSTORE', 'd', 2, 'si', 'sl'), ('ZRANGE', 'd', 0, -1, 'WITHSCORES'), ('TYPE', 'd'),
        ('ZINTERCARD', 2, 'z', 'sl'), ('ZINTERCARD', 2, 'sh', 'sl', 'LIMIT', 1),
        ('ZUNION', 2, 'sh', 'z'), ('ZCARD', 'd'),
    ])


# ---------------------------------------------------------------- ZRANDMEMBER, ZSCAN

@test
def zrandmember_deterministic(t):
    both(t, [
        ('ZADD', 'z', 1, 'a', 2, 'b', 3, 'c', '1.5', 'd'), ('SET', 's', 'v'),
        ('ZRANDMEMBER', 'no'), ('ZRANDMEMBER', 'no', 5), ('ZRANDMEMBER', 'no', -5, 'WITHSCORES'), ('ZRANDMEMBER', 's'),
        ('ZRANDMEMBER', 's', 1), ('ZRANDMEMBER', 'z', 0), ('ZRANDMEMBER', 'z', 0, 'WITHSCORES'),
        ('ZRANDMEMBER', 'z', 4), ('ZRANDMEMBER', 'z', 10, 'WITHSCORES'),     # the whole set, from the top
        ('ZRANDMEMBER', 'z', 1, 'x'), ('ZRANDMEMBER', 'z', 'x'), ('ZRANDMEMBER', 'z', '1.0'),
        ('ZRANDMEMBER', 'z', 1, 'WITHSCORES', 'x'), ('ZRANDMEMBER', 'no', 1, 'x'),
        ('ZRANDMEMBER', 'no', '-9223372036854775808'), ('ZRANDMEMBER', 'no', '-9223372036854775807', 'WITHSCORES'),
        ('ZRANDMEMBER', 'no', '9223372036854775807', 'WITHSCORES'), ('ZRANDMEMBER', 'no', '4611686018427387903', 'WITHSCORES'),
        ('ZRANDMEMBER', 'no', '4611686018427387904', 'WITHSCORES'), ('ZRANDMEMBER', 'no', '-4611686018427387904', 'WITHSCORES'),
        ('ZRANDMEMBER', 'z', 1, 'WITHSCORES', 'WITHSCORES'),
    ])
    t.compare([zadd_many('big', 300), ('ZRANDMEMBER', 'big', 300), ('ZRANDMEMBER', 'big', 1000, 'WITHSCORES')], proto=3)


@test
def zrandmember_random(t):
    for key, n in (('small', 20), ('large', 300)):
        for srv in (t.ref, t.sut):
            srv.call(*zadd_many(key, n, score=lambda i: i % 7))
        members = {b'm%d' % i: i % 7 for i in range(n)}
        for srv in (t.ref, t.sut):
            for proto in BOTH:
                with srv.client(proto) as c:
                    got = c.call('ZRANDMEMBER', key)
                    assert got in members, got
                    for count in (1, 5, n // 2, n - 1):
                        got = c.call('ZRANDMEMBER', key, count)
                        assert len(got) == count and len(set(got)) == count, (srv.label, got)
                        assert set(got) <= set(members), got
                    got = c.call('ZRANDMEMBER', key, -3 * n)
                    assert len(got) == 3 * n and set(got) <= set(members), got
                    assert len(set(got)) > n // 2, 'repeats should still cover the set'
                    for count in (7, -7, n - 2):
                        got = c.call('ZRANDMEMBER', key, count, 'WITHSCORES')
                        flat = got if proto == 2 else [x for p in got for x in p]
                        assert len(flat) == 2 * abs(count), got
                        for m, s in zip(flat[::2], flat[1::2]):
                            assert float(s) == members[m], (m, s)
                        if proto == 3:
                            assert all(isinstance(p[1], float) for p in got)
                        if count > 0:
                            assert len(set(flat[::2])) == count


@test
def zscan_packed(t):
    both(t, [
        ('ZADD', 'f', '0.1', 'a', '-0', 'b', '1e20', 'c', '1.5', 'd', '123456789012345678', 'e', '2.5e-7', 'f',
         '4611686018427387904', 'g', '4611686018427388928', 'h', '-4611686018427387904', 'i', 'inf', 'j', '-inf', 'k'),
        ('ZSCAN', 'f', 0), ('ZSCAN', 'f', 12345), ('ZSCAN', 'f', 0, 'MATCH', '[a-d]'), ('ZSCAN', 'f', 0, 'COUNT', 1),
        ('ZSCAN', 'f', 0, 'MATCH', '*', 'COUNT', 100), ('ZSCAN', 'f', 0, 'match', 'x*'),
        ('ZSCAN', 'no', 0), ('ZSCAN', 'no', 0, 'COUNT', 0), ('ZSCAN', 'no', 'x'),
        ('ZSCAN', 'f', 'x'), ('ZSCAN', 'f', ' 1'), ('ZSCAN', 'f', '-1'), ('ZSCAN', 'f', '18446744073709551615'),
        ('ZSCAN', 'f', '18446744073709551616'), ('ZSCAN', 'f', ''), ('ZSCAN', 'f', '1x'),
        ('ZSCAN', 'f', 0, 'COUNT', 0), ('ZSCAN', 'f', 0, 'COUNT', -1), ('ZSCAN', 'f', 0, 'COUNT', 'x'),
        ('ZSCAN', 'f', 0, 'TYPE', 'zset'), ('ZSCAN', 'f', 0, 'MATCH'), ('ZSCAN', 'f', 0, 'FOO', 'bar'),
        ('SET', 's', 'v'), ('ZSCAN', 's', 0), ('ZSCAN', 's', 'x'),
    ])


def full_zscan(srv, key, proto=2, count=7, match=None):
    """Every (member, score) a complete ZSCAN iteration returns, deduplicated."""
    seen, cursor = {}, b'0'
    with srv.client(proto) as c:
        while True:
            args = ['ZSCAN', key, cursor, 'COUNT', count] + (['MATCH', match] if match else [])
            cursor, flat = c.call(*args)
            for m, s in zip(flat[::2], flat[1::2]):
                seen[m] = s
            if cursor == b'0':
                return seen


@test
def zscan_skiplist(t):
    """Skiplist sets are walked through their hash table, in an order of
    their own: a full iteration must return the same pairs."""
    for srv in (t.ref, t.sut):
        srv.call(*zadd_many('big', 500, score=lambda i: (i % 13) / 4 - 1))
        srv.call('ZADD', 'big', '-0', 'nz', '123456789012345678', 'huge', '0.1', 'tenth', 'inf', 'top')
    for proto in BOTH:
        t.same(lambda s: full_zscan(s, 'big', proto), 'full ZSCAN')
        t.same(lambda s: full_zscan(s, 'big', proto, count=1000, match='m1*'), 'ZSCAN MATCH')
    t.compare([Pairs('ZSCAN', 'big', 0, 'COUNT', 100000), ('ZSCAN', 'big', 0, 'COUNT', 0)])


# ---------------------------------------------------------------- encodings

@test
def skiplist_encoding(t):
    """The same commands on sets past the listpack limits (129+ members, or a
    member over 64 bytes)."""
    long = 'x' * 65
    steps = [
        zadd_many('z', 200, score=lambda i: i % 17, member=lambda i: 'k%03d' % i),
        ('ZADD', 'w', 1, 'a', 2, long, 3, 'c'),
        ('ZCARD', 'z'), ('ZRANGE', 'z', 0, 9, 'WITHSCORES'), ('ZRANGE', 'z', -5, -1, 'REV', 'WITHSCORES'),
        ('ZRANGE', 'w', 0, -1, 'WITHSCORES'), ('ZSCORE', 'w', long), ('ZRANK', 'w', long),
        ('ZRANK', 'z', 'k100'), ('ZREVRANK', 'z', 'k100'), ('ZCOUNT', 'z', '(3', 7), ('ZRANGEBYSCORE', 'z', 5, 5),
        ('ZRANGEBYSCORE', 'z', '(15', 'inf', 'WITHSCORES', 'LIMIT', 3, 4), ('ZREVRANGEBYSCORE', 'z', 10, 9, 'LIMIT', 2, 5),
        ('ZADD', 'z', 'INCR', 100, 'k005'), ('ZRANGE', 'z', -2, -1, 'WITHSCORES'),
        ('ZADD', 'z', 'GT', 'CH', 1, 'k006', 50, 'k007'), ('ZINCRBY', 'z', '-0.5', 'k150'), ('ZRANK', 'z', 'k150'),
        ('ZREM', 'z', 'k000', 'k001', 'nope'), ('ZREMRANGEBYRANK', 'z', 10, 20), ('ZREMRANGEBYSCORE', 'z', 16, 16),
        ('ZCARD', 'z'), ('ZRANGE', 'z', 50, 60, 'WITHSCORES'), ('ZPOPMIN', 'z', 3), ('ZPOPMAX', 'z', 2),
        ('ZMPOP', 1, 'z', 'MAX', 'COUNT', 2), ('ZRANGESTORE', 'small', 'z', 0, 9), ('ZRANGE', 'small', 0, -1, 'WITHSCORES'),
        ('ZRANGESTORE', 'copy', 'z', 0, -1), ('ZCARD', 'copy'), ('ZRANGE', 'copy', 100, 110, 'WITHSCORES'),
        ('ZUNIONSTORE', 'u', 2, 'z', 'w', 'WEIGHTS', 2, 1), ('ZRANGE', 'u', 0, 20, 'WITHSCORES'), ('ZCARD', 'u'),
        ('ZINTER', 2, 'z', 'copy', 'WITHSCORES', 'AGGREGATE', 'MAX'), ('ZDIFF', 2, 'z', 'small'),
        ('ZADD', 'z', '-0', 'negzero'), ('ZSCORE', 'z', 'negzero'),           # a skiplist keeps -0
        ('ZREMRANGEBYRANK', 'z', 0, -1), ('EXISTS', 'z'),
        zadd_many('lex', 150, score=lambda i: 0, member=lambda i: 'l%03d' % i),
        ('ZRANGEBYLEX', 'lex', '[l010', '(l020'), ('ZLEXCOUNT', 'lex', '(l100', '+'),
        ('ZREVRANGEBYLEX', 'lex', '+', '[l140', 'LIMIT', 2, 3), ('ZREMRANGEBYLEX', 'lex', '-', '[l099'), ('ZCARD', 'lex'),
    ]
    both(t, steps)


@test
def encoding_thresholds_configured(t):
    """Limits of 0 (every set a skiplist) and 2 (conversion at the third
    member) give the same replies."""
    steps = [
        ('ZADD', 'z', 1, 'a'), ('ZADD', 'z', 2, 'b'), ('ZADD', 'z', 3, 'c', '-0', 'd'), ('ZRANGE', 'z', 0, -1, 'WITHSCORES'),
        ('ZADD', 'neg', '-0', 'a'), ('ZSCORE', 'neg', 'a'), ('ZRANK', 'z', 'c'), ('ZPOPMIN', 'z'), ('ZREM', 'z', 'a', 'b'),
        ('ZRANGE', 'z', 0, -1, 'WITHSCORES'), ('ZUNIONSTORE', 'u', 2, 'z', 'neg'), ('ZRANGE', 'u', 0, -1, 'WITHSCORES'),
        ('ZADD', 'v', 1, 'abcdef'), ('ZRANGE', 'v', 0, -1),
    ]
    for entries, value in ((0, 64), (2, 64), (128, 3)):
        ref, sut = t.spawn_pair(**{'zset-max-listpack-entries': entries, 'zset-max-listpack-value': value})
        t.compare(steps, ref=ref, sut=sut)
        t.compare([('FLUSHALL',)] + steps, proto=3, ref=ref, sut=sut)


# ---------------------------------------------------------------- keyspace interplay

@test
def zset_keyspace(t):
    both(t, [
        ('ZADD', 'z', 1, 'a'), ('TYPE', 'z'), ('EXPIRE', 'z', 100), ('ZADD', 'z', 2, 'b'), Within(98, 100, 'TTL', 'z'),
        ('ZREM', 'z', 'a'), Within(98, 100, 'TTL', 'z'), ('ZINCRBY', 'z', 1, 'b'), Within(98, 100, 'TTL', 'z'),
        ('RENAME', 'z', 'y'), ('ZRANGE', 'y', 0, -1, 'WITHSCORES'), ('COPY', 'y', 'x'), ('ZADD', 'x', 5, 'c'),
        ('ZCARD', 'y'), ('ZCARD', 'x'), ('DEL', 'y'), ('EXISTS', 'y'), ('GET', 'x'), ('APPEND', 'x', 'v'),
        ('ZPOPMIN', 'x', 5), ('EXISTS', 'x'), ('SELECT', 1), ('ZADD', 'z', 1, 'a'), ('MOVE', 'z', 0), ('SELECT', 0),
        ('ZRANGE', 'z', 0, -1), ('TYPE', 'z'),
    ])


@test
def command_table(t):
    fixed = ['zadd', 'zincrby', 'zrem', 'zcard', 'zscore', 'zmscore', 'zcount', 'zlexcount', 'zrange',
             'zrangestore', 'zrevrange', 'zrangebyscore', 'zrevrangebyscore', 'zrangebylex',
             'zrevrangebylex', 'zremrangebyrank', 'zremrangebyscore', 'zremrangebylex', 'zpopmin',
             'zpopmax', 'zrandmember', 'zscan']
    movable = ['zmpop', 'zunion', 'zinter', 'zdiff', 'zunionstore', 'zinterstore', 'zdiffstore', 'zintercard']

    def info(srv):
        out = []
        for e in srv.call('COMMAND', 'INFO', *(fixed + movable)):
            # xkvd has no "movablekeys" flag: those commands lock for themselves.
            flags = sorted(f for f in e[2] if f != b'movablekeys')
            out.append((e[0], e[1], flags, e[3], e[4], e[5]))
        return out
    t.same(info, 'COMMAND INFO')

    def docs(srv):
        reply = srv.call('COMMAND', 'DOCS', *(fixed + movable + ['zrank', 'zrevrank']))
        d = pairs(reply)
        # Summaries are 8.8's wording (test_command_docs.py compares them).
        return {k: (pairs(v)[b'group'], pairs(v)[b'since']) for k, v in d.items()}
    t.same(docs, 'COMMAND DOCS')


@test
def concurrent_multi_key(t):
    """Multi-key commands lock their keys' shards in one order: opposite key
    orders on many connections must not deadlock."""
    keys = ['k%d' % i for i in range(40)]
    for k in keys:
        t.sut.call('ZADD', k, 1, 'a', 2, k)
    errors = []

    def worker(n):
        try:
            with t.sut.client(timeout=20) as c:
                for i in range(150):
                    ks = keys[::-1] if (n + i) % 2 else keys
                    op = i % 5
                    if op == 0:
                        c.call('ZUNIONSTORE', ks[0], len(ks) - 1, *ks[1:])
                    elif op == 1:
                        c.call('ZINTERSTORE', ks[-1], 3, ks[0], ks[1], ks[2])
                    elif op == 2:
                        c.call('ZMPOP', len(ks), *ks, 'MIN', 'COUNT', 1)
                        c.call('ZADD', ks[i % len(ks)], i, 'a')
                    elif op == 3:
                        c.call('ZDIFFSTORE', ks[5], 2, ks[5], ks[6])
                    else:
                        c.call('ZINTERCARD', len(ks), *ks, 'LIMIT', 1)
        except Exception as e:      # noqa: BLE001 - reported below
            errors.append(repr(e))
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert not any(th.is_alive() for th in threads), 'multi-key zset commands deadlocked'
    assert not errors, errors[:3]
    assert t.sut.call('PING') == b'PONG'


# ---------------------------------------------------------------- randomized differential

SCORES = ['0', '1', '-1', '2', '2', '3', '1.5', '-2.5', '10', '0.1', '1e20', '-1e-3', 'inf', '-inf', '+inf', '-0']


def random_steps(rng, nmembers, nsteps):
    """A reproducible mix of writes and reads on one set (scores with ties
    and infinities) and one all-zero-score set for lex commands."""
    def member():
        return 'm%d' % rng.randrange(nmembers)

    def score():
        return rng.choice(SCORES) if rng.random() < 0.7 else '%.3f' % rng.uniform(-50, 50)

    def bound():
        s = score()
        return ('(' + s) if rng.random() < 0.3 else s

    def lex():
        r = rng.random()
        if r < 0.1:
            return '-'
        if r < 0.2:
            return '+'
        return rng.choice('[(') + member()

    def idx():
        return rng.randrange(-nmembers - 5, nmembers + 5)

    steps = []
    for _ in range(nsteps):
        r = rng.random()
        if r < 0.30:
            args = ['ZADD', 'z']
            flags = rng.choice([[], [], ['NX'], ['XX'], ['GT'], ['LT'], ['CH'], ['XX', 'CH'], ['GT', 'CH']])
            if rng.random() < 0.1:
                args += flags + ['INCR', score(), member()]
            else:
                args += flags
                for _ in range(rng.randint(1, 6)):
                    args += [score(), member()]
            steps.append(tuple(args))
        elif r < 0.38:
            steps.append(('ZADD', 'lex', 0, member()))
        elif r < 0.46:
            steps.append(('ZREM', 'z') + tuple(member() for _ in range(rng.randint(1, 3))))
        elif r < 0.52:
            steps.append(('ZINCRBY', 'z', score(), member()))
        elif r < 0.60:
            steps.append(('ZRANGE', 'z', idx(), idx()) + (('WITHSCORES',) if rng.random() < 0.5 else ())
                         + (('REV',) if rng.random() < 0.3 else ()))
        elif r < 0.67:
            a, b = bound(), bound()
            cmd = ['ZRANGEBYSCORE', 'z', a, b] if rng.random() < 0.5 else ['ZREVRANGEBYSCORE', 'z', b, a]
            if rng.random() < 0.5:
                cmd.append('WITHSCORES')
            if rng.random() < 0.4:
                cmd += ['LIMIT', rng.randrange(-1, 10), rng.randrange(-1, 10)]
            steps.append(tuple(cmd))
        elif r < 0.72:
            steps.append((rng.choice(['ZRANK', 'ZREVRANK']), 'z', member()))
        elif r < 0.77:
            steps.append(('ZCOUNT', 'z', bound(), bound()))
        elif r < 0.80:
            steps.append(('ZSCORE', 'z', member()))
        elif r < 0.84:
            steps.append(rng.choice([('ZLEXCOUNT', 'lex', lex(), lex()), ('ZRANGEBYLEX', 'lex', lex(), lex()),
                                     ('ZREVRANGEBYLEX', 'lex', lex(), lex(), 'LIMIT', rng.randrange(3), rng.randrange(-1, 9))]))
        elif r < 0.86:
            steps.append(('ZREMRANGEBYRANK', 'z', idx(), idx()))
        elif r < 0.88:
            steps.append(('ZREMRANGEBYSCORE', 'z', bound(), bound()))
        elif r < 0.89:
            steps.append(('ZREMRANGEBYLEX', 'lex', lex(), lex()))
        elif r < 0.91:
            steps.append((rng.choice(['ZPOPMIN', 'ZPOPMAX']), 'z') + ((rng.randrange(4),) if rng.random() < 0.5 else ()))
        elif r < 0.93:
            steps.append(('ZRANGESTORE', 'dst', 'z', bound(), bound(), 'BYSCORE'))
        elif r < 0.95:
            steps.append(('ZUNIONSTORE', 'dst', 2, 'z', 'dst', 'WEIGHTS', 1, score().lstrip('+'),
                          'AGGREGATE', rng.choice(['SUM', 'MIN', 'MAX'])))
        elif r < 0.97:
            steps.append(('ZINTER', 2, 'z', 'dst', 'WITHSCORES'))
        else:
            steps.append(('ZCARD', rng.choice(['z', 'dst', 'lex'])))
    steps += [('ZRANGE', 'z', 0, -1, 'WITHSCORES'), ('ZRANGE', 'dst', 0, -1, 'WITHSCORES'),
              ('ZRANGE', 'lex', 0, -1), ('ZCARD', 'z')]
    return steps


@test
def randomized_small(t):
    """~3000 operations on sets of at most 60 members (packed)."""
    rng = random.Random(20240611)
    steps = random_steps(rng, 60, 3000)
    t.compare(steps[:2000], doubles8=True)
    t.compare(steps[2000:], proto=3, doubles8=True)


@test
def randomized_large(t):
    """~4000 operations on sets of up to 400 members, which cross the
    128-member limit early and stay skiplists."""
    rng = random.Random(777)
    steps = [zadd_many('z', 200, score=lambda i: rng.choice(SCORES), member=lambda i: 'm%d' % (2 * i)),
             zadd_many('lex', 200, score=lambda i: 0, member=lambda i: 'm%d' % (2 * i + 1))]
    steps += random_steps(rng, 400, 4000)
    t.compare(steps[:2500], doubles8=True)
    t.compare(steps[2500:], proto=3, doubles8=True)


@test
@xkv_only
def aggregate_count_as_redis_88(t):
    """AGGREGATE COUNT: each input holding a member adds its weight (Redis
    8.8's replies)."""
    with t.sut.client() as c:
        c.call('ZADD', 'za{t}', 1, 'a', 2, 'b', 3, 'c', 'inf', 'd')
        c.call('ZADD', 'zb{t}', 1, 'b', 2, 'c', 3, 'd', '-inf', 'e')
        c.call('ZADD', 'zc{t}', 5, 'c', 6, 'x')
        assert c.call('ZUNION', 3, 'za{t}', 'zb{t}', 'zc{t}', 'WEIGHTS', 2, 3, 'inf',
                      'AGGREGATE', 'COUNT', 'WITHSCORES') == [
            b'a', b'2', b'e', b'3', b'b', b'5', b'd', b'5', b'c', b'inf', b'x', b'inf']
        assert c.call('ZINTER', 2, 'za{t}', 'zb{t}', 'WEIGHTS', 2, 3, 'AGGREGATE', 'count',
                      'WITHSCORES') == [b'b', b'5', b'c', b'5', b'd', b'5']
        assert c.call('ZUNIONSTORE', 'zd{t}', 2, 'za{t}', 'zb{t}', 'AGGREGATE', 'COUNT') == 5
        assert c.call('ZRANGE', 'zd{t}', 0, -1, 'WITHSCORES') == [
            b'a', b'1', b'e', b'1', b'b', b'2', b'c', b'2', b'd', b'2']
        assert c.call('ZDIFF', 2, 'za{t}', 'zb{t}', 'AGGREGATE', 'COUNT').args[0] == \
            'ERR syntax error'
        c.call('DEL', 'za{t}', 'zb{t}', 'zc{t}', 'zd{t}')
