# SPDX-License-Identifier: GPL-2.0-only
"""String commands. WRONGTYPE cases wait until other types exist."""

import time

from harness import Within, test, xkv_only

FUTURE_S = 4102444800            # 2100-01-01: absolute expiries replies can be compared on
FUTURE_MS = FUTURE_S * 1000 + 123


@test
def get_set_basic(t):
    t.compare([
        ('GET', 'k'), ('SET', 'k', 'v'), ('GET', 'k'), ('SET', 'k', 'v2'), ('GET', 'k'),
        ('SET', 'bin', b'a\r\nb\x00c\xff'), ('GET', 'bin'), ('SET', '', 'empty key'), ('GET', ''),
        ('SET', 'e', ''), ('GET', 'e'), ('SET', 'n', 12345), ('GET', 'n'),
        ('GET',), ('GET', 'a', 'b'), ('SET', 'k'), ('SET',), ('set', 'k', 'lower'), ('get', 'k'),
    ])


@test
def set_conditions(t):
    t.compare([
        ('SET', 'k', 'v', 'XX'), ('GET', 'k'), ('SET', 'k', 'v', 'NX'), ('SET', 'k', 'v2', 'NX'),
        ('GET', 'k'), ('SET', 'k', 'v3', 'XX'), ('GET', 'k'),
        ('SET', 'k', 'v4', 'GET'), ('SET', 'new', 'x', 'GET'), ('GET', 'new'),
        ('SET', 'k', 'v5', 'NX', 'GET'), ('SET', 'k2', 'v', 'NX', 'GET'), ('GET', 'k2'),
        ('SET', 'k', 'v6', 'XX', 'GET'), ('SET', 'nokey', 'v', 'XX', 'GET'), ('EXISTS', 'nokey'),
        ('SET', 'k', 'v7', 'nx', 'xx'), ('SET', 'k', 'v', 'XX', 'NX'), ('SET', 'k', 'v', 'FOO'),
        ('SET', 'k', 'v', 'NX', 'NX'), ('SET', 'k', 'v', 'GET', 'GET'), ('GET', 'k'),
    ])


@test
def set_expire_options(t):
    t.compare([
        ('SET', 'k', 'v', 'EX', 100), ('SET', 'k', 'v', 'PX', 100000), ('SET', 'k', 'v', 'ex', 10, 'nx'),
        ('SET', 'k', 'v', 'EX', 10, 'EX', 10), ('SET', 'k', 'v', 'EXAT', FUTURE_S), ('EXPIRETIME', 'k'),
        ('SET', 'k', 'v2', 'KEEPTTL'), ('EXPIRETIME', 'k'), ('GET', 'k'),
        ('SET', 'k', 'v', 'PXAT', FUTURE_MS), ('PEXPIRETIME', 'k'),
        ('SET', 'k', 'v', 'XX', 'GET', 'PXAT', FUTURE_MS + 1), ('PEXPIRETIME', 'k'),
        ('SET', 'k', 'v'), ('TTL', 'k'),                 # a plain SET clears the TTL
        ('SET', 'k', 'v', 'EXAT', 1), ('GET', 'k'),     # already expired: OK, key gone
        ('SET', 'k', 'v', 'PXAT', 1, 'GET'), ('EXISTS', 'k'),
        ('SET', 'k', 'v', 'EXAT', '9223372036854775'), ('SET', 'k', 'v', 'PXAT', '9223372036854775807'),
        ('PEXPIRETIME', 'k'),
    ])
    t.compare([
        ('SET', 'k', 'v', 'EX', 100), Within(98, 100, 'TTL', 'k'),
        ('SET', 'k', 'v', 'PX', 50000), Within(48000, 50000, 'PTTL', 'k'),
        ('SET', 'k', 'v3', 'KEEPTTL'), Within(48000, 50000, 'PTTL', 'k'),
    ])


