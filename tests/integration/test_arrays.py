# SPDX-License-Identifier: GPL-2.0-only
"""The array type of Redis 8.8 (AR*). The reference redis-server (7.0) has
no arrays, so the replies are compared byte for byte with those recorded
from redis-server 8.8.0 (data/arrays-redis-8.8.json, RESP2 and RESP3), and
the rest is checked against Redis's rules directly: DUMP payloads that
Redis 8.8 wrote, the layout ARINFO reports, persistence across a restart."""

import json
import os

from harness import REPO, test, xkv_only

STEPS = os.path.join(REPO, 'tests', 'integration', 'data', 'arrays-redis-8.8.json')

# DUMP of ARSET a 0 hello world 1.5 1.0 -0.0 12345678901234567890 x
# 2305843009213693951 2305843009213693952 -7 abcdefg abcdefgh; ARSET a
# 100000 far; ARINSERT a q (at 0, the cursor's start), from redis-server 8.8.0: every value tag (an
# inline integer, a float, a small string, a heap string, an integer too
# wide to be inline), a second slice and the insert cursor.
REDIS_DUMP = bytes.fromhex(
    '1c0d010000030171010305776f726c640202000000000000f83f0302000000000000f03f0402'
    '00000000000000800500143132333435363738393031323334353637383930060301780701ff'
    'ffffffffffff1f080013323330353834333030393231333639333935320901f9ffffffffffff'
    'ff0a0307616263646566670b0008616263646566676880000186a003036661720e001b583b4d'
    '05e90e0f')


@test
@xkv_only
def replies_match_redis_88(t):
    steps = json.load(open(STEPS))['steps']
    for proto in (2, 3):
        with t.sut.client(proto) as c:
            c.cmd('FLUSHALL')
            for p, cmd, want in steps:
                if p != proto:
                    continue
                got = c.cmd(*cmd)
                assert got == want.encode('latin-1'), 'RESP%d %s\n  redis 8.8: %r\n  xkvd:      %r' % (
                    proto, cmd, want, got)


@test
@xkv_only
def layout_follows_redis_rules(t):
    """A slice starts sparse (room for 4), turns dense past kmax values,
    turns sparse again when emptied below kmin; a slice id past 2048 moves
    the directory to the superdir."""
    def info(c, key):
        flat = c.call('ARINFO', key, 'FULL')
        return dict(zip(flat[::2], flat[1::2]))

    with t.sut.client() as c:
        for i in range(10):
            c.call('ARSET', 'a', i * 100, 'v%d' % i)
        got = info(c, 'a')
        assert (got[b'sparse-slices'], got[b'dense-slices']) == (1, 0), got
        c.call('ARSET', 'a', 2000, 'eleventh')
        got = info(c, 'a')
        assert (got[b'sparse-slices'], got[b'dense-slices']) == (0, 1), got
        assert got[b'avg-dense-size'] == b'2048', got
        c.call('ARDELRANGE', 'a', 0, 1000)
        got = info(c, 'a')
        assert (got[b'sparse-slices'], got[b'dense-slices'], got[b'count']) == (1, 0, 1), got
        c.call('ARSET', 'a', 4096 * 2048, 'far')
        got = info(c, 'a')
        assert (got[b'super-dir-entries'], got[b'slices']) == (2, 2), got
        assert c.call('ARLEN', 'a') == 4096 * 2048 + 1
        c.call('ARDEL', 'a', 4096 * 2048)
        assert info(c, 'a')[b'super-dir-entries'] == 1
        # Bulk writes make the slice dense at once.
        c.call('ARSET', 'bulk', 0, *['x'] * 20)
        assert info(c, 'bulk')[b'dense-slices'] == 1


@test
@xkv_only
def dump_restore_with_redis_88(t):
    with t.sut.client() as c:
        assert c.call('RESTORE', 'a', 0, REDIS_DUMP) == b'OK'
        assert c.call('ARCOUNT', 'a') == 13
        assert c.call('ARGET', 'a', 0) == b'q'
        assert c.call('ARGET', 'a', 7) == b'2305843009213693951'
        assert c.call('ARGET', 'a', 8) == b'2305843009213693952'
        assert c.call('ARGET', 'a', 3) == b'1.0'
        assert c.call('ARNEXT', 'a') == 1
        assert c.call('ARGET', 'a', 100000) == b'far'
        # What xkvd writes is what Redis 8.8 wrote.
        assert c.call('DUMP', 'a') == REDIS_DUMP
        digest = c.call('DEBUG', 'DIGEST-VALUE', 'a')
        assert c.call('RESTORE', 'b', 0, c.call('DUMP', 'a')) == b'OK'
        assert c.call('DEBUG', 'DIGEST-VALUE', 'b') == digest


@test
@xkv_only
def survives_a_restart(t):
    srv = t.spawn('sut')
    with srv.client() as c:
        c.call('ARSET', 'a', 0, 'x', '2.5', '77')
        c.call('ARSET', 'a', 5000, 'far')
        c.call('ARINSERT', 'r', 'one', 'two')
        before = [c.call('ARSCAN', 'a', 0, 10 ** 13), c.call('ARNEXT', 'r'),
                  c.call('DEBUG', 'DIGEST')]
        assert c.call('SAVE') == b'OK'
    again = t.spawn('sut', dir=srv.dir)
    with again.client() as c:
        after = [c.call('ARSCAN', 'a', 0, 10 ** 13), c.call('ARNEXT', 'r'),
                 c.call('DEBUG', 'DIGEST')]
    assert before == after, (before, after)


@test
@xkv_only
def notifications_and_keyspace(t):
    with t.sut.client() as c, t.sut.client() as sub:
        c.call('CONFIG', 'SET', 'notify-keyspace-events', 'KEA')
        try:
            sub.call('PSUBSCRIBE', '__keyspace@0__:*')
            c.call('ARSET', 'k', 0, 'v')
            c.call('ARDEL', 'k', 0)
            events = [sub.read_reply() for _ in range(3)]
            assert [e.split(b'\r\n')[-2] for e in events] == [b'arset', b'ardel', b'del'], events
        finally:
            c.call('CONFIG', 'SET', 'notify-keyspace-events', '')
        c.call('ARSET', 'k', 0, 'v')
        assert c.call('TYPE', 'k') == b'array'
        assert c.call('OBJECT', 'ENCODING', 'k') == b'sliced-array'
        assert c.call('COPY', 'k', 'k2') == 1
        assert c.call('ARGET', 'k2', 0) == b'v'
        assert c.call('SCAN', 0, 'TYPE', 'array')[1] in ([b'k', b'k2'], [b'k2', b'k'])
        assert c.call('MEMORY', 'USAGE', 'k') > 0


@test
@xkv_only
def configuration_shapes_new_arrays(t):
    with t.sut.client() as c:
        err = c.cmd('CONFIG', 'SET', 'array-slice-size', 5000)
        assert b'power of two' in err, err
        c.call('CONFIG', 'SET', 'array-slice-size', 256)
        try:
            c.call('ARSET', 'small', 300, 'x')
            flat = c.call('ARINFO', 'small')
            assert dict(zip(flat[::2], flat[1::2]))[b'slice-size'] == 256
            c.call('CONFIG', 'SET', 'array-sparse-kmax', 0)
            c.call('ARSET', 'dense', 5, 'x')
            flat = c.call('ARINFO', 'dense', 'FULL')
            assert dict(zip(flat[::2], flat[1::2]))[b'dense-slices'] == 1
        finally:
            c.call('CONFIG', 'SET', 'array-slice-size', 4096)
            c.call('CONFIG', 'SET', 'array-sparse-kmax', 10)
