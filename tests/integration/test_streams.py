# SPDX-License-Identifier: GPL-2.0-only
"""Streams: XADD XLEN XRANGE XREVRANGE XDEL XTRIM XSETID XREAD (BLOCK too),
compared byte for byte with the 7.0.15 reference where 7.0 has the feature
(explicit IDs, so that the clock does not enter the replies); the Redis 8.x
additions (KEEPREF/DELREF/ACKED, IDMP/IDMPAUTO, XREAD's `+`, the 8.8 error
texts) asserted against replies recorded from redis-server 8.8.0."""

from harness import encode, info_fields, test, wait_until, xkv_only


def entries(first, n, key='s'):
    return [('XADD', key, '%d-1' % i, 'f', i, 'g', 'v') for i in range(first, first + n)]


@test
def add_and_read(t):
    steps = [
        ('XADD', 's', '1-1', 'a', 1, 'b', 2), ('XADD', 's', '1-*', 'a', 3, 'b', 4),
        ('XADD', 's', '1', 'c', 5), ('XADD', 's', '0-1', 'c', 5), ('XADD', 's', '2-0', 'x', ''),
        ('XADD', 's', '2-*', b'\x00\r\n', b'\xff'), ('XLEN', 's'), ('XLEN', 'nokey'),
        ('XRANGE', 's', '-', '+'), ('XREVRANGE', 's', '+', '-'),
        ('XRANGE', 's', '(1-1', '+'), ('XRANGE', 's', '-', '(2-1'),
        ('XRANGE', 's', '1', '1'), ('XREVRANGE', 's', '2', '1', 'COUNT', 2),
        ('XRANGE', 's', '-', '+', 'COUNT', 0), ('XRANGE', 's', '-', '+', 'COUNT', -1),
        ('XRANGE', 's', '-', '+', 'COUNT', 1, 'COUNT', 2), ('XRANGE', 'nokey', '-', '+'),
        ('XRANGE', 'nokey', '-', '+', 'COUNT', 0), ('TYPE', 's'), ('OBJECT', 'ENCODING', 's'),
        ('XADD', 'other', '5-5', 'a', 1), ('XRANGE', 'other', '5-5', '5-5'),
    ]
    t.compare(steps)
    t.compare([('FLUSHALL',)] + steps, proto=3)


@test
def in_transactions(t):
    # python3-rq writes its job results with XADD ... MAXLEN 10 in a MULTI.
    t.compare([
        ('MULTI',), ('XADD', 'r', 'MAXLEN', 10, '1-1', 'result', 'ok'), ('XLEN', 'r'),
        ('XADD', 'r', 'MAXLEN', '~', 1, '1-1', 'dup', 'id'), ('XRANGE', 'r', '-', '+'),
        ('EXEC',), ('WATCH', 'r'), ('XADD', 'r', '2-1', 'a', 1), ('MULTI',), ('XLEN', 'r'),
        ('EXEC',),
    ] + [('XADD', 'r', 'MAXLEN', 10, '%d-1' % i, 'n', i) for i in range(3, 30)] + [
        ('XLEN', 'r'), ('XRANGE', 'r', '-', '+', 'COUNT', 2),
    ])


@test
def add_errors(t):
    t.compare([
        ('XADD', 's', '1-1', 'a', 1), ('XADD', 's', '1-1', 'a', 1), ('XADD', 's', '0-0', 'a', 1),
        ('XADD', 'n', '0-0', 'a', 1), ('EXISTS', 'n'), ('XADD', 'n', '0-*', 'a', 1),
        ('XADD', 'x', '18446744073709551615-18446744073709551615', 'a', 1),
        ('XADD', 'x', '*', 'a', 1), ('XADD', 'x', '18446744073709551615-*', 'a', 1),
        ('XADD', 's', '1-*'), ('XADD', 's', '5-1', 'a'), ('XADD', 's', 'MAXLEN'),
        ('XADD', 's', 'MAXLEN', -1, '*', 'a', 1), ('XADD', 's', 'MAXLEN', 'x', '*', 'a', 1),
        ('XADD', 's', 'MAXLEN', '=', 1, 'LIMIT', 5, '*', 'a', 1),
        ('XADD', 's', 'MAXLEN', '~', 1, 'LIMIT', -5, '*', 'a', 1),
        ('XADD', 's', 'LIMIT', 5, '*', 'a', 1), ('XADD', 's', 'MAXLEN', 1, 'MINID', 1, '*', 'a', 1),
        ('XADD', 's', 'FOO', '*', 'a', 1), ('XADD', 's', 'MINID', '+', '*', 'a', 1),
        ('XADD', 's', '1-2-3', 'a', 1), ('XADD', 's', 'abc', 'a', 1), ('XADD', 's', '1-x', 'a', 1),
        ('XADD', 's', '-1', 'a', 1), ('XADD', 's', '+', 'a', 1),
        ('XADD', 'nokey', 'NOMKSTREAM', '1-1', 'a', 1), ('EXISTS', 'nokey'),
        ('XADD', 's', 'NOMKSTREAM', '9-1', 'a', 1), ('XLEN', 's'),
        ('SET', 'str', 'x'), ('XADD', 'str', '*', 'a', 1), ('XLEN', 'str'),
        ('XRANGE', 'str', '-', '+'), ('XDEL', 'str', '1-1'), ('XTRIM', 'str', 'MAXLEN', 1),
        ('XSETID', 'str', '1-1'), ('XREAD', 'STREAMS', 'str', '0'),
    ])