@test
def set_expire_errors(t):
    t.compare([
        ('SET', 'k', 'v', 'EX', 0), ('SET', 'k', 'v', 'EX', -1), ('SET', 'k', 'v', 'PX', 0),
        ('SET', 'k', 'v', 'PX', -100), ('SET', 'k', 'v', 'EXAT', 0), ('SET', 'k', 'v', 'PXAT', -1),
        ('SET', 'k', 'v', 'EX', 'abc'), ('SET', 'k', 'v', 'EX', '1.5'), ('SET', 'k', 'v', 'EX', ''),
        ('SET', 'k', 'v', 'EX'), ('SET', 'k', 'v', 'PX'), ('SET', 'k', 'v', 'EXAT'),
        ('SET', 'k', 'v', 'EX', 10, 'PX', 100), ('SET', 'k', 'v', 'EX', 10, 'EXAT', FUTURE_S),
        ('SET', 'k', 'v', 'PXAT', 1, 'KEEPTTL'), ('SET', 'k', 'v', 'KEEPTTL', 'EX', 1),
        ('SET', 'k', 'v', 'EX', '9223372036854775'), ('SET', 'k', 'v', 'EX', '9223372036854775807'),
        ('SET', 'k', 'v', 'PX', '9223372036854775807'), ('SET', 'k', 'v', 'EX', '9223372036854775808'),
        ('EXISTS', 'k'),
    ])


@test
def setnx_setex_psetex(t):
    t.compare([
        ('SETNX', 'k', 'v'), ('SETNX', 'k', 'v2'), ('GET', 'k'), ('SETNX', 'k'), ('SETNX', 'k', 'v', 'x'),
        ('SETEX', 'e', 100, 'v'), ('GET', 'e'), ('SETEX', 'e', 0, 'v'), ('SETEX', 'e', -5, 'v'),
        ('SETEX', 'e', 'abc', 'v'), ('SETEX', 'e', '9223372036854775', 'v'), ('SETEX', 'e', 10),
        ('PSETEX', 'p', 100000, 'v'), ('GET', 'p'), ('PSETEX', 'p', 0, 'v'), ('PSETEX', 'p', -1, 'v'),
        ('PSETEX', 'p', '1.5', 'v'), ('PSETEX', 'p', '9223372036854775807', 'v'), ('PSETEX', 'p'),
    ])
    t.compare([('SETEX', 'e', 100, 'v'), Within(98, 100, 'TTL', 'e'),
               ('PSETEX', 'p', 100000, 'v'), Within(98000, 100000, 'PTTL', 'p')])


@test
def getset_getdel(t):
    t.compare([
        ('GETSET', 'k', 'v1'), ('GETSET', 'k', 'v2'), ('GET', 'k'), ('GETSET', 'k'),
        ('SET', 't', 'v', 'EX', 100), ('GETSET', 't', 'v2'), ('TTL', 't'),   # GETSET drops the TTL
        ('GETDEL', 'k'), ('GETDEL', 'k'), ('EXISTS', 'k'), ('GETDEL',), ('GETDEL', 'a', 'b'),
    ])


@test
def getex(t):
    t.compare([
        ('GETEX', 'nokey'), ('GETEX', 'nokey', 'EX', 10), ('EXISTS', 'nokey'),
        ('SET', 'k', 'v'), ('GETEX', 'k'), ('TTL', 'k'),
        ('GETEX', 'k', 'EXAT', FUTURE_S), ('EXPIRETIME', 'k'),
        ('GETEX', 'k', 'PXAT', FUTURE_MS), ('PEXPIRETIME', 'k'),
        ('GETEX', 'k', 'PERSIST'), ('TTL', 'k'), ('GETEX', 'k', 'persist'),
        ('GETEX', 'k', 'EX'), ('GETEX', 'k', 'EX', 0), ('GETEX', 'k', 'PX', -1),
        ('GETEX', 'k', 'EX', 'abc'), ('GETEX', 'k', 'EX', '9223372036854775'),
        ('GETEX', 'k', 'PERSIST', 'EX', 10), ('GETEX', 'k', 'EX', 10, 'PX', 100), ('GETEX', 'k', 'FOO'),
        ('GETEX', 'k', 'EX', 10, 'EX', 10), ('GETEX', 'k', 'KEEPTTL'),
        ('GETEX', 'k', 'EXAT', 1), ('GET', 'k'), ('GETEX',),
    ])
    t.compare([('SET', 'k', 'v'), ('GETEX', 'k', 'EX', 100), Within(98, 100, 'TTL', 'k'),
               ('GETEX', 'k', 'PX', 50000), Within(48000, 50000, 'PTTL', 'k')])


