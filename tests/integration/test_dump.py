# SPDX-License-Identifier: GPL-2.0-only
"""DUMP and RESTORE against redis-server 7.0: the same payload bytes where the
two servers encode a value alike, RESTORE of 7.0's payloads reading back the
same, and Redis's options and errors."""

from harness import Within, test, xkv_only

# One build of every kind of value, run on both servers.
LONG = 'x' * 100
SETUP = [
    ('SET', 's', 'hello'), ('SET', 'n', '12345'), ('SET', 'neg', '-70000'),
    ('SET', 'big', '9223372036854775807'), ('SET', 'empty', ''),
    ('SET', 'lz', 'a' * 50), ('SET', 'raw', 'hello world, this is long 123'),
    ('SET', 'bin', bytes(range(256))), ('SET', 'float', '3.25'), ('SET', 'notcanon', '007'),
    ('RPUSH', 'l', 'a', 'b', '1', '2', '300', '-5', '70000', '5000000000', 'x y', ''),
    ('RPUSH', 'lints', *[str(i) for i in range(600)]),
    # Two quicklist nodes. xkvd bounds a node by its own pack's size, Redis
    # by the listpack's, so a boundary can fall one element apart (see
    # docs/persistence.md); for these sizes they agree.
    ('RPUSH', 'lbig', *[LONG + str(i) for i in range(1, 101)]),
    ('SADD', 'si', '1', '2', '3', '70000'), ('SADD', 'si16', '-3', '100'),
    ('SADD', 'si64', '1', '5000000000', '-9223372036854775808'),
    ('ZADD', 'z', '1', 'a', '2.5', 'b', '-3', 'c', '1e20', 'd', '-inf', 'f', 'inf', 'g'),
    # 7.0 writes 0.1 as "0.10000000000000001" (%.17g), 8.8 and xkvd as "0.1".
    ('ZADD', 'zfrac', '0.1', 'e', '1.5', 'f'),
    ('ZADD', 'zbig', *[x for i in range(200) for x in (str(i * 1.5), 'm%d' % i)]),
    ('HSET', 'h', 'f', 'v', 'g', '12', 'n', '-1'),
    ('SADD', 'sbig', *['m%d' % i for i in range(1000)]),
    ('SADD', 'ibig', *[str(i) for i in range(1000)]),
    ('SADD', 'sstr', 'a', 'b', 'c'),
    ('HSET', 'hbig', *[x for i in range(600) for x in ('f%d' % i, 'v%d' % i)]),
    ('HSET', 'hlong', 'f', LONG),
]

# Keys both servers encode alike, hence give the same DUMP bytes (7.0 has
# no set listpack and fills quicklist nodes alike for these lists).
SAME_BYTES = ['s', 'n', 'neg', 'big', 'empty', 'lz', 'raw', 'bin', 'float', 'notcanon', 'l',
              'lints', 'lbig', 'si', 'si16', 'si64', 'z', 'zbig', 'h']


def build(srv):
    for step in SETUP:
        srv.call(*step)


def content(srv, key):
    t = srv.call('TYPE', key)
    if t == b'string':
        v = srv.call('GET', key)
    elif t == b'list':
        v = srv.call('LRANGE', key, 0, -1)
    elif t == b'set':
        v = sorted(srv.call('SMEMBERS', key))
    elif t == b'zset':
        # Scores as numbers: Redis 8.8 prints them shortest, 7.0 "%.17g".
        r = srv.call('ZRANGE', key, 0, -1, 'WITHSCORES')
        v = [(r[i], float(r[i + 1])) for i in range(0, len(r), 2)]
    else:
        v = sorted(srv.call('HGETALL', key))
    return t, v


def crc64(data):
    """Redis's CRC-64 (Jones, reflected), bit by bit: the test's own check."""
    crc = 0
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x95ac9329ac4bc9b5 if crc & 1 else 0)
    return crc


def frame(body, version=10):
    """A DUMP payload around an RDB value body, with a correct CRC."""
    data = body + bytes([version & 0xff, version >> 8])
    return data + crc64(data).to_bytes(8, 'little')