@test
def range_errors(t):
    t.compare([
        ('XADD', 's', '1-1', 'a', 1), ('XRANGE', 's', '(-', '+'), ('XRANGE', 's', '-', '(+'),
        ('XRANGE', 's', '(18446744073709551615-18446744073709551615', '+'),
        ('XRANGE', 's', '-', '(0-0'), ('XRANGE', 's', '-', '+', 'COUNT'),
        ('XRANGE', 's', '-', '+', 'FOO', 1), ('XRANGE', 's', 'x', '+'),
        ('XRANGE', 's', '-'), ('XREVRANGE', 's', '+'), ('XRANGE', 's', '-', '+', 'COUNT', 'x'),
        ('XRANGE', 's', '2', '1'), ('XREVRANGE', 's', '1', '2'),
    ])


@test
def deletes(t):
    t.compare(entries(1, 250) + [
        ('XDEL', 's', '5-1', '5-1', '6-1', '999-1'), ('XDEL', 's', '1-1', 'bad'), ('XLEN', 's'),
        ('XDEL', 's', '1-1'), ('XRANGE', 's', '-', '+', 'COUNT', 3),
        ('XREVRANGE', 's', '10-1', '-', 'COUNT', 3), ('XDEL', 'nokey', '1-1'), ('XDEL', 's'),
    ] + [('XDEL', 's', '%d-1' % i) for i in range(100, 201)] + [
        ('XLEN', 's'), ('XRANGE', 's', '98-1', '203-1'), ('XREVRANGE', 's', '203-1', '98-1'),
        ('XDEL', 's', *['%d-1' % i for i in range(1, 251)]), ('XLEN', 's'), ('EXISTS', 's'),
        ('XRANGE', 's', '-', '+'), ('XADD', 's', '250-1', 'a', 1), ('XADD', 's', '251-*', 'a', 1),
    ])


@test
def trimming(t):
    # Nodes of 100 entries in both servers: ~ trims whole nodes alike.
    t.compare(entries(1, 350) + [
        ('XTRIM', 's', 'MAXLEN', '~', 260), ('XLEN', 's'), ('XTRIM', 's', 'MAXLEN', '~', 0,
                                                           'LIMIT', 99),
        ('XTRIM', 's', 'MAXLEN', '~', 0, 'LIMIT', 100), ('XLEN', 's'),
        ('XTRIM', 's', 'MAXLEN', '=', 120), ('XLEN', 's'), ('XRANGE', 's', '-', '+', 'COUNT', 1),
        ('XTRIM', 's', 'MINID', '~', '280-1'), ('XLEN', 's'), ('XTRIM', 's', 'MINID', '280-1'),
        ('XRANGE', 's', '-', '+', 'COUNT', 1), ('XTRIM', 's', 'MINID', '=', '300'),
        ('XTRIM', 's', 'MAXLEN', 0), ('XLEN', 's'), ('EXISTS', 's'), ('XRANGE', 's', '-', '+'),
        ('XTRIM', 'nokey', 'MAXLEN', 0), ('XTRIM', 's'), ('XTRIM', 's', 'LIMIT', 1),
        ('XTRIM', 's', 'MAXLEN', 1, 'LIMIT', 1), ('XTRIM', 's', 'MAXLEN', '~', 0, 'LIMIT', 0),
        ('XTRIM', 's', 'FOO', 1), ('XTRIM', 's', 'MINID', 'x'), ('XTRIM', 's', 'MAXLEN', -1),
    ] + entries(400, 150, key='k') + [
        ('XADD', 'k', 'MAXLEN', '~', 10, '600-1', 'a', 1), ('XLEN', 'k'),
        ('XADD', 'k', 'MAXLEN', 10, '601-1', 'a', 1), ('XLEN', 'k'),
        ('XADD', 'k', 'MINID', '~', '601', '602-1', 'a', 1), ('XRANGE', 'k', '-', '+'),
    ])