@test
def mget_mset_msetnx(t):
    t.compare([
        ('MSET', 'a', 1, 'b', 2, 'c', 3), ('MGET', 'a', 'b', 'nokey', 'c'), ('MGET', 'a'),
        ('MSET', 'a', 'x', 'a', 'y'), ('GET', 'a'),          # the last duplicate wins
        ('MSET', 'a'), ('MSET', 'a', 1, 'b'), ('MSET',), ('MGET',),
        ('MSETNX', 'a', 1, 'new', 2), ('EXISTS', 'new'), ('MSETNX', 'n1', 1, 'n2', 2),
        ('MGET', 'n1', 'n2'), ('MSETNX', 'n3', 1, 'n3', 2), ('GET', 'n3'),
        ('MSETNX', 'a', 1, 'b'), ('MSETNX',),
        ('SET', 'ttl', 'v', 'EX', 100), ('MSET', 'ttl', 'w'), ('TTL', 'ttl'),  # MSET drops the TTL
    ])


@test
def append_strlen(t):
    t.compare([
        ('APPEND', 'k', 'hello'), ('APPEND', 'k', ' world'), ('GET', 'k'), ('STRLEN', 'k'),
        ('APPEND', 'k', ''), ('STRLEN', 'nokey'), ('APPEND', 'e', ''), ('EXISTS', 'e'), ('GET', 'e'),
        ('SET', 'n', 12), ('APPEND', 'n', 34), ('INCR', 'n'), ('STRLEN', 'n'),
        ('SET', 't', 'v', 'EX', 100), ('APPEND', 't', 'w'),
        Within(98, 100, 'TTL', 't'),                                      # APPEND keeps the TTL
        ('APPEND', 'k'), ('APPEND', 'k', 'a', 'b'), ('STRLEN',), ('STRLEN', 'a', 'b'),
    ])


@test
def incr_decr(t):
    t.compare([
        ('INCR', 'n'), ('INCR', 'n'), ('DECR', 'n'), ('DECR', 'm'), ('INCRBY', 'n', 10),
        ('INCRBY', 'n', -20), ('DECRBY', 'n', 5), ('DECRBY', 'n', -5), ('GET', 'n'),
        ('SET', 'n', '9223372036854775806'), ('INCR', 'n'), ('INCR', 'n'), ('INCRBY', 'n', 1),
        ('DECRBY', 'n', -1), ('GET', 'n'),
        ('SET', 'n', '-9223372036854775807'), ('DECR', 'n'), ('DECR', 'n'), ('INCRBY', 'n', -1),
        ('DECRBY', 'n', 9223372036854775807), ('DECRBY', 'n', '-9223372036854775808'),
        ('SET', 'z', 0), ('DECRBY', 'z', '-9223372036854775808'), ('INCRBY', 'z', '-9223372036854775808'),
        ('INCRBY', 'z', '9223372036854775808'), ('INCRBY', 'z', '1.0'), ('INCRBY', 'z', 'abc'),
        ('INCRBY', 'z', ''), ('INCRBY', 'z', ' 1'),
        ('SET', 's', 'abc'), ('INCR', 's'), ('SET', 's', '1.5'), ('INCR', 's'),
        ('SET', 's', '01'), ('INCR', 's'), ('SET', 's', '-0'), ('INCR', 's'), ('SET', 's', '+1'),
        ('INCR', 's'), ('SET', 's', ' 1'), ('INCR', 's'), ('SET', 's', '1 '), ('INCR', 's'),
        ('SET', 's', ''), ('INCR', 's'), ('SET', 's', '99999999999999999999'), ('INCR', 's'),
        ('SET', 's', '-1'), ('INCR', 's'), ('INCR', 's'), ('GET', 's'),
        ('SET', 't', 5, 'EX', 100), ('INCR', 't'), Within(98, 100, 'TTL', 't'),
        ('INCR',), ('INCR', 'a', 'b'), ('DECR',), ('INCRBY', 'n'), ('DECRBY', 'n'),
        ('INCRBY', 'n', 1, 2),
    ])