@test
@xkv_only
def dump_bytes_match_redis_7_0(t):
    build(t.ref)
    build(t.sut)
    for key in SAME_BYTES:
        a, b = t.ref.call('DUMP', key), t.sut.call('DUMP', key)
        # The footers differ by design: RDB version 10 vs 14, hence the CRC.
        assert a[:-10] == b[:-10], (key, a[:80], b[:80])
        assert b[-10:-8] == b'\x0e\x00', b[-10:]
        assert int.from_bytes(b[-8:], 'little') == crc64(b[:-8]), key
    assert t.sut.call('DUMP', 'nosuchkey') is None
    # rdbchecksum is a start-up directive, as in Redis: a pair started without it.
    ref, sut = t.spawn_pair(rdbcompression='no', rdbchecksum='no')
    build(ref)
    build(sut)
    for key in ('lz', 'lbig', 'zbig'):
        a, b = ref.call('DUMP', key), sut.call('DUMP', key)
        assert a[:-10] == b[:-10], key
        assert b[-8:] == bytes(8), b[-8:]
        # No CRC: RESTORE takes it without checking.
        assert sut.call('RESTORE', key + '_nocrc', 0, b) == b'OK'
        assert content(sut, key + '_nocrc') == content(ref, key)


@test
def restore_of_redis_7_0_payloads_reads_back_the_same(t):
    build(t.ref)
    keys = sorted(t.ref.call('KEYS', '*'))
    assert len(keys) == len(set(step[1] for step in SETUP))
    for key in keys:
        payload = t.ref.call('DUMP', key)
        assert t.sut.call('RESTORE', key, 0, payload) == b'OK', key
        assert content(t.sut, key) == content(t.ref, key), key
        # And back: what xkvd dumps restores into xkvd unchanged.
        again = t.sut.call('DUMP', key)
        assert t.sut.call('RESTORE', key, 0, again, 'REPLACE') == b'OK'
        assert content(t.sut, key) == content(t.ref, key), key
    t.compare([('OBJECT', 'ENCODING', k) for k in
               ('s', 'n', 'lz', 'si', 'z', 'zbig', 'h', 'sbig', 'ibig', 'hbig', 'hlong')])


@test
def restore_options_and_errors(t):
    t.ref.call('SET', 'src', 'value')
    t.ref.call('RPUSH', 'lsrc', 'a', 'b')
    p = t.ref.call('DUMP', 'src')
    lp = t.ref.call('DUMP', 'lsrc')
    bad_crc = p[:-1] + bytes([p[-1] ^ 1])
    newer = frame(p[:-10], version=15)
    bad_type = frame(b'\x1e\x00')
    empty_set = frame(b'\x02\x00')
    truncated = frame(lp[:-14])
    t.compare([
        ('RESTORE', 'k', '0', p), ('GET', 'k'), ('TTL', 'k'),
        ('RESTORE', 'k', '0', p), ('RESTORE', 'k', '0', lp, 'REPLACE'), ('TYPE', 'k'),
        ('RESTORE', 'x', '0', bad_crc), ('RESTORE', 'x', '0', newer),
        ('RESTORE', 'x', '0', b'short'), ('RESTORE', 'x', '0', bad_type),
        ('RESTORE', 'x', '0', empty_set), ('RESTORE', 'x', '0', truncated),
        ('RESTORE', 'x', '-1', p), ('RESTORE', 'x', 'abc', p),
        ('RESTORE', 'x', '0', p, 'BOGUS'), ('RESTORE', 'x', '0', p, 'IDLETIME', '-1'),
        ('RESTORE', 'x', '0', p, 'IDLETIME', 'z'), ('RESTORE', 'x', '0', p, 'FREQ', '256'),
        ('RESTORE', 'x', '0', p, 'IDLETIME', '5', 'FREQ', '5'),
        ('RESTORE', 'x', '0', p, 'IDLETIME'), ('RESTORE', 'x', '0'), ('EXISTS', 'x'),
        # A relative TTL, an absolute one, and one already past.
        ('RESTORE', 't1', '100000', p), Within(99, 100, 'TTL', 't1'),
        ('RESTORE', 't2', '4102444800000', p, 'ABSTTL'), ('PEXPIRETIME', 't2'),
        ('RESTORE', 'k', '1', p, 'ABSTTL', 'REPLACE'), ('EXISTS', 'k'),
        ('RESTORE', 'i', '0', p, 'IDLETIME', '1000'), Within(1000, 1001, 'OBJECT', 'IDLETIME', 'i'),
        ('RESTORE', 'i2', '0', p, 'FREQ', '100'), Within(0, 1, 'OBJECT', 'IDLETIME', 'i2'),
        ('CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lfu'),
        ('RESTORE', 'f', '0', p, 'FREQ', '100'), ('OBJECT', 'FREQ', 'f'),
        ('CONFIG', 'SET', 'maxmemory-policy', 'noeviction'),
        ('DUMP', 'nosuch'), ('DUMP',), ('DUMP', 'a', 'b'),
    ])
