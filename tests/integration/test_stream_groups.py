# SPDX-License-Identifier: GPL-2.0-only
"""Stream consumer groups (XGROUP, XREADGROUP, XACK, XACKDEL, XDELEX, XPENDING,
XCLAIM, XAUTOCLAIM, XNACK, XINFO), compared byte for byte with redis-server
8.8.0 when it is built (explicit IDs, and no reply that holds a clock
reading); RDB payloads exchanged both ways with it through DUMP/RESTORE."""

import contextlib
import os
import time

from harness import Server, test, wait_until, xkv_only

REDIS_88 = os.environ.get('XKV_REDIS_88', '/work/peers/redis-8.8.0/src/redis-server')


@contextlib.contextmanager
def redis88():
    """Redis 8.8 for this test, or None when it is not built."""
    if not os.access(REDIS_88, os.X_OK):
        print('# Redis 8.8 not built: compared with nothing')
        yield None
        return
    srv = Server('redis', redis_binary=REDIS_88, label='redis-8.8').start()
    try:
        yield srv
    finally:
        srv.close()


def compare88(t, steps, proto=2):
    with redis88() as r:
        if r is None:
            return
        with r.client() as c:
            c.cmd('FLUSHALL')
        with t.sut.client() as c:
            c.cmd('FLUSHALL')
        t.compare(steps, proto=proto, ref=r)


def stream(key='s', n=5):
    return [('XADD', key, '%d-1' % i, 'f', i) for i in range(1, n + 1)]


@test
def groups_read_and_ack(t):
    steps = stream() + [
        ('XGROUP', 'CREATE', 's', 'g', '0'), ('XGROUP', 'CREATE', 's', 'g', '0'),
        ('XGROUP', 'CREATE', 'nokey', 'g', '0'), ('XGROUP', 'CREATE', 'm', 'g', '$', 'MKSTREAM'),
        ('XGROUP', 'CREATE', 's', 'h', '$', 'ENTRIESREAD', 3),
        ('XGROUP', 'CREATE', 's', 'bad', '0', 'ENTRIESREAD', -2),
        ('XGROUP', 'CREATE', 's', 'x', '0', 'FOO'), ('XGROUP', 'FOO', 's', 'g'),
        ('XGROUP', 'CREATECONSUMER', 's', 'g', 'bob'), ('XGROUP', 'CREATECONSUMER', 's', 'g', 'bob'),
        ('XGROUP', 'CREATECONSUMER', 's', 'nog', 'bob'),
        ('XREADGROUP', 'GROUP', 'g', 'alice', 'COUNT', 2, 'STREAMS', 's', '>'),
        ('XREADGROUP', 'GROUP', 'g', 'bob', 'STREAMS', 's', '>'),
        ('XREADGROUP', 'GROUP', 'g', 'bob', 'STREAMS', 's', '>'),
        ('XREADGROUP', 'GROUP', 'g', 'alice', 'STREAMS', 's', '0'),
        ('XREADGROUP', 'GROUP', 'g', 'alice', 'COUNT', 1, 'STREAMS', 's', '1-1'),
        ('XPENDING', 's', 'g'), ('XPENDING', 's', 'g', 'IDLE', 999999, '-', '+', 10),
        ('XPENDING', 's', 'nog'), ('XPENDING', 's', 'g', '-', '+'),
        ('XPENDING', 's', 'g', '-', '+', 10, 'nobody'),
        ('XACK', 's', 'g', '1-1', '9-9'), ('XACK', 's', 'g', '1-1'), ('XACK', 's', 'g', 'x'),
        ('XACK', 's', 'nog', '1-1'), ('XPENDING', 's', 'g'),
        ('XDEL', 's', '2-1'), ('XREADGROUP', 'GROUP', 'g', 'alice', 'STREAMS', 's', '0'),
        ('XINFO', 'GROUPS', 's'), ('XINFO', 'GROUPS', 'nokey'),
        ('XINFO', 'CONSUMERS', 's', 'nog'),
        ('XGROUP', 'SETID', 's', 'g', '0', 'ENTRIESREAD', 0), ('XINFO', 'GROUPS', 's'),
        ('XGROUP', 'DELCONSUMER', 's', 'g', 'bob'), ('XGROUP', 'DELCONSUMER', 's', 'g', 'bob'),
        ('XPENDING', 's', 'g'), ('XGROUP', 'DESTROY', 's', 'h'), ('XGROUP', 'DESTROY', 's', 'h'),
        ('XREADGROUP', 'GROUP', 'g', 'c', 'STREAMS', 's', '$'),
        ('XREADGROUP', 'GROUP', 'g', 'c', 'STREAMS', 's', '+'),
        ('XREADGROUP', 'GROUP', 'nog', 'c', 'STREAMS', 's', '>'),
        ('XREADGROUP', 'STREAMS', 's', '>'), ('XREADGROUP', 'GROUP', 'g', 'c', 'STREAMS', 's'),
        ('XREADGROUP', 'GROUP', 'g', 'c', 'NOACK', 'STREAMS', 's', '0'),
        ('XREADGROUP', 'GROUP', 'g', 'c', 'CLAIM', -1, 'STREAMS', 's', '>'),
        ('XREADGROUP', 'GROUP', 'g', 'c', 'CLAIM', 'x', 'STREAMS', 's', '>'),
        ('XGROUP', 'HELP'), ('XINFO', 'HELP'),
    ]
    compare88(t, steps)
    compare88(t, steps, proto=3)