@test
def incrbyfloat(t):
    # Redis computes in long double and prints with "%.17Lf" minus trailing
    # zeros, so 0.1+0.2 gives 0.3 and 3000+1e-5 gives 3000.00001000000000007.
    t.compare([
        ('INCRBYFLOAT', 'f', '10.5'), ('INCRBYFLOAT', 'f', '0.1'), ('INCRBYFLOAT', 'f', '-5'),
        ('SET', 'f', 0), ('INCRBYFLOAT', 'f', '3.0e3'), ('INCRBYFLOAT', 'f', '1e-5'),
        ('SET', 'f', '0.1'), ('INCRBYFLOAT', 'f', '0.2'), ('SET', 'f', '5.0e3'),
        ('INCRBYFLOAT', 'f', 2), ('SET', 'f', 1), ('INCRBYFLOAT', 'f', '1e-5'),
        ('SET', 'f', '-0'), ('INCRBYFLOAT', 'f', '-0'), ('INCRBYFLOAT', 'f', '1e-20'),
        ('SET', 'f', '1.5'), ('INCRBYFLOAT', 'f', '-1.5'), ('INCRBYFLOAT', 'f', '0x10'),
        ('INCRBYFLOAT', 'f', '1e308'), ('INCRBYFLOAT', 'f', '1e308'), ('GET', 'f'),
        ('SET', 'f', 'abc'), ('INCRBYFLOAT', 'f', 1), ('SET', 'f', ' 1'), ('INCRBYFLOAT', 'f', 1),
        ('SET', 'f', 3), ('INCRBYFLOAT', 'f', 'nan'), ('INCRBYFLOAT', 'f', 'inf'),
        ('INCRBYFLOAT', 'f', '-inf'), ('INCRBYFLOAT', 'f', '1e4933'), ('INCRBYFLOAT', 'f', ' 1'),
        ('INCRBYFLOAT', 'f', '1 '), ('INCRBYFLOAT', 'f', '1.5e'), ('INCRBYFLOAT', 'f', ''),
        ('INCRBYFLOAT', 'f', 'abc'), ('GET', 'f'),
        ('SET', 'big', '1e4932'), ('INCRBYFLOAT', 'big', '1e4932'), ('GET', 'big'),
        ('SET', 't', 1, 'EX', 100), ('INCRBYFLOAT', 't', 1), Within(98, 100, 'TTL', 't'),
        ('INCRBYFLOAT', 'f'), ('INCRBYFLOAT', 'f', 1, 2),
    ])


@test
def getrange_substr(t):
    t.compare([
        ('SET', 's', 'Hello World'), ('GETRANGE', 's', 0, 4), ('GETRANGE', 's', -5, -1),
        ('GETRANGE', 's', 0, -1), ('GETRANGE', 's', 5, 3), ('GETRANGE', 's', 100, 200),
        ('GETRANGE', 's', -100, 2), ('GETRANGE', 's', -100, -50), ('GETRANGE', 's', 3, -100),
        ('GETRANGE', 's', -1, -5), ('GETRANGE', 's', 0, '9223372036854775807'),
        ('GETRANGE', 's', '-9223372036854775808', 0), ('GETRANGE', 'nokey', 0, -1),
        ('GETRANGE', 's', 'x', 1), ('GETRANGE', 's', 0, '1.5'), ('GETRANGE', 's', 0),
        ('SET', 'e', ''), ('GETRANGE', 'e', 0, -1), ('GETRANGE', 'e', -1, 0),
        ('SUBSTR', 's', 0, 4), ('SUBSTR', 's', -3, -1), ('SUBSTR', 'nokey', 0, 1),
        ('SUBSTR', 's', 'a', 'b'), ('SUBSTR', 's', 0),
    ])