@test
def nodes_close_on_bytes(t):
    # Big values: the 4096-byte node limit closes nodes before 100 entries,
    # on Redis's listpack byte count (integers stored as integers), so `~`
    # trims the same whole nodes.
    vals = ['x' * 300, '12345678901', '-7', 'y' * 70, '4096', '']
    adds = [('XADD', 's', '%d-1' % i, 'f', vals[i % 6], 'g', vals[(i + 1) % 6])
            for i in range(1, 200)]
    adds += [('XADD', 's', '%d-1' % i, 'other', vals[i % 6]) for i in range(200, 260)]
    t.compare(adds + [
        ('XTRIM', 's', 'MAXLEN', '~', 200), ('XLEN', 's'), ('XTRIM', 's', 'MAXLEN', '~', 100),
        ('XLEN', 's'), ('XTRIM', 's', 'MINID', '~', '230'), ('XLEN', 's'),
        ('XRANGE', 's', '-', '+', 'COUNT', 1), ('CONFIG', 'SET', 'stream-node-max-bytes', 0),
    ] + [('XADD', 'k', '%d-1' % i, 'f', 'z' * 500) for i in range(1, 120)] + [
        ('XTRIM', 'k', 'MAXLEN', '~', 5), ('XLEN', 'k'),
        ('CONFIG', 'SET', 'stream-node-max-bytes', 4096),
    ])


@test
def setid(t):
    t.compare(entries(1, 3) + [
        ('XSETID', 'nokey', '1-1'), ('XSETID', 's', '1-1'), ('XSETID', 's', '3-1'),
        ('XSETID', 's', '10-0', 'ENTRIESADDED', -1), ('XSETID', 's', '10-0', 'ENTRIESADDED', 1),
        ('XSETID', 's', '10-0', 'MAXDELETEDID', '10-1'),
        ('XSETID', 's', '10-0', 'MAXDELETEDID', '5-5', 'ENTRIESADDED', 100),
        ('XSETID', 's', '9-0'), ('XSETID', 's', '10-0', 'FOO'), ('XSETID', 's', '+'),
        ('XSETID', 's', '10-0', 'ENTRIESADDED'), ('XADD', 's', '10-0', 'a', 1),
        ('XADD', 's', '10-*', 'a', 1), ('XDEL', 's', '10-1'), ('XSETID', 's', '10-1'), ('XADD', 's', '10-1', 'a', 1),
    ])


@test
def read(t):
    for proto in (2, 3):
        t.compare(entries(1, 5) + entries(1, 2, key='t') + [
            ('XREAD', 'STREAMS', 's', '0'), ('XREAD', 'COUNT', 2, 'STREAMS', 's', 't', '0', '1-1'),
            ('XREAD', 'STREAMS', 's', 't', 'nokey', '3', '2-1', '0'),
            ('XREAD', 'STREAMS', 's', '$'), ('XREAD', 'STREAMS', 's', '5-1'),
            ('XREAD', 'COUNT', -1, 'STREAMS', 's', '4'), ('XREAD', 'COUNT', 'x', 'STREAMS', 's', '0'),
            ('XREAD', 'BLOCK', -1, 'STREAMS', 's', '0'), ('XREAD', 'BLOCK', 'x', 'STREAMS', 's', '0'),
            ('XREAD', 'STREAMS', 's', '>'), ('XREAD', 'STREAMS', 's', 'bad'),
            ('XREAD', 'FOO', 'STREAMS', 's', '0'), ('XREAD', 'GROUP', 'g', 'c', 'STREAMS', 's', '0'),
            ('XREAD', 'NOACK', 'STREAMS', 's', '0'), ('XREAD', 'COUNT', 1, 's', '0'),
            ('XREAD', 'BLOCK', 10, 'STREAMS', 'nokey', '$'),
            ('MULTI',), ('XREAD', 'BLOCK', 0, 'STREAMS', 'nokey', '$'), ('EXEC',),
            ('FLUSHALL',),
        ], proto=proto)