@test
def lag_and_entries_read(t):
    steps = stream(n=10) + [
        ('XGROUP', 'CREATE', 's', 'g', '0'), ('XINFO', 'GROUPS', 's'),
        ('XREADGROUP', 'GROUP', 'g', 'c', 'COUNT', 3, 'STREAMS', 's', '>'), ('XINFO', 'GROUPS', 's'),
        ('XDEL', 's', '5-1'), ('XINFO', 'GROUPS', 's'),
        ('XREADGROUP', 'GROUP', 'g', 'c', 'COUNT', 3, 'STREAMS', 's', '>'), ('XINFO', 'GROUPS', 's'),
        ('XREADGROUP', 'GROUP', 'g', 'c', 'STREAMS', 's', '>'), ('XINFO', 'GROUPS', 's'),
        ('XADD', 's', '11-1', 'f', 11), ('XINFO', 'GROUPS', 's'),
        ('XGROUP', 'SETID', 's', 'g', '3-1'), ('XINFO', 'GROUPS', 's'),
        ('XTRIM', 's', 'MAXLEN', 2), ('XINFO', 'GROUPS', 's'),
        ('XSETID', 's', '20-0', 'ENTRIESADDED', 30, 'MAXDELETEDID', '15-0'),
        ('XINFO', 'GROUPS', 's'), ('XGROUP', 'CREATE', 's', 'h', '$'), ('XINFO', 'GROUPS', 's'),
        ('XGROUP', 'CREATE', 's', 'i', '0', 'ENTRIESREAD', 100), ('XINFO', 'GROUPS', 's'),
    ]
    compare88(t, steps)


