# SPDX-License-Identifier: GPL-2.0-only
"""HOTKEYS (Redis 8.6+): START's checks and errors, GET's map, the bytes each
key is charged (request as RESP sent it plus the reply), the top-K summary
keeping the hot key among many cold ones, MULTI/EXEC charging each command,
DURATION stopping a session, RESET, INFO hotkeys. The error replies and the
network figures are compared with Redis 8.8's when it is built (/work/peers
or XKV_REDIS_88); CPU times are not (they are measurements)."""

import os

from harness import Client, Server, decode, info_fields, test, wait_until, xkv_only

REDIS_88 = os.environ.get('XKV_REDIS_88',
                          '/work/peers/redis-8.8.0/src/redis-server')

ERRORS = [
    ('HOTKEYS',),
    ('HOTKEYS', 'FOO'),
    ('HOTKEYS', 'START'),
    ('HOTKEYS', 'START', 'METRICS', '1'),
    ('HOTKEYS', 'START', 'METRICS', 'x', 'CPU'),
    ('HOTKEYS', 'START', 'METRICS', '3', 'CPU', 'NET', 'CPU'),
    ('HOTKEYS', 'START', 'METRICS', '1', 'CPU', 'COUNT', 'x'),
    ('HOTKEYS', 'START', 'METRICS', '1', 'CPU', 'COUNT', '65'),
    ('HOTKEYS', 'START', 'METRICS', '1', 'CPU', 'SAMPLE', '0'),
    ('HOTKEYS', 'START', 'METRICS', '1', 'CPU', 'DURATION', '0'),
    ('HOTKEYS', 'START', 'METRICS', '1', 'CPU', 'SLOTS', '1', '2'),
    ('HOTKEYS', 'START', 'METRICS', '1', 'CPU', 'CPU'),
    ('HOTKEYS', 'START', 'METRICS', '1', 'CPU', 'COUNT'),
    ('HOTKEYS', 'START', 'METRICS', '2', 'CPU', 'CPU'),
    ('HOTKEYS', 'START', 'METRICS', '2', 'NOPE', 'BOGUS'),
    ('HOTKEYS', 'STOP', 'x'),
    ('HOTKEYS', 'GET', 'x'),
    ('HOTKEYS', 'GET'),      # no session: nil
    ('HOTKEYS', 'STOP'),     # nothing active: nil
    ('HOTKEYS', 'RESET'),
    ('HOTKEYS', 'HELP'),
]

# Deterministic traffic; the net figures it earns are exact.
TRAFFIC = [('SET', 'foo', 'bar'), ('GET', 'foo'), ('MSET', 'a', '1', 'b', '2'), ('GET', 'foo'),
           ('PING',)]


def get_map(c):
    """HOTKEYS GET as a dict (RESP3: an array of one map)."""
    reply = decode(c.cmd('HOTKEYS', 'GET'))
    assert isinstance(reply, list) and len(reply) == 1, reply
    m = reply[0]
    return {k.decode(): v for k, v in (m.items() if isinstance(m, dict) else
                                       zip(m[::2], m[1::2]))}


def tops(flat):
    return {flat[i]: flat[i + 1] for i in range(0, len(flat), 2)}


def session(c):
    """Runs TRAFFIC under a CPU+NET session; returns GET's map."""
    assert c.cmd('HOTKEYS', 'START', 'METRICS', '2', 'CPU', 'NET', 'COUNT', '5') == b'+OK\r\n'
    for cmd in TRAFFIC:
        c.cmd(*cmd)
    assert c.cmd('HOTKEYS', 'STOP') == b'+OK\r\n'
    return get_map(c)


@test
@xkv_only
def hotkeys_errors_and_map(t):
    with t.sut.client() as c:
        replies = [c.cmd(*e) for e in ERRORS]
        assert replies[0] == b"-ERR wrong number of arguments for 'hotkeys' command\r\n"
        assert replies[1] == b"-ERR unknown subcommand 'FOO'. Try HOTKEYS HELP.\r\n"
        assert replies[2] == b'-ERR METRICS parameter is required\r\n'
        assert replies[-4] == b'$-1\r\n' and replies[-3] == b'$-1\r\n', replies[-4:]
        # METRICS 2 NOPE BOGUS: both words parsed, neither a metric.
        assert b'no valid metrics' in replies[14], replies[14]
        m = session(c)
        assert m['tracking-active'] == 0 and m['sample-ratio'] == 1, m
        assert m['selected-slots'] == [[0, 16383]], m
        # SET 31+5, GET 22+9 twice, MSET 42+5 split over a and b; PING has no key.
        assert tops(m['by-net-bytes']) == {b'foo': 98, b'a': 23, b'b': 23}, m
        assert m['total-net-bytes'] == 98 + 46, m
        assert m['net-bytes-all-commands-all-slots'] == 98 + 47, m
        assert set(tops(m['by-cpu-time-us'])) == {b'foo', b'a', b'b'}, m
        assert m['collection-duration-ms'] >= 0 and m['collection-start-time-unix-ms'] > 0
        assert list(m)[:4] == ['tracking-active', 'sample-ratio', 'selected-slots',
                               'all-commands-all-slots-us'], list(m)
        fields = info_fields(c.call('INFO', 'hotkeys'))['hotkeys']
        assert fields['hotkeys-tracking-active'] == '0', fields
        assert c.cmd('HOTKEYS', 'RESET') == b'+OK\r\n'
        assert c.cmd('HOTKEYS', 'GET') == b'$-1\r\n'
        assert info_fields(c.call('INFO', 'hotkeys')).get('hotkeys', {}) == {}