def block(srv, c, cmd, already):
    c.send_raw(encode(cmd))
    assert wait_until(lambda: int(info_fields(srv.call('INFO', 'clients'))['clients']
                                  ['blocked_clients']) == already + 1, timeout=5), cmd


def blocked_read(srv, cmds, writes):
    """Each of cmds blocks on its own connection; writes run on another;
    returns the blocked clients' replies."""
    clients = [srv.client(timeout=10) for _ in cmds]
    try:
        with srv.client() as p:
            p.cmd('XADD', 's', '1-1', 'old', 1)
            for i, (c, cmd) in enumerate(zip(clients, cmds)):
                block(srv, c, cmd, i)
            done = [p.cmd(*w) for w in writes]
            replies = [c.read_reply() for c in clients]
            p.cmd('FLUSHALL')
        return done, replies
    finally:
        for c in clients:
            c.close()


@test
def read_block(t):
    # "$" is the last ID when the client blocked: the entry added after it
    # is served, not the old one; an explicit ID serves what is above it.
    t.same(lambda s: blocked_read(s, [('XREAD', 'BLOCK', 0, 'STREAMS', 's', '$'),
                                      ('XREAD', 'BLOCK', 5000, 'COUNT', 5, 'STREAMS', 'x', 's',
                                       '$', '$'),
                                      ('XREAD', 'BLOCK', 5000, 'STREAMS', 'x', '0-0')],
                                   [('XDEL', 's', '1-1'), ('XADD', 's', '2-1', 'new', 2),
                                    ('XADD', 'x', '3-1', 'x', 3)]),
           'three XREAD BLOCKs woken by XADDs')
    # A key turned into another type does not wake the reader: it times out.
    t.same(lambda s: blocked_read(s, [('XREAD', 'BLOCK', 300, 'STREAMS', 'w', '$')],
                                  [('SET', 'w', 'x'), ('XADD', 'other', '5-1', 'a', 1)]),
           'XREAD BLOCK on a key set to a string')


@test
@xkv_only
def redis8_options(t):
    """Replies recorded from redis-server 8.8.0."""
    with t.sut.client() as c:
        for i in range(1, 5):
            c.cmd('XADD', 't', '%d-1' % i, 'a', 1)
        assert c.cmd('XTRIM', 't', 'MAXLEN', '~', 1, 'DELREF') == b':3\r\n'
        assert c.cmd('XTRIM', 't', 'MAXLEN', '~', 1, 'ACKED') == b':0\r\n'
        assert c.cmd('XTRIM', 't', 'MAXLEN', '~', 1, 'KEEPREF') == b':0\r\n'
        assert c.cmd('XTRIM', 't', 'KEEPREF', 'ACKED', 'MAXLEN', 1) == b'-ERR syntax error\r\n'
        assert c.cmd('XADD', 't', 'ACKED', 'MAXLEN', 0, '5-1', 'a', 1) == b'$3\r\n5-1\r\n'
        assert c.cmd('XLEN', 't') == b':0\r\n'
        assert c.cmd('XREAD', 'STREAMS', 't', '+') == b'*-1\r\n'
        c.cmd('XADD', 't', '6-1', 'a', 1)
        c.cmd('XADD', 't', '7-1', 'b', 2)
        assert c.cmd('XREAD', 'STREAMS', 't', '+') == \
            b'*1\r\n*2\r\n$1\r\nt\r\n*1\r\n*2\r\n$3\r\n7-1\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n'
        assert c.cmd('XREAD', 'STREAMS', 't', 'nokey', '0') == (
            b"-ERR Unbalanced 'xread' list of streams: for each stream key an ID, '+', or '$' "
            b"must be specified.\r\n")
        assert c.cmd('XREAD', 'CLAIM', 10, 'STREAMS', 't', '0') == (
            b'-ERR The CLAIM option is only supported by XREADGROUP. You called XREAD '
            b'instead.\r\n')
        # 7.0.15 accepts a last ID below max-deleted-entry-id; 8.8 does not.
        c.cmd('XADD', 'd', '10-0', 'a', 1)
        c.cmd('XADD', 'd', '10-1', 'a', 1)
        c.cmd('XDEL', 'd', '10-1')
        assert c.cmd('XSETID', 'd', '10-0') == (
            b'-ERR The ID specified in XSETID is smaller than current max_deleted_entry_id\r\n')


