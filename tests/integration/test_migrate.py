# SPDX-License-Identifier: GPL-2.0-only
"""MIGRATE without cluster mode: keys moved (or copied) with their values and
deadlines, from redis-server 7.0.15 to xkvd and from xkvd to xkvd (7.0.15
refuses xkvd's DUMP payloads, of RDB version 12, as it refuses Redis 8.8's),
KEYS, COPY, REPLACE, AUTH/AUTH2 errors relayed from the target, NOKEY, an
unreachable target, a cached connection whose target restarted (one retry),
and the argument errors byte for byte with 7.0.15."""

import subprocess
import time

from harness import free_port, test


def closed_port():
    return str(free_port())     # bound then released: nothing listens there


@test
def migrate_errors_as_redis(t):
    """Argument errors, NOKEY and IOERR as 7.0.15 answers them."""
    port = closed_port()
    t.compare([('SET', 'a', '1'),
               ('MIGRATE', '127.0.0.1', port, 'nokey', '0', '100'),
               ('MIGRATE', '127.0.0.1', port, '', '0', '100', 'KEYS', 'n1', 'n2'),
               ('MIGRATE', '127.0.0.1', port, 'a', '0', '100'),
               ('MIGRATE', '127.0.0.1', port, 'a', '0', '100', 'KEYS', 'a'),
               ('MIGRATE', '127.0.0.1', port, 'a', '0', '100', 'bogus'),
               ('MIGRATE', '127.0.0.1', port, 'a', 'x', '100'),
               ('MIGRATE', '127.0.0.1', port, 'a', '0', 'y'),
               ('MIGRATE', '127.0.0.1', port, 'a', '0', '100', 'AUTH'),
               ('MIGRATE', '127.0.0.1', port, 'a', '0', '100', 'AUTH2', 'u'),
               ('MIGRATE', '127.0.0.1', port),
               ('EXISTS', 'a'), ('DEL', 'a')])


@test
def migrate_from_redis_to_xkvd(t):
    """7.0.15 moves a list, a string with a deadline and a sorted set here."""
    ref = t.spawn('ref')
    sut = t.spawn('sut')
    with ref.client() as r, sut.client() as x:
        r.call('RPUSH', 'l', 'a', 'b')
        r.call('SET', 's', 'v', 'PX', '50000')
        r.call('ZADD', 'z', '1', 'm')
        assert r.call('MIGRATE', '127.0.0.1', str(sut.port), '', '0', '5000',
                      'KEYS', 'l', 's', 'z') == b'OK'
        assert r.call('DBSIZE') == 0
        assert x.call('LRANGE', 'l', '0', '-1') == [b'a', b'b']
        assert 0 < x.call('PTTL', 's') <= 50000
        assert x.call('ZSCORE', 'z', 'm') == b'1'
        # A key the target has: BUSYKEY relayed, unless REPLACE.
        r.call('SET', 's', 'new')
        err = r.call('MIGRATE', '127.0.0.1', str(sut.port), 's', '0', '5000')
        assert 'Target instance replied with error: BUSYKEY' in str(err), err
        assert r.call('MIGRATE', '127.0.0.1', str(sut.port), 's', '0', '5000',
                      'REPLACE') == b'OK'
        assert x.call('GET', 's') == b'new'


@test
def migrate_xkvd_to_xkvd(t):
    """KEYS, COPY, REPLACE, another db, AUTH errors, a restarted target."""
    src = t.sut
    dst = t.spawn('sut')
    port = str(dst.port)
    with src.client() as a, dst.client() as b:
        a.call('FLUSHALL')
        a.call('SET', 'k1', 'v1')
        a.call('SET', 'k2', 'v2', 'PX', '100000')
        a.call('HSET', 'h', 'f', 'v')
        assert a.call('MIGRATE', '127.0.0.1', port, 'k1', '0', '5000') == b'OK'
        assert a.call('MIGRATE', '127.0.0.1', port, '', '0', '5000', 'KEYS', 'k2',
                      'missing') == b'OK'
        assert b.call('GET', 'k1') == b'v1' and 0 < b.call('PTTL', 'k2') <= 100000
        assert a.call('EXISTS', 'k1', 'k2') == 0
        assert a.call('MIGRATE', '127.0.0.1', port, 'h', '3', '5000', 'COPY') == b'OK'
        assert a.call('EXISTS', 'h') == 1
        err = a.call('MIGRATE', '127.0.0.1', port, 'h', '3', '5000', 'COPY')
        assert 'Target instance replied with error: BUSYKEY' in str(err), err
        a.call('HSET', 'h', 'f', 'w')
        assert a.call('MIGRATE', '127.0.0.1', port, 'h', '3', '5000', 'REPLACE') == b'OK'
        assert a.call('EXISTS', 'h') == 0
        b.call('SELECT', '3')
        assert b.call('HGET', 'h', 'f') == b'w'
        a.call('SET', 'p', '1')
        err = a.call('MIGRATE', '127.0.0.1', port, 'p', '0', '5000', 'AUTH', 'pw')
        assert 'Target instance replied with error: ERR AUTH' in str(err), err
        # As Redis: the AUTH error is relayed, the key stays here (the
        # target, which needs no password, restored it all the same).
        assert a.call('EXISTS', 'p') == 1
    # The target restarts on its port: the cached connection is dead, the
    # retry connects afresh.
    dst.stop()
    for _ in range(3):      # its port may take a moment to be free again
        with open(dst.log_path, 'ab') as log:
            dst.proc = subprocess.Popen(dst.argv(), stdin=subprocess.DEVNULL, stdout=log,
                                        stderr=subprocess.STDOUT)
        if dst._wait_ready(10.0):
            break
        dst.stop()
        time.sleep(0.5)
    assert dst.alive(), dst.log_tail()
    with src.client() as a, dst.client() as b:
        a.call('SET', 'q', '2')
        got = a.call('MIGRATE', '127.0.0.1', port, 'q', '0', '5000')
        assert got == b'OK', got
        assert b.call('GET', 'q') == b'2' and a.call('EXISTS', 'q') == 0