@test
@xkv_only
def hotkeys_equal_redis_88(t):
    if not os.access(REDIS_88, os.X_OK):
        print('# Redis 8.8 not built: HOTKEYS not compared')
        return
    r88 = Server('redis', redis_binary=REDIS_88, label='redis-8.8').start()
    try:
        with t.sut.client() as a, r88.client() as b:
            for e in ERRORS:
                ra, rb = a.cmd(*e), b.cmd(*e)
                assert ra == rb, (e, ra, rb)
                a.cmd('HOTKEYS', 'STOP')
                b.cmd('HOTKEYS', 'STOP')
                a.cmd('HOTKEYS', 'RESET')
                b.cmd('HOTKEYS', 'RESET')
            ma, mb = session(a), session(b)
            assert list(ma) == list(mb), (list(ma), list(mb))
            for k in ('by-net-bytes', 'total-net-bytes', 'net-bytes-all-commands-all-slots',
                      'selected-slots', 'sample-ratio', 'tracking-active'):
                va, vb = ma[k], mb[k]
                if k == 'by-net-bytes':
                    va, vb = tops(va), tops(vb)
                assert va == vb, (k, va, vb)
    finally:
        r88.close()


@test
@xkv_only
def hotkeys_finds_the_hot_key(t):
    with t.sut.client() as c:
        c.cmd('HOTKEYS', 'STOP')
        c.cmd('HOTKEYS', 'RESET')
        assert c.cmd('HOTKEYS', 'START', 'METRICS', '1', 'NET', 'COUNT', '1') == b'+OK\r\n'
        # 500 cold keys once each (50 times the summary's 10 places), one key
        # read 300 times: it must come out on top.
        for i in range(500):
            c.cmd('SET', 'cold:%d' % i, 'x')
            if i % 5 == 0:
                for _ in range(3):
                    c.cmd('GET', 'hot')
        m = get_map(c)
        assert m['tracking-active'] == 1, m
        top = tops(m['by-net-bytes'])
        assert list(top) == [b'hot'], top
        # Each GET of a missing key: 22 bytes in, 5 out ($-1).
        assert top[b'hot'] >= 300 * 27, top
        assert 'by-cpu-time-us' not in m and 'total-cpu-time-user-ms' not in m, m
        assert c.cmd('HOTKEYS', 'START', 'METRICS', '1', 'CPU') == \
            b'-ERR hotkey tracking session already in progress\r\n'
        assert c.cmd('HOTKEYS', 'RESET') == \
            b'-ERR hotkey tracking session in progress, stop tracking first\r\n'
        assert c.cmd('HOTKEYS', 'STOP') == b'+OK\r\n'
        assert c.cmd('HOTKEYS', 'RESET') == b'+OK\r\n'


@test
@xkv_only
def hotkeys_transactions_scripts_and_duration(t):
    with t.sut.client() as c:
        c.cmd('HOTKEYS', 'STOP')
        c.cmd('HOTKEYS', 'RESET')
        assert c.cmd('HOTKEYS', 'START', 'METRICS', '1', 'NET', 'DURATION', '1') == b'+OK\r\n'
        c.cmd('MULTI')
        c.cmd('SET', 'k1', 'v')
        c.cmd('SET', 'k2', 'v')
        assert c.cmd('EXEC') == b'*2\r\n+OK\r\n+OK\r\n'
        # A script is charged to its declared keys, not its calls' keys.
        c.cmd('EVAL', "redis.call('SET', 'undeclared', 'v') return 1", '1', 'declared')
        top = tops(get_map(c)['by-net-bytes'])
        assert b'k1' in top and b'k2' in top and b'declared' in top, top
        assert b'undeclared' not in top, top
        # DURATION 1: the cron ends the session after a second.
        assert wait_until(lambda: get_map(c)['tracking-active'] == 0, timeout=5), get_map(c)
        m = get_map(c)
        assert 1000 <= m['collection-duration-ms'] < 5000, m
        assert c.cmd('HOTKEYS', 'STOP') == b'$-1\r\n'
        assert c.cmd('HOTKEYS', 'START', 'METRICS', '1', 'NET', 'SAMPLE', '1000000') == \
            b'+OK\r\n'
        for i in range(50):
            c.cmd('GET', 'k%d' % i)
        m = get_map(c)
        # Sampled out (nearly surely) yet counted in the totals.
        assert m['sample-ratio'] == 1000000 and m['net-bytes-all-commands-all-slots'] > 0, m
        c.cmd('HOTKEYS', 'STOP')
        c.cmd('HOTKEYS', 'RESET')
    with Client(t.sut.port, proto=3) as c:
        assert c.cmd('HOTKEYS', 'START', 'METRICS', '1', 'CPU') == b'+OK\r\n'
        c.cmd('GET', 'x')
        raw = c.cmd('HOTKEYS', 'GET')
        assert raw.startswith(b'*1\r\n%'), raw
        c.cmd('HOTKEYS', 'STOP')
        c.cmd('HOTKEYS', 'RESET')