@test
def setrange(t):
    t.compare([
        ('SET', 's', 'Hello World'), ('SETRANGE', 's', 6, 'Redis'), ('GET', 's'),
        ('SETRANGE', 's', 20, '!'), ('GET', 's'), ('STRLEN', 's'),      # zero padding
        ('SETRANGE', 'new', 3, 'x'), ('GET', 'new'), ('SETRANGE', 'new', 0, ''), ('GET', 'new'),
        ('SETRANGE', 'new', 10, ''), ('GET', 'new'),                      # no padding for ''
        ('SETRANGE', 'empty', 0, ''), ('SETRANGE', 'empty', 5, ''), ('EXISTS', 'empty'),
        ('SETRANGE', 's', -1, 'x'), ('SETRANGE', 's', 'abc', 'x'), ('SETRANGE', 's', '1.5', 'x'),
        ('SETRANGE', 's', 536870912, 'x'), ('SETRANGE', 's', 536870911, 'xx'),
        ('SETRANGE', 'nokey', 536870912, ''), ('SETRANGE', 's', 0), ('SETRANGE', 's', 0, 'a', 'b'),
        ('SET', 't', 'v', 'EX', 100), ('SETRANGE', 't', 1, 'w'), Within(98, 100, 'TTL', 't'),
    ])


@test
def expired_key_reads_as_missing(t):
    # String commands must treat a logically expired key as absent.
    for srv in (t.ref, t.sut):
        with srv.client() as c:
            for k in ('a', 'b', 'c', 'd'):
                c.call('SET', k, 'old', 'PX', 50)
    time.sleep(0.1)
    t.compare([('GET', 'a'), ('APPEND', 'b', 'x'), ('GET', 'b'), ('INCR', 'c'),
               ('SETNX', 'd', 'new'), ('MGET', 'a', 'b', 'c', 'd'), ('STRLEN', 'a')])


@test
def set_over_a_string_of_every_size_and_encoding(t):
    # SET reuses the old buffer when a fresh one would be the same size: the
    # value, its encoding and what GET, GETRANGE and STRLEN see must still be
    # those of a new string, whichever sizes follow each other.
    steps = []
    for size in (1, 7, 8, 43, 44, 45, 64, 100, 255, 256, 257, 1000, 4096, 44, 3, 0, 45):
        value = ''.join(chr(ord('a') + (size + i) % 26) for i in range(size))
        steps += [('SET', 'k', value), ('GET', 'k'), ('STRLEN', 'k'),
                  ('OBJECT', 'ENCODING', 'k'), ('GETRANGE', 'k', -3, -1)]
    steps += [('SET', 'k', '12345'), ('OBJECT', 'ENCODING', 'k'), ('SET', 'k', 'x' * 5),
              ('OBJECT', 'ENCODING', 'k'), ('GET', 'k'), ('RPUSH', 'l', 'a'), ('SET', 'l', 'y' * 9),
              ('GET', 'l'), ('OBJECT', 'ENCODING', 'l'), ('SET', 'k', 'z' * 9, 'GET'), ('GET', 'k'),
              ('SET', 'k', 'w' * 9, 'XX', 'EX', 100), ('GET', 'k'), ('TTL', 'k'),
              ('SET', 'k', 'v' * 9, 'KEEPTTL'), ('TTL', 'k'), ('SET', 'k', 'u' * 9), ('TTL', 'k')]
    t.compare(steps)


@test
@xkv_only
def set_over_a_string_costs_what_a_new_one_does(t):
    # A buffer reused in place must never be one a fresh SET would not get:
    # MEMORY USAGE of an overwritten key equals that of a key set once.
    c = t.sut
    pairs = ((300, 290), (300, 300), (300, 10), (10, 300), (5000, 4000), (50, 60), (45, 44))
    for i, (first, then) in enumerate(pairs):
        c.call('SET', 'over', 'a' * first)
        c.call('SET', 'over', 'b' * then)
        fresh = 'f%03d' % i                 # as long as 'over': entries cost the same
        c.call('SET', fresh, 'b' * then)
        assert c.call('GET', 'over') == b'b' * then
        assert c.call('MEMORY', 'USAGE', 'over') == c.call('MEMORY', 'USAGE', fresh), \
            (first, then, c.call('MEMORY', 'USAGE', 'over'), c.call('MEMORY', 'USAGE', fresh))