@test
def claims(t):
    steps = stream() + [
        ('XGROUP', 'CREATE', 's', 'g', '0'),
        ('XREADGROUP', 'GROUP', 'g', 'a', 'STREAMS', 's', '>'),
        ('XCLAIM', 's', 'g', 'b', 0, '1-1', '2-1', 'JUSTID'),
        ('XCLAIM', 's', 'g', 'b', 0, '3-1', 'RETRYCOUNT', 7, 'JUSTID'),
        ('XCLAIM', 's', 'g', 'b', 3600000, '4-1'),
        ('XCLAIM', 's', 'g', 'b', 0, '9-1', 'FORCE', 'JUSTID'),
        ('XADD', 's', '9-1', 'f', 9),
        ('XCLAIM', 's', 'g', 'b', 0, '9-1', 'FORCE', 'JUSTID'),
        ('XCLAIM', 's', 'g', 'b', 'x', '1-1'), ('XCLAIM', 's', 'g', 'b', 0, '1-1', 'IDLE', 'x'),
        ('XCLAIM', 's', 'g', 'b', 0, '1-1', 'TIME', 'x'),
        ('XCLAIM', 's', 'g', 'b', 0, '1-1', 'RETRYCOUNT', 'x'),
        ('XCLAIM', 's', 'g', 'b', 0, '1-1', 'BOGUS'), ('XCLAIM', 's', 'nog', 'b', 0, '1-1'),
        ('XCLAIM', 'nokey', 'g', 'b', 0, '1-1'),
        ('XCLAIM', 's', 'g', 'b', 0, '1-1', 'LASTID', '100-1', 'JUSTID'), ('XINFO', 'GROUPS', 's'),
        ('XPENDING', 's', 'g'), ('XDEL', 's', '2-1'),
        ('XAUTOCLAIM', 's', 'g', 'c', 0, '0', 'COUNT', 2, 'JUSTID'),
        ('XAUTOCLAIM', 's', 'g', 'c', 0, '0', 'COUNT', 2, 'JUSTID'),
        ('XAUTOCLAIM', 's', 'g', 'c', 3600000, '0'),
        ('XAUTOCLAIM', 's', 'g', 'c', 0, '(0-0', 'COUNT', 0),
        ('XAUTOCLAIM', 's', 'g', 'c', 0, '0', 'FOO'), ('XAUTOCLAIM', 's', 'nog', 'c', 0, '0'),
        ('XAUTOCLAIM', 's', 'g', 'c', 'x', '0'), ('XPENDING', 's', 'g'),
        ('XNACK', 's', 'g', 'FAIL', 'IDS', 1, '1-1'), ('XNACK', 's', 'g', 'SILENT', 'IDS', 1, '7-7'),
        ('XNACK', 's', 'g', 'FATAL', 'IDS', 2, '3-1', '4-1', 'RETRYCOUNT', 4),
        ('XNACK', 's', 'g', 'FAIL', 'IDS', 1, '5-1', 'FORCE'),
        ('XNACK', 's', 'g', 'BAD', 'IDS', 1, '1-1'), ('XNACK', 's', 'g', 'FAIL', 'IDS', 0, '1-1'),
        ('XNACK', 's', 'g', 'FAIL', 'IDS', 3, '1-1'), ('XNACK', 's', 'g', 'FAIL', 'FORCE'),
        ('XNACK', 's', 'g', 'FAIL', 'IDS', 1, '1-1', 'RETRYCOUNT', -1),
        ('XNACK', 's', 'nog', 'FAIL', 'IDS', 1, '1-1'), ('XPENDING', 's', 'g'),
    ]
    compare88(t, steps)