@test
@xkv_only
def idmp(t):
    """Replies recorded from redis-server 8.8.0 (IDs from the clock: compared
    with each other)."""
    with t.sut.client() as c:
        assert c.cmd('XADD', 't', 'IDMP', 'p', '5-1', 'a', 1) == \
            b'-ERR Invalid stream ID specified as stream command argument\r\n'
        assert c.cmd('XADD', 't', 'IDMP', 'p', 'i', '5-1', 'a', 1) == \
            b'-ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs\r\n'
        assert c.cmd('XADD', 't', 'IDMP', '', 'i', '*', 'a', 1) == \
            b'-ERR syntax error, IDMP requires a non-empty producer ID\r\n'
        assert c.cmd('XADD', 't', 'IDMP', 'p', '', '*', 'a', 1) == \
            b'-ERR syntax error, IDMP requires a non-empty idempotent ID\r\n'
        assert c.cmd('XADD', 't', 'IDMPAUTO', '', '*', 'a', 1) == \
            b'-ERR syntax error, IDMPAUTO requires a non-empty producer ID\r\n'
        assert c.cmd('XADD', 't', 'IDMPAUTO', 'p', 'IDMP', 'p', 'i', '*', 'a', 1) == \
            b'-ERR syntax error, IDMP/IDMPAUTO specified multiple times\r\n'
        first = c.call('XADD', 't', 'IDMP', 'p', 'i', '*', 'a', 1)
        # The same producer and ID: the first entry's ID, nothing added.
        assert c.call('XADD', 't', 'IDMP', 'p', 'i', '*', 'a', 2) == first
        assert c.call('XLEN', 't') == 1
        # A duplicate changes nothing a WATCH sees (8.8: EXEC goes ahead).
        with t.sut.client() as w:
            w.cmd('WATCH', 't')
            c.cmd('XADD', 't', 'IDMP', 'p', 'i', '*', 'a', 3)
            w.cmd('MULTI')
            w.cmd('XLEN', 't')
            assert w.cmd('EXEC') == b'*1\r\n:1\r\n'
        assert c.call('XADD', 't', 'IDMP', 'q', 'i', '*', 'a', 2) != first
        # IDMPAUTO: the pairs in any order are the same message.
        auto = c.call('XADD', 't', 'IDMPAUTO', 'p', '*', 'a', 1, 'b', 2)
        assert c.call('XADD', 't', 'IDMPAUTO', 'p', '*', 'b', 2, 'a', 1) == auto
        assert c.call('XADD', 't', 'IDMPAUTO', 'p', '*', 'b', 2, 'a', 3) != auto
        assert c.call('XLEN', 't') == 4
        assert c.cmd('XADD', 'n', 'NOMKSTREAM', 'IDMP', 'p', 'i', '*', 'a', 1) == b'$-1\r\n'
        assert c.call('EXISTS', 'n') == 0
        c.cmd('CONFIG', 'SET', 'stream-idmp-maxsize', 1)
        c.call('XADD', 'm', 'IDMP', 'p', 'i1', '*', 'a', 1)
        c.call('XADD', 'm', 'IDMP', 'p', 'i2', '*', 'a', 1)
        c.call('XADD', 'm', 'IDMP', 'p', 'i1', '*', 'a', 1)
        # maxsize 1: i1 was forgotten when i2 came, and added again.
        assert c.call('XLEN', 'm') == 3
        c.cmd('CONFIG', 'SET', 'stream-idmp-maxsize', 100)


@test
@xkv_only
def xadd_to_an_existing_stream_allocates_no_second_stream(t):
    """XADD made a fresh stream for every call and kept it only for a new
    key: each XADD to an existing stream leaked one. 20,000 small entries
    now cost their listpack bytes only (a stream header is over 100)."""
    with t.sut.client() as c:
        c.call('XADD', 's', '*', 'f', 'v')
        before = int(info_fields(c.call('INFO', 'memory'))['memory']['used_memory'])
        for i in range(0, 20000, 500):
            c.send_raw(encode(['XADD', 's', '*', 'f', 'v']) * 500)
            c.read_replies(500)
        after = int(info_fields(c.call('INFO', 'memory'))['memory']['used_memory'])
        assert c.call('XLEN', 's') == 20001
        assert (after - before) / 20000 < 40, (after - before) / 20000
