# SPDX-License-Identifier: GPL-2.0-only
"""INFO keysizes (Redis 8) against Redis 8.8 (/work/peers or XKV_REDIS_88):
after each step of a workload that grows, shrinks, overwrites, renames,
moves, swaps, expires and flushes keys of every type, both servers report the
same histograms. And rdb_changes_since_last_save moves as 8.8's for SETBIT
and BITFIELD (a new key once, a no-op not at all)."""

import os
import time

from harness import Client, Server, test, xkv_only

REDIS_88 = os.environ.get('XKV_REDIS_88',
                          '/work/peers/redis-8.8.0/src/redis-server')

STEPS = [
    ('SET', 's', ''), ('SET', 's1', 'x'), ('SET', 's2', 'x' * 1500), ('APPEND', 's1', 'y' * 40),
    ('SETRANGE', 's3', 200000, 'v'), ('INCR', 'n'), ('INCRBY', 'n', 123456), ('MSET', 'a', 1, 'b', 22),
    ('RPUSH', 'l', *range(9)), ('LPOP', 'l'), ('LPOP', 'l', 3), ('LTRIM', 'l', 0, 1),
    ('SADD', 'st', *range(20)), ('SPOP', 'st', 5), ('SREM', 'st', 1, 2, 3),
    ('ZADD', 'z', 1, 'a', 2, 'b', 3, 'c'), ('ZREM', 'z', 'a'), ('ZADD', 'z', 4, 'd', 5, 'e'),
    ('HSET', 'h', 'f1', 1, 'f2', 2, 'f3', 3), ('HDEL', 'h', 'f1'), ('HINCRBY', 'h', 'f4', 1),
    ('SETBIT', 'bits', 100, 1), ('BITFIELD', 'bf', 'SET', 'u8', 400, 1), ('PFADD', 'hll', 'a', 'b'),
    ('SET', 'l', 'over'), ('RENAME', 'z', 'z2'), ('MOVE', 'h', 1), ('SELECT', 1), ('HSET', 'h', 'g', 1),
    ('SELECT', 0), ('SWAPDB', 0, 1), ('SWAPDB', 0, 1), ('DEL', 's2', 'st'), ('UNLINK', 'a'),
    ('LPUSH', 'l2', 'x'), ('RPOPLPUSH', 'l2', 'l3'), ('SUNIONSTORE', 'su', 'nokey'),
    ('COPY', 'z2', 'z3'), ('GETDEL', 'b'), ('GETEX', 's1', 'PERSIST'),
    ('FLUSHDB',), ('SET', 'e', 'v', 'PX', 1), ('RPUSH', 'e2', 1, 2), ('PEXPIRE', 'e2', 1),
]


def keysizes(c):
    text = c.call('INFO', 'keysizes').decode()
    return [line for line in text.split('\r\n') if line and not line.startswith('#')]


@test
@xkv_only
def keysizes_equal_redis_88(t):
    if not os.access(REDIS_88, os.X_OK):
        print('# Redis 8.8 not built: INFO keysizes not compared')
        return
    r88 = Server('redis', redis_binary=REDIS_88, label='redis-8.8').start()
    try:
        with Client(t.sut.port) as a, Client(r88.port) as b:
            for c in (a, b):
                c.call('FLUSHALL')
            for step in STEPS:
                ra, rb = a.call(*step), b.call(*step)
                assert type(ra) is type(rb), (step, ra, rb)
                assert keysizes(a) == keysizes(b), (step, keysizes(a), keysizes(b))
            # The expired keys go (lazily or actively) on both.
            time.sleep(0.05)
            for c in (a, b):
                c.call('GET', 'e'), c.call('LLEN', 'e2')
            assert keysizes(a) == keysizes(b) == ['db1_distrib_hashes_items:4=1'], \
                (keysizes(a), keysizes(b))
            a.call('FLUSHALL')
            b.call('FLUSHALL')
    finally:
        r88.close()


@test
@xkv_only
def bit_changes_counted_as_redis_88(t):
    if not os.access(REDIS_88, os.X_OK):
        print('# Redis 8.8 not built: change counts not compared')
        return
    r88 = Server('redis', redis_binary=REDIS_88, label='redis-8.8').start()
    steps = [('SETBIT', 'f', 0, 0), ('BITFIELD', 'g', 'SET', 'i5', 0, 0), ('SETBIT', 'f', 0, 0),
             ('BITFIELD', 'g', 'SET', 'i5', 0, 0), ('SETBIT', 'f', 0, 1),
             ('BITFIELD', 'g', 'SET', 'i5', 0, 1), ('BITFIELD', 'h', 'INCRBY', 'i5', 0, 1),
             ('SETBIT', 'f', 90, 0), ('BITFIELD', 'g', 'SET', 'i5', 90, 0),
             ('BITFIELD', 'g', 'GET', 'u8', 0)]

    def dirty(c):
        text = c.call('INFO', 'persistence').decode()
        return int(text.split('rdb_changes_since_last_save:')[1].split()[0])

    try:
        with Client(t.sut.port) as a, Client(r88.port) as b:
            for step in steps:
                before = (dirty(a), dirty(b))
                assert a.call(*step) == b.call(*step), step
                assert dirty(a) - before[0] == dirty(b) - before[1], step
    finally:
        r88.close()