@test
def delete_conditions(t):
    steps = stream(n=6) + [
        ('XGROUP', 'CREATE', 's', 'g', '0'), ('XGROUP', 'CREATE', 's', 'h', '0'),
        ('XREADGROUP', 'GROUP', 'g', 'a', 'COUNT', 4, 'STREAMS', 's', '>'),
        ('XREADGROUP', 'GROUP', 'h', 'a', 'COUNT', 2, 'STREAMS', 's', '>'),
        ('XDELEX', 's', 'ACKED', 'IDS', 2, '1-1', '9-9'),
        ('XACK', 's', 'g', '1-1'), ('XACK', 's', 'h', '1-1'),
        ('XDELEX', 's', 'ACKED', 'IDS', 1, '1-1'),
        ('XDELEX', 's', 'DELREF', 'IDS', 1, '2-1'), ('XPENDING', 's', 'g'), ('XPENDING', 's', 'h'),
        ('XDELEX', 's', 'IDS', 1, '3-1'), ('XPENDING', 's', 'g'),
        ('XDELEX', 'nokey', 'IDS', 2, '1-1', '2-1'), ('XDELEX', 's', 'IDS', 0, '1-1'),
        ('XDELEX', 's', 'IDS', 3, '1-1'), ('XDELEX', 's', 'KEEPREF'),
        ('XDELEX', 's', 'KEEPREF', 'DELREF', 'IDS', 1, '1-1'),
        ('XACKDEL', 's', 'g', 'IDS', 2, '3-1', '4-1'), ('XACKDEL', 's', 'h', 'ACKED', 'IDS', 1, '5-1'),
        ('XACKDEL', 's', 'nog', 'IDS', 1, '1-1'), ('XACKDEL', 's', 'g', 'IDS', 1, 'x'),
        ('XRANGE', 's', '-', '+'), ('XLEN', 's'),
        ('XTRIM', 's', 'MAXLEN', 0, 'ACKED'), ('XRANGE', 's', '-', '+'),
        ('XGROUP', 'SETID', 's', 'h', '$'), ('XTRIM', 's', 'MAXLEN', 0, 'ACKED'), ('XLEN', 's'),
    ]
    compare88(t, steps)
    big = [('XADD', 'b', '%d-1' % i, 'f', i) for i in range(1, 301)] + [
        ('XGROUP', 'CREATE', 'b', 'g', '0'),
        ('XREADGROUP', 'GROUP', 'g', 'a', 'COUNT', 150, 'STREAMS', 'b', '>'),
        ('XTRIM', 'b', 'MAXLEN', '~', 10, 'ACKED'), ('XTRIM', 'b', 'MAXLEN', '~', 10, 'DELREF'),
        ('XPENDING', 'b', 'g'), ('XADD', 'b', 'MAXLEN', 5, 'KEEPREF', '400-1', 'f', 1),
        ('XLEN', 'b'), ('XPENDING', 'b', 'g'),
        ('XREADGROUP', 'GROUP', 'g', 'a', 'STREAMS', 'b', '0'),
    ]
    compare88(t, big)


@test
def idmp_commands(t):
    steps = stream() + [
        ('XIDMPRECORD', 's', 'p', 'i', '1-1'), ('XIDMPRECORD', 's', 'p', 'i', '1-1'),
        ('XIDMPRECORD', 's', 'p', 'i', '2-1'), ('XIDMPRECORD', 's', 'p', 'j', '9-9'),
        ('XIDMPRECORD', 's', '', 'i', '1-1'), ('XIDMPRECORD', 's', 'p', '', '1-1'),
        ('XIDMPRECORD', 'nokey', 'p', 'i', '1-1'), ('XIDMPRECORD', 's', 'p', 'i', 'x'),
        ('XCFGSET', 's', 'IDMP-DURATION', 50), ('XCFGSET', 's', 'IDMP-MAXSIZE', 0),
        ('XCFGSET', 's', 'IDMP-DURATION', 1, 'IDMP-DURATION', 2), ('XCFGSET', 's'),
        ('XCFGSET', 'nokey', 'IDMP-MAXSIZE', 5), ('XCFGSET', 's', 'FOO', 1),
    ]
    compare88(t, steps)


def dump_pair(src, dst, build):
    """Builds a stream on src, moves it to dst by DUMP/RESTORE; returns both
    XINFO STREAM FULL replies and both servers' DUMP payloads."""
    with src.client() as a, dst.client() as b:
        a.cmd('FLUSHALL')
        b.cmd('FLUSHALL')
        for step in build:
            a.cmd(*step)
        payload = a.call('DUMP', 's')
        assert b.cmd('RESTORE', 's', 0, payload) == b'+OK\r\n'
        full = ('XINFO', 'STREAM', 's', 'FULL', 'COUNT', 0)
        return a.cmd(*full), b.cmd(*full), payload, b.call('DUMP', 's')


@test
def dump_restore_with_redis88(t):
    build = stream(n=250) + [
        ('XDEL', 's', '3-1'), ('XADD', 's', '300-1', 'other', 'fields', 'n', -70000),
        ('XGROUP', 'CREATE', 's', 'g', '0'), ('XGROUP', 'CREATE', 's', 'h', '$', 'ENTRIESREAD', 7),
        ('XREADGROUP', 'GROUP', 'g', 'a', 'COUNT', 5, 'STREAMS', 's', '>'),
        ('XREADGROUP', 'GROUP', 'g', 'b', 'COUNT', 3, 'STREAMS', 's', '>'),
        ('XGROUP', 'CREATECONSUMER', 's', 'h', 'idle'),
        ('XNACK', 's', 'g', 'FAIL', 'IDS', 2, '6-1', '2-1'),
        ('XADD', 's', 'IDMP', 'prod', 'iid', '*', 'k', 'v'),
    ]
    with redis88() as r:
        if r is None:
            return
        for src, dst in ((r, t.sut), (t.sut, r)):
            a, b, p1, p2 = dump_pair(src, dst, build)
            assert a == b, (src.label, a, b)
            assert p1 == p2, (src.label, 'DUMP payloads differ')


@test
def blocking_readers(t):
    with t.sut.client() as c, t.sut.client() as w:
        c.cmd('XGROUP', 'CREATE', 's', 'g', '$', 'MKSTREAM')
        w.send('XREADGROUP', 'GROUP', 'g', 'a', 'BLOCK', 0, 'STREAMS', 's', '>')
        wait_until(lambda: b'blocked_clients:1' in c.cmd('INFO', 'clients'))
        assert b'total_blocking_keys_on_nokey:1' in c.cmd('INFO', 'clients')
        c.cmd('XADD', 's', '1-1', 'f', 'v')
        assert w.read_reply() == b'*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n' \
            b'*2\r\n$1\r\nf\r\n$1\r\nv\r\n'
        assert c.call('XPENDING', 's', 'g')[0] == 1
        # A destroyed group, a deleted key, a flushed database: NOGROUP.
        for undo in (('XGROUP', 'DESTROY', 's', 'g'), ('DEL', 's'), ('FLUSHALL',)):
            c.cmd('XGROUP', 'CREATE', 's', 'g', '$', 'MKSTREAM')
            w.send('XREADGROUP', 'GROUP', 'g', 'a', 'BLOCK', 0, 'STREAMS', 's', '>')
            wait_until(lambda: b'blocked_clients:1' in c.cmd('INFO', 'clients'))
            c.cmd(*undo)
            assert w.read_reply().startswith(b'-NOGROUP No such key'), undo
        # A list waiter on the key is not woken by a stream written there,
        # and does not keep a group reader behind it from being served.
        c.cmd('DEL', 's')
        with t.sut.client() as lw:
            lid = lw.call('CLIENT', 'ID')
            lw.send('BLPOP', 's', 0)
            wait_until(lambda: b'blocked_clients:1' in c.cmd('INFO', 'clients'))
            c.cmd('XGROUP', 'CREATE', 's', 'g', '$', 'MKSTREAM')
            w.send('XREADGROUP', 'GROUP', 'g', 'a', 'BLOCK', 0, 'STREAMS', 's', '>')
            wait_until(lambda: b'blocked_clients:2' in c.cmd('INFO', 'clients'))
            c.cmd('XADD', 's', '5-1', 'f', 'v')
            assert w.read_reply().startswith(b'*1\r\n')
            assert b'blocked_clients:1' in c.cmd('INFO', 'clients')
            c.cmd('CLIENT', 'UNBLOCK', lid)
            assert lw.read_reply() == b'*-1\r\n'


@test
@xkv_only
def claim_while_blocked(t):
    """XREADGROUP CLAIM blocked with nothing idle enough is served once a
    pending entry comes of age, without any write (the cron wakes it)."""
    with t.sut.client() as c, t.sut.client() as w:
        c.cmd('XADD', 's', '1-1', 'f', 'v')
        c.cmd('XGROUP', 'CREATE', 's', 'g', '0')
        c.cmd('XREADGROUP', 'GROUP', 'g', 'a', 'STREAMS', 's', '>')
        start = time.monotonic()
        w.send('XREADGROUP', 'GROUP', 'g', 'b', 'CLAIM', 300, 'BLOCK', 5000, 'STREAMS', 's', '>')
        reply = w.read_reply()
        assert reply.startswith(b'*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*4\r\n$3\r\n1-1\r\n'), reply
        assert time.monotonic() - start < 4.5
        assert c.call('XPENDING', 's', 'g', '-', '+', 10)[0][1] == b'b'
