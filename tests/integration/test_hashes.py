# SPDX-License-Identifier: GPL-2.0-only
"""Hash commands: field reads and writes, counters, HRANDFIELD, HSCAN, the
listpack/hashtable thresholds, RESP3 shapes; and (xkvd only, the 7.0.15
reference lacks them) field expiry from Redis 7.4 and HGETDEL, HGETEX, HSETEX
from Redis 8.0, asserted against their documented replies."""

import time

from harness import RespError, Unordered, decode, test, wait_until, xkv_only

FUTURE_S = 4102444800            # 2100-01-01
FUTURE_MS = FUTURE_S * 1000 + 321
BIG = 300                        # fields: past hash-max-listpack-entries (128)

HASH_COMMANDS = ('HSET', 'HSETNX', 'HGET', 'HMGET', 'HMSET', 'HGETALL', 'HDEL', 'HLEN',
                 'HEXISTS', 'HKEYS', 'HVALS', 'HINCRBY', 'HINCRBYFLOAT', 'HSTRLEN',
                 'HRANDFIELD', 'HSCAN')


def big_hash(key, n=BIG, prefix='f'):
    return ('HSET', key) + tuple(x for i in range(n) for x in ('%s%d' % (prefix, i), 'v%d' % i))


@test
def read_write_basics(t):
    steps = [
        ('HSET', 'h', 'a', 1, 'b', 2, 'c', 3), ('HSET', 'h', 'a', 'x', 'd', 4), ('HGETALL', 'h'),
        ('HGET', 'h', 'a'), ('HGET', 'h', 'nofield'), ('HGET', 'nokey', 'a'),
        ('HMGET', 'h', 'a', 'nofield', 'b', 'a'), ('HMGET', 'nokey', 'a', 'b'),
        ('HLEN', 'h'), ('HLEN', 'nokey'), ('HKEYS', 'h'), ('HVALS', 'h'), ('HKEYS', 'nokey'),
        ('HVALS', 'nokey'), ('HGETALL', 'nokey'), ('HEXISTS', 'h', 'a'), ('HEXISTS', 'h', 'z'),
        ('HEXISTS', 'nokey', 'a'), ('HSTRLEN', 'h', 'a'), ('HSTRLEN', 'h', 'z'),
        ('HSTRLEN', 'nokey', 'a'), ('HSET', 'h', 'n', -12345), ('HSTRLEN', 'h', 'n'),
        ('HDEL', 'h', 'b', 'nofield', 'b'), ('HDEL', 'nokey', 'a'), ('HGETALL', 'h'),
        ('HMSET', 'h', 'b', 'again', 'e', 5), ('HGETALL', 'h'), ('TYPE', 'h'),
        ('hset', 'h', 'lower', 'case'), ('hget', 'h', 'lower'),
    ]
    t.compare(steps)
    t.compare([('DEL', 'h')] + steps, proto=3)


@test
def order_is_insertion_order(t):
    # Small hashes are listpacks in both servers: replies keep field order.
    t.compare([
        ('HSET', 'h', 'z', 1, 'y', 2, 'x', 3), ('HSET', 'h', 'y', 'long value replacing y'),
        ('HDEL', 'h', 'z'), ('HSET', 'h', 'z', 'back'), ('HGETALL', 'h'), ('HKEYS', 'h'),
        ('HSETNX', 'h', 'w', 'new'), ('HINCRBY', 'h', 'v', 1), ('HINCRBYFLOAT', 'h', 'u', '1.5'),
        ('HGETALL', 'h'), ('HVALS', 'h'),
    ])


@test
def binary_and_empty(t):
    t.compare([
        ('HSET', 'h', '', ''), ('HGET', 'h', ''), ('HSTRLEN', 'h', ''), ('HEXISTS', 'h', ''),
        ('HSET', 'h', b'f\x00\r\n\xff', b'v\x00\r\n'), ('HGET', 'h', b'f\x00\r\n\xff'),
        ('HGET', 'h', b'f'), ('HGETALL', 'h'), ('HSET', '', 'f', 'v'), ('HGETALL', ''),
        ('HDEL', 'h', ''), ('HGETALL', 'h'),
    ])


@test
def arity_and_pairs(t):
    t.compare([
        ('HSET', 'h'), ('HSET', 'h', 'a'), ('HSET', 'h', 'a', 1, 'b'), ('HMSET', 'h', 'a'),
        ('HMSET', 'h', 'a', 1, 'b'), ('HSETNX', 'h', 'a'), ('HSETNX', 'h', 'a', 1, 2), ('HGET', 'h'),
        ('HGET', 'h', 'a', 'b'), ('HMGET', 'h'), ('HGETALL',), ('HGETALL', 'h', 'x'), ('HDEL', 'h'),
        ('HLEN',), ('HEXISTS', 'h'), ('HKEYS',), ('HVALS', 'h', 'x'), ('HINCRBY', 'h', 'a'),
        ('HINCRBYFLOAT', 'h', 'a', 1, 2), ('HSTRLEN', 'h'), ('HRANDFIELD',), ('HSCAN', 'h'),
        ('EXISTS', 'h'),
    ])


@test
def wrong_type(t):
    t.compare([('SET', 's', 'v')] + [
        ('HSET', 's', 'a', 1), ('HSETNX', 's', 'a', 1), ('HGET', 's', 'a'), ('HMGET', 's', 'a'),
        ('HMSET', 's', 'a', 1), ('HGETALL', 's'), ('HDEL', 's', 'a'), ('HLEN', 's'),
        ('HEXISTS', 's', 'a'), ('HKEYS', 's'), ('HVALS', 's'), ('HINCRBY', 's', 'a', 1),
        ('HINCRBYFLOAT', 's', 'a', 1), ('HSTRLEN', 's', 'a'), ('HRANDFIELD', 's'),
        ('HRANDFIELD', 's', 2), ('HRANDFIELD', 's', 2, 'WITHVALUES'), ('HSCAN', 's', 0),
        ('GET', 's'),
        ('HSET', 'h', 'a', 1), ('GET', 'h'), ('APPEND', 'h', 'x'), ('INCR', 'h'), ('TYPE', 'h'),
        ('SET', 'h', 'overwrites'), ('TYPE', 'h'),
        # Argument errors that Redis checks before the key's type.
        ('HSET', 's', 'a'), ('HINCRBY', 's', 'a', 'x'), ('HINCRBYFLOAT', 's', 'a', 'x'),
        ('HRANDFIELD', 's', 'x'), ('HSCAN', 's', 'x'),
    ])


@test
def hsetnx(t):
    t.compare([
        ('HSETNX', 'h', 'a', 1), ('HSETNX', 'h', 'a', 2), ('HGET', 'h', 'a'), ('HSETNX', 'h', 'b', 3),
        ('HGETALL', 'h'), ('HSETNX', 'h', '', ''), ('HGETALL', 'h'),
    ])


@test
def hincrby(t):
    t.compare([
        ('HINCRBY', 'h', 'a', 5), ('HINCRBY', 'h', 'a', -7), ('HINCRBY', 'h', 'a', 0),
        ('HGET', 'h', 'a'), ('HINCRBY', 'h', 'b', '9223372036854775807'), ('HINCRBY', 'h', 'b', 1),
        ('HINCRBY', 'h', 'c', '-9223372036854775808'), ('HINCRBY', 'h', 'c', -1),
        ('HINCRBY', 'h', 'c', '9223372036854775807'), ('HGET', 'h', 'c'),
        ('HINCRBY', 'h', 'a', 'x'), ('HINCRBY', 'h', 'a', '1.5'), ('HINCRBY', 'h', 'a', ''),
        ('HINCRBY', 'h', 'a', '9223372036854775808'), ('HINCRBY', 'h', 'a', ' 1'),
        ('HSET', 'h', 's', 'abc', 'f', '1.5', 'z', '007', 'm', '-0', 'sp', ' 1', 'e', '',
         'p', '+1', 'big', '99999999999999999999'),
        ('HINCRBY', 'h', 's', 1), ('HINCRBY', 'h', 'f', 1), ('HINCRBY', 'h', 'z', 1),
        ('HINCRBY', 'h', 'm', 1), ('HINCRBY', 'h', 'sp', 1), ('HINCRBY', 'h', 'e', 1),
        ('HINCRBY', 'h', 'p', 1), ('HINCRBY', 'h', 'big', 1), ('HGETALL', 'h'),
        ('HINCRBY', 'newkey', 'x', '-3'), ('HGETALL', 'newkey'),
        ('HINCRBY', 'newkey2', 'x', 'bad'), ('EXISTS', 'newkey2'),
    ])


@test
def hincrbyfloat(t):
    t.compare([
        ('HINCRBYFLOAT', 'h', 'a', '10.5'), ('HINCRBYFLOAT', 'h', 'a', '0.1'),
        ('HINCRBYFLOAT', 'h', 'a', '-5'), ('HINCRBYFLOAT', 'h', 'a', '5.0e3'),
        ('HINCRBYFLOAT', 'h', 'a', '-5.0e3'), ('HINCRBYFLOAT', 'h', 'b', '3.0'),
        ('HINCRBYFLOAT', 'h', 'c', '1e308'), ('HINCRBYFLOAT', 'h', 'c', '1e308'),
        ('HINCRBYFLOAT', 'h', 'c', '-1e308'), ('HINCRBYFLOAT', 'h', 'd', '0.0000001'),
        ('HINCRBYFLOAT', 'h', 'e', '-0'), ('HINCRBYFLOAT', 'h', 'x', 'inf'),
        ('HINCRBYFLOAT', 'h', 'x', '-inf'), ('HINCRBYFLOAT', 'h', 'x', 'nan'),
        ('HINCRBYFLOAT', 'h', 'x', 'abc'), ('HINCRBYFLOAT', 'h', 'x', ''),
        ('HINCRBYFLOAT', 'h', 'x', ' 1'), ('HINCRBYFLOAT', 'h', 'x', '1 '),
        ('HSET', 'h', 's', 'abc', 'i', 17, 'sp', ' 2', 'inf', 'inf', 'big', '1.7e308'),
        ('HINCRBYFLOAT', 'h', 's', 1), ('HINCRBYFLOAT', 'h', 'i', '0.5'),
        ('HINCRBYFLOAT', 'h', 'sp', 1), ('HINCRBYFLOAT', 'h', 'inf', 1),
        ('HINCRBYFLOAT', 'h', 'big', '1.7e308'), ('HMGET', 'h', 'a', 'b', 'c', 'd', 'e', 'i'),
        Unordered('HGETALL', 'h'),   # the 309-byte value made it a hash table
        ('HINCRBYFLOAT', 'nokey', 'x', 'bad'), ('EXISTS', 'nokey'),
    ])
    t.compare([('HINCRBYFLOAT', 'h3', 'a', '1.25'), ('HGET', 'h3', 'a')], proto=3)


@test
def emptied_hash_is_deleted(t):
    t.compare([
        ('HSET', 'h', 'a', 1, 'b', 2), ('HDEL', 'h', 'a', 'b', 'c'), ('EXISTS', 'h'), ('TYPE', 'h'),
        ('HSET', 'h', 'a', 1), ('HDEL', 'h', 'a'), ('HLEN', 'h'), ('HGETALL', 'h'),
        big_hash('big'), ('HDEL', 'big') + tuple('f%d' % i for i in range(BIG)), ('EXISTS', 'big'),
    ])


@test
def key_ttl_and_keyspace(t):
    # Hash writes keep the key's TTL; COPY and RENAME carry the whole hash.
    t.compare([
        ('HSET', 'h', 'a', 1, 'b', 2), ('EXPIRE', 'h', 100), ('HSET', 'h', 'c', 3),
        ('HINCRBY', 'h', 'n', 1), ('HDEL', 'h', 'a'), ('TTL', 'h'),
        ('COPY', 'h', 'h2'), ('HSET', 'h', 'b', 'changed'), ('HGETALL', 'h2'), ('TTL', 'h2'),
        ('RENAME', 'h2', 'h3'), ('HGETALL', 'h3'), ('EXISTS', 'h2'),
        big_hash('big'), ('COPY', 'big', 'big2'), ('HDEL', 'big', 'f0', 'f1'), ('HLEN', 'big2'),
        ('HGET', 'big2', 'f0'), ('TYPE', 'big2'), Unordered('KEYS', '*'),
        ('HSET', 'gone', 'a', 1), ('PEXPIRE', 'gone', 1),
    ])
    time.sleep(0.01)
    t.compare([('HGET', 'gone', 'a'), ('EXISTS', 'gone')])


@test
def large_hashes(t):
    # Past the thresholds the order is the hash table's: compare as sets.
    t.compare([
        big_hash('h'), ('HLEN', 'h'), ('HGET', 'h', 'f7'), ('HGET', 'h', 'nofield'),
        ('HMGET', 'h', 'f0', 'f299', 'f300'), Unordered('HKEYS', 'h'), Unordered('HVALS', 'h'),
        Unordered('HGETALL', 'h'), ('HSET', 'h', 'f0', 'new', 'extra', 'x'), ('HGET', 'h', 'f0'),
        ('HDEL', 'h', 'f1', 'f2', 'f3'), ('HLEN', 'h'), ('HEXISTS', 'h', 'f1'),
        ('HINCRBY', 'h', 'cnt', 10), ('HINCRBYFLOAT', 'h', 'cnt', '0.5'), ('HSTRLEN', 'h', 'f10'),
        ('HSETNX', 'h', 'f10', 'x'), ('HSETNX', 'h', 'f1', 'x'), ('HGET', 'h', 'f1'),
        # A long value converts a small hash; so does a long field name.
        ('HSET', 'v', 'a', 'x' * 65), ('HGET', 'v', 'a'), ('HSET', 'w', 'f' * 65, 1),
        ('HSET', 'w', 'b', 2), Unordered('HKEYS', 'w'), ('HSET', 'e', 'a', 'x' * 64, 'b', 2),
        ('HGETALL', 'e'),
    ])
    t.compare([Unordered('HGETALL', 'h'), ('HLEN', 'h')], proto=3)


def object_encoding_known(srv):
    with srv.client() as c:
        return decode(c.cmd('COMMAND', 'INFO', 'object')) != [None]


@test
def encoding_thresholds(t):
    ref, sut = t.spawn_pair(**{'hash-max-listpack-entries': 4, 'hash-max-listpack-value': 8})
    steps = [
        ('HSET', 'h', 'a', 1, 'b', 2, 'c', 3, 'd', 4), ('HSET', 'h', 'a', 12345678),
        ('HGETALL', 'h'), ('HSET', 'h', 'e', 5), ('HLEN', 'h'), Unordered('HGETALL', 'h'),
        ('HDEL', 'h', 'a', 'b', 'c', 'd'), ('HGETALL', 'h'),
        ('HSET', 'v', 'a', '123456789'), ('HSET', 'w', '123456789', 'a'),
        ('HINCRBYFLOAT', 'x', 'a', '0.000001'), ('HSET', 'y', 'a', 1), ('HSETNX', 'y', 'b', '123456789'),
    ]
    if object_encoding_known(sut):
        steps += [('OBJECT', 'ENCODING', k) for k in ('h', 'v', 'w', 'x', 'y')]
    t.compare(steps, ref=ref, sut=sut)


@test
def hrandfield_deterministic(t):
    steps = [
        ('HRANDFIELD', 'nokey'), ('HRANDFIELD', 'nokey', 3), ('HRANDFIELD', 'nokey', -3),
        ('HRANDFIELD', 'nokey', 3, 'WITHVALUES'),
        ('HSET', 'h', 'a', 1, 'b', 2, 'c', 3), ('HRANDFIELD', 'h', 0), ('HRANDFIELD', 'h', 0, 'WITHVALUES'),
        # Asking for at least the whole hash returns it in order.
        ('HRANDFIELD', 'h', 3), ('HRANDFIELD', 'h', 100), ('HRANDFIELD', 'h', 3, 'WITHVALUES'),
        ('HRANDFIELD', 'h', 100, 'withvalues'),
        ('HSET', 'one', 'only', 'val'), ('HRANDFIELD', 'one'), ('HRANDFIELD', 'one', 1),
        ('HRANDFIELD', 'one', -4), ('HRANDFIELD', 'one', -4, 'WITHVALUES'),
        ('HRANDFIELD', 'one', 1, 'WITHVALUES'),
        ('HRANDFIELD', 'h', 'x'), ('HRANDFIELD', 'h', '1.5'), ('HRANDFIELD', 'h', 1, 'x'),
        ('HRANDFIELD', 'h', 1, 'WITHVALUES', 'x'), ('HRANDFIELD', 'h', '-9223372036854775808'),
        ('HRANDFIELD', 'h', '-9223372036854775808', 'WITHVALUES'),
        ('HRANDFIELD', 'h', '4611686018427387904', 'WITHVALUES'),
        ('HRANDFIELD', 'h', '-4611686018427387904', 'WITHVALUES'),
        ('HRANDFIELD', 'h', '9223372036854775807'),
    ]
    t.compare(steps)
    t.compare(steps[4:], proto=3)


def hrandfield_shape(fields, values):
    """A function of a server: the shapes and membership of HRANDFIELD
    replies (random, so only their properties can be compared)."""
    def run(srv):
        out = []
        for proto in (2, 3):
            with srv.client(proto) as c:
                for count in (1, 2, 5, 40, 150, -1, -5, -400):
                    r = c.call('HRANDFIELD', 'h', count)
                    # Only positive counts promise distinct fields.
                    uniq = len(set(r)) == len(r) if count > 0 else None
                    out.append((proto, count, len(r), uniq, set(r) <= fields))
                    r = c.call('HRANDFIELD', 'h', count, 'WITHVALUES')
                    pairs = r if proto == 3 else [r[i:i + 2] for i in range(0, len(r), 2)]
                    out.append((proto, count, 'wv', len(pairs),
                                all(len(p) == 2 and values.get(p[0]) == p[1] for p in pairs),
                                len({p[0] for p in pairs}) == len(pairs) if count > 0 else None))
                one = c.call('HRANDFIELD', 'h')
                out.append((proto, one in fields))
        return out
    return run


@test
def hrandfield_random(t):
    for n in (20, BIG):
        t.compare([('DEL', 'h'), big_hash('h', n)])
        fields = {b'f%d' % i for i in range(n)}
        values = {b'f%d' % i: b'v%d' % i for i in range(n)}
        t.same(hrandfield_shape(fields, values), 'HRANDFIELD shapes (%d fields)' % n)


def full_hscan(key, *opts):
    """A function of a server: every field/value HSCAN returns, over a full
    iteration, plus the number of calls it took and whether each returned
    element was a well-formed pair."""
    def run(srv):
        seen, cursor, calls = [], b'0', 0
        with srv.client() as c:
            while True:
                cursor, items = c.call('HSCAN', key, cursor, *opts)
                seen += items
                calls += 1
                if cursor == b'0':
                    break
        return sorted(seen), calls > 0
    return run


@test
def hscan(t):
    t.compare([
        ('HSCAN', 'nokey', 0), ('HSCAN', 'nokey', 0, 'COUNT', 0), ('HSCAN', 'nokey', 0, 'FOO'),
        ('HSET', 'h', 'a', 1, 'b', 2, 'ab', 3), ('HSCAN', 'h', 0), ('HSCAN', 'h', 0, 'COUNT', 1),
        ('HSCAN', 'h', 12345), ('HSCAN', 'h', 0, 'MATCH', 'a*'), ('HSCAN', 'h', 0, 'match', 'z*'),
        ('HSCAN', 'h', 0, 'MATCH', '*'), ('HSCAN', 'h', 0, 'MATCH', 'a*', 'COUNT', 100),
        ('HSCAN', 'h', 'abc'), ('HSCAN', 'h', '-1'), ('HSCAN', 'h', '1.5'), ('HSCAN', 'h', ' 1'),
        ('HSCAN', 'h', '18446744073709551616'), ('HSCAN', 'h', ''),
        ('HSCAN', 'h', 0, 'COUNT', 0), ('HSCAN', 'h', 0, 'COUNT', -1), ('HSCAN', 'h', 0, 'COUNT', 'x'),
        ('HSCAN', 'h', 0, 'COUNT'), ('HSCAN', 'h', 0, 'MATCH'), ('HSCAN', 'h', 0, 'TYPE', 'hash'),
        ('HSCAN', 'h', 0, 'FOO', 'bar'),
    ])
    t.compare([('HSCAN', 'h', 0)], proto=3)
    t.compare([big_hash('big')])
    for opts in ((), ('COUNT', 1), ('COUNT', 7), ('COUNT', 1000), ('MATCH', 'f1*'),
                 ('MATCH', 'f1*', 'COUNT', 3)):
        t.same(full_hscan('big', *opts), 'full HSCAN %r' % (opts,))


@test
def command_info(t):
    def heads(srv):
        entries = srv.call('COMMAND', 'INFO', *HASH_COMMANDS)
        return [e[:6] for e in entries]
    t.same(heads, 'COMMAND INFO of the hash commands')
    t.compare([('COMMAND', 'GETKEYS', 'HSET', 'h', 'a', 1), ('COMMAND', 'GETKEYS', 'HMGET', 'h', 'a')])


# ---------------------------------------------------------------- xkvd only

def call(c, *args):
    return c.call(*args)


def err(c, *args):
    raw = c.cmd(*args)
    assert raw.startswith(b'-'), (args, raw)
    return raw[1:-2].decode()


@test
@xkv_only
def field_expire_codes(t):
    with t.sut.client() as c:
        assert call(c, 'HEXPIRE', 'nokey', 100, 'FIELDS', 2, 'a', 'b') == [-2, -2]
        assert call(c, 'EXISTS', 'nokey') == 0
        call(c, 'HSET', 'h', 'a', 1, 'b', 2, 'c', 3)
        assert call(c, 'HEXPIRE', 'h', 100, 'FIELDS', 2, 'a', 'nofield') == [1, -2]
        assert call(c, 'HTTL', 'h', 'FIELDS', 3, 'a', 'b', 'nofield') == [100, -1, -2]
        # Conditions, on absolute deadlines so that the clock cannot move
        # them: no TTL counts as infinite (GT fails, LT passes).
        T = FUTURE_MS
        assert call(c, 'HPEXPIREAT', 'h', T + 200, 'NX', 'FIELDS', 2, 'a', 'b') == [0, 1]
        assert call(c, 'HPEXPIREAT', 'h', T + 300, 'XX', 'FIELDS', 2, 'a', 'c') == [1, 0]
        assert call(c, 'HPEXPIREAT', 'h', T + 300, 'GT', 'FIELDS', 2, 'a', 'c') == [0, 0]
        assert call(c, 'HPEXPIREAT', 'h', T + 400, 'gt', 'FIELDS', 1, 'a') == [1]
        assert call(c, 'HPEXPIREAT', 'h', T + 400, 'LT', 'FIELDS', 2, 'a', 'c') == [0, 1]
        assert call(c, 'HPEXPIREAT', 'h', T + 50, 'lt', 'FIELDS', 1, 'a') == [1]
        assert call(c, 'HPEXPIRETIME', 'h', 'FIELDS', 3, 'a', 'b', 'c') == [T + 50, T + 200, T + 400]
        assert call(c, 'HEXPIRE', 'h', 50, 'FIELDS', 1, 'a') == [1]
        assert call(c, 'HEXPIRE', 'h', 200, 'FIELDS', 1, 'b') == [1]
        assert call(c, 'HEXPIRE', 'h', 400, 'FIELDS', 1, 'c') == [1]
        assert call(c, 'HTTL', 'h', 'FIELDS', 3, 'a', 'b', 'c') == [50, 200, 400]
        ms = call(c, 'HPTTL', 'h', 'FIELDS', 1, 'a')[0]
        assert 49000 <= ms <= 50000, ms
        assert call(c, 'HPEXPIRE', 'h', 150000, 'FIELDS', 1, 'b') == [1]
        assert call(c, 'HEXPIREAT', 'h', FUTURE_S, 'FIELDS', 1, 'a') == [1]
        assert call(c, 'HEXPIRETIME', 'h', 'FIELDS', 2, 'a', 'nofield') == [FUTURE_S, -2]
        assert call(c, 'HPEXPIRETIME', 'h', 'FIELDS', 1, 'a') == [FUTURE_S * 1000]
        assert call(c, 'HPEXPIREAT', 'h', FUTURE_MS, 'FIELDS', 1, 'a') == [1]
        assert call(c, 'HPEXPIRETIME', 'h', 'FIELDS', 1, 'a') == [FUTURE_MS]
        # Seconds round up, as Redis's HEXPIRETIME does.
        assert call(c, 'HEXPIRETIME', 'h', 'FIELDS', 1, 'a') == [FUTURE_S + 1]
        # The same deadline again is a successful set.
        assert call(c, 'HPEXPIREAT', 'h', FUTURE_MS, 'FIELDS', 1, 'a') == [1]
        assert call(c, 'HPERSIST', 'h', 'FIELDS', 3, 'a', 'nofield', 'a') == [1, -2, -1]
        assert call(c, 'HTTL', 'h', 'FIELDS', 1, 'a') == [-1]
        # A deadline already reached deletes the field (2); conditions first.
        assert call(c, 'HEXPIRE', 'h', 0, 'XX', 'FIELDS', 1, 'a') == [0]
        assert call(c, 'HEXPIRE', 'h', 0, 'FIELDS', 2, 'a', 'a') == [2, -2]
        assert call(c, 'HPEXPIREAT', 'h', 1, 'FIELDS', 1, 'b') == [2]
        assert call(c, 'HGETALL', 'h') == [b'c', b'3']
        assert call(c, 'HEXPIREAT', 'h', 1, 'FIELDS', 1, 'c') == [2]
        assert call(c, 'EXISTS', 'h') == 0
        assert call(c, 'HTTL', 'nokey', 'FIELDS', 2, 'a', 'b') == [-2, -2]
        assert call(c, 'HPERSIST', 'nokey', 'FIELDS', 1, 'a') == [-2]
    with t.sut.client(3) as c:
        call(c, 'HSET', 'h3', 'a', 1)
        assert c.cmd('HEXPIRE', 'h3', 100, 'FIELDS', 2, 'a', 'z') == b'*2\r\n:1\r\n:-2\r\n'
        assert c.cmd('HTTL', 'h3', 'FIELDS', 1, 'a') == b'*1\r\n:100\r\n'


@test
@xkv_only
def field_expire_errors(t):
    with t.sut.client() as c:
        call(c, 'HSET', 'h', 'f', 'v')
        call(c, 'SET', 's', 'v')
        assert err(c, 'HEXPIRE', 's', 10, 'FIELDS', 1, 'f').startswith('WRONGTYPE')
        assert err(c, 'HTTL', 's', 'FIELDS', 1, 'f').startswith('WRONGTYPE')
        assert err(c, 'HPERSIST', 's', 'FIELDS', 1, 'f').startswith('WRONGTYPE')
        assert err(c, 'HEXPIRE', 'h', 'x', 'FIELDS', 1, 'f') == \
            'ERR value is not an integer or out of range'
        assert err(c, 'HEXPIRE', 'h', -1, 'FIELDS', 1, 'f') == \
            'ERR invalid expire time, must be >= 0'
        assert err(c, 'HEXPIRE', 'h', 70368744178, 'FIELDS', 1, 'f') == \
            "ERR invalid expire time in 'hexpire' command"
        assert err(c, 'HPEXPIREAT', 'h', 70368744177664, 'FIELDS', 1, 'f') == \
            "ERR invalid expire time in 'hpexpireat' command"
        assert call(c, 'HPEXPIREAT', 'h', 70368744177663, 'FIELDS', 1, 'f') == [1]
        assert err(c, 'HEXPIRE', 'h', 10, 'BAD', 'FIELDS', 1, 'f') == \
            'ERR unknown argument: BAD'
        assert err(c, 'HEXPIRE', 'h', 10, 'FIELDS', 0, 'f') == \
            'ERR Parameter `numFields` should be greater than 0'
        assert err(c, 'HEXPIRE', 'h', 10, 'NX', 'FIELDS', 'x', 'f') == \
            'ERR Parameter `numFields` should be greater than 0'
        assert err(c, 'HEXPIRE', 'h', 10, 'FIELDS', 2, 'f') == \
            'ERR wrong number of arguments'
        assert err(c, 'HEXPIRE', 'h', 10, 'FIELDS', 1, 'f', 'g') == \
            'ERR unknown argument: g'
        assert err(c, 'HEXPIRE', 'h', 10, 'FIELDS', 1) == \
            "ERR wrong number of arguments for 'hexpire' command"
        assert err(c, 'HTTL', 'h', 'FIELD', 1, 'f') == \
            'ERR Mandatory argument FIELDS is missing or not at the right position'
        assert err(c, 'HTTL', 'h', 'FIELDS', 0, 'f') == \
            'ERR Number of fields must be a positive integer'
        assert err(c, 'HPERSIST', 'h', 'FIELDS', -1, 'f') == \
            'ERR Number of fields must be a positive integer'
        assert err(c, 'HPTTL', 'h', 'FIELDS', 3, 'f') == \
            'ERR The `numfields` parameter must match the number of arguments'
        assert err(c, 'HTTL', 'h', 'FIELDS', 1) == \
            "ERR wrong number of arguments for 'httl' command"


@test
@xkv_only
def field_expiry_is_lazy_and_exact(t):
    """Redis 8.8's lazy field expiry, checked against it by hand: only the
    commands that read the fields they name reclaim them; HLEN counts the
    rest until then. Active expiry is off so nothing else reclaims."""
    with t.sut.client() as c:
        call(c, 'DEBUG', 'SET-ACTIVE-EXPIRE', 0)
        try:
            call(c, 'HSET', 'h', 'a', 1, 'b', 2, 'c', 3)
            assert call(c, 'HPEXPIRE', 'h', 30, 'FIELDS', 2, 'a', 'c') == [1, 1]
            time.sleep(0.08)
            assert call(c, 'HLEN', 'h') == 3
            # Skipped, not reclaimed.
            assert call(c, 'HGETALL', 'h') == [b'b', b'2']
            assert call(c, 'HKEYS', 'h') == [b'b']
            assert call(c, 'HSCAN', 'h', 0) == [b'0', [b'b', b'2']]
            assert call(c, 'HTTL', 'h', 'FIELDS', 2, 'a', 'b') == [-2, -1]
            assert call(c, 'HPERSIST', 'h', 'FIELDS', 1, 'a') == [-2]
            assert call(c, 'HLEN', 'h') == 3
            # Named and read: reclaimed, one by one.
            assert call(c, 'HGET', 'h', 'a') is None
            assert call(c, 'HLEN', 'h') == 2
            assert call(c, 'HEXISTS', 'h', 'c') == 0
            assert call(c, 'HLEN', 'h') == 1
            # Setting an expired field creates it anew, without a TTL.
            call(c, 'HSET', 'n', 'a', 1, 'b', 2)
            assert call(c, 'HPEXPIRE', 'n', 20, 'FIELDS', 1, 'a') == [1]
            time.sleep(0.06)
            assert call(c, 'HSETNX', 'n', 'a', 'new') == 1
            assert call(c, 'HTTL', 'n', 'FIELDS', 1, 'a') == [-1]
            # HSET overwrites an expired field as an update; HDEL counts one.
            assert call(c, 'HPEXPIRE', 'n', 20, 'FIELDS', 2, 'a', 'b') == [1, 1]
            time.sleep(0.06)
            assert call(c, 'HSET', 'n', 'a', 'x') == 0
            assert call(c, 'HDEL', 'n', 'b') == 1
            assert call(c, 'HGETALL', 'n') == [b'a', b'x']
            # HRANDFIELD reclaims every expired field first.
            call(c, 'HSET', 'r', 'a', 1, 'b', 2, 'c', 3)
            assert call(c, 'HPEXPIRE', 'r', 20, 'FIELDS', 2, 'a', 'c') == [1, 1]
            time.sleep(0.06)
            assert call(c, 'HRANDFIELD', 'r', -3) == [b'b'] * 3
            assert call(c, 'HLEN', 'r') == 1
            # HINCRBY keeps a field's TTL, HSET drops it.
            assert call(c, 'HEXPIRE', 'h', 100, 'FIELDS', 1, 'b') == [1]
            assert call(c, 'HINCRBY', 'h', 'b', 5) == 7
            assert call(c, 'HINCRBYFLOAT', 'h', 'b', '0.5') == b'7.5'
            assert call(c, 'HTTL', 'h', 'FIELDS', 1, 'b') == [100]
            # The key stays while expired fields remain unreclaimed, and goes
            # with the reclaim of its last field.
            call(c, 'HSET', 'g', 'x', 1, 'y', 2)
            assert call(c, 'HPEXPIRE', 'g', 20, 'FIELDS', 2, 'x', 'y') == [1, 1]
            time.sleep(0.06)
            assert call(c, 'HLEN', 'g') == 2
            assert call(c, 'EXISTS', 'g') == 1
            assert call(c, 'HMGET', 'g', 'x', 'y') == [None, None]
            assert call(c, 'EXISTS', 'g') == 0
            call(c, 'HSET', 'g2', 'x', 1)
            assert call(c, 'HPEXPIRE', 'g2', 20, 'FIELDS', 1, 'x') == [1]
            time.sleep(0.06)
            assert call(c, 'HINCRBY', 'g2', 'x', 1) == 1
            assert call(c, 'HTTL', 'g2', 'FIELDS', 1, 'x') == [-1]
        finally:
            call(c, 'DEBUG', 'SET-ACTIVE-EXPIRE', 1)


@test
@xkv_only
def field_expiry_is_active(t):
    """Hashes lose expired fields, and the key when it empties, without any
    hash command touching them: in both encodings, after RENAME, SWAPDB and
    MOVE too."""
    with t.sut.client() as c:
        call(c, 'FLUSHALL')
        call(c, 'HSET', 'small', 'a', 1, 'b', 2)
        c.call(*big_hash('big'))
        call(c, 'HSET', 'part', 'a', 1, 'keep', 2)
        call(c, 'HSET', 'moved', 'a', 1)
        call(c, 'HSET', 'swapped', 'a', 1)
        call(c, 'HSET', 'keyttl', 'a', 1)
        call(c, 'EXPIRE', 'keyttl', 1000)
        fields = ['f%d' % i for i in range(BIG)]
        assert call(c, 'HPEXPIRE', 'small', 50, 'FIELDS', 2, 'a', 'b') == [1, 1]
        assert call(c, 'HPEXPIRE', 'big', 50, 'FIELDS', BIG, *fields) == [1] * BIG
        assert call(c, 'HPEXPIRE', 'part', 50, 'FIELDS', 1, 'a') == [1]
        assert call(c, 'HPEXPIRE', 'moved', 50, 'FIELDS', 1, 'a') == [1]
        assert call(c, 'HPEXPIRE', 'swapped', 50, 'FIELDS', 1, 'a') == [1]
        assert call(c, 'HPEXPIRE', 'keyttl', 50, 'FIELDS', 1, 'a') == [1]
        call(c, 'RENAME', 'moved', 'renamed')
        call(c, 'SELECT', 1)
        call(c, 'SWAPDB', 0, 1)
        # db 1 now holds them all; bring one back to db 0 with MOVE.
        assert call(c, 'MOVE', 'swapped', 0) == 1
        assert wait_until(lambda: call(c, 'DBSIZE') == 1), call(c, 'KEYS', '*')
        assert call(c, 'KEYS', '*') == [b'part']
        call(c, 'SELECT', 0)
        assert wait_until(lambda: call(c, 'DBSIZE') == 0), call(c, 'KEYS', '*')
        call(c, 'SELECT', 1)
        assert call(c, 'HGETALL', 'part') == [b'keep', b'2']


@test
@xkv_only
def field_expiry_large_and_copies(t):
    with t.sut.client() as c:
        call(c, 'HSET', 'h', 'a', 1, 'b', 2)
        assert call(c, 'HEXPIREAT', 'h', FUTURE_S, 'FIELDS', 1, 'a') == [1]
        # Growing past the listpack threshold keeps the deadlines.
        c.call(*big_hash('h'))
        assert call(c, 'HEXPIRETIME', 'h', 'FIELDS', 2, 'a', 'b') == [FUTURE_S, -1]
        fields = ['f%d' % i for i in range(0, BIG, 2)]
        assert call(c, 'HPEXPIRE', 'h', 30, 'FIELDS', len(fields), *fields) == [1] * len(fields)
        assert call(c, 'COPY', 'h', 'h2') == 1
        assert call(c, 'HEXPIRETIME', 'h2', 'FIELDS', 1, 'a') == [FUTURE_S]
        time.sleep(0.08)
        # Active expiry reclaims them (HLEN counts fields until reclaimed).
        assert wait_until(lambda: call(c, 'HLEN', 'h') == BIG // 2 + 2), call(c, 'HLEN', 'h')
        assert wait_until(lambda: call(c, 'HLEN', 'h2') == BIG // 2 + 2), call(c, 'HLEN', 'h2')
        assert call(c, 'HGET', 'h', 'f0') is None
        assert call(c, 'HGET', 'h', 'f1') == b'v1'
        assert len(call(c, 'HKEYS', 'h2')) == BIG // 2 + 2
        seen, cursor = set(), b'0'
        while True:
            cursor, items = call(c, 'HSCAN', 'h', cursor, 'NOVALUES')
            seen.update(items)
            if cursor == b'0':
                break
        assert seen == {b'a', b'b'} | {b'f%d' % i for i in range(1, BIG, 2)}


@test
@xkv_only
def hscan_novalues(t):
    with t.sut.client() as c:
        call(c, 'HSET', 'h', 'a', 1, 'b', 2)
        assert call(c, 'HSCAN', 'h', 0, 'NOVALUES') == [b'0', [b'a', b'b']]
        assert call(c, 'HSCAN', 'h', 0, 'novalues', 'MATCH', 'b') == [b'0', [b'b']]
        assert call(c, 'HSCAN', 'h', 0, 'COUNT', 5, 'NOVALUES') == [b'0', [b'a', b'b']]
        assert call(c, 'HSCAN', 'nokey', 0, 'NOVALUES') == [b'0', []]


@test
@xkv_only
def hgetdel(t):
    with t.sut.client() as c:
        call(c, 'HSET', 'h', 'a', 1, 'b', 2, 'c', 3)
        assert call(c, 'HGETDEL', 'h', 'FIELDS', 3, 'a', 'nofield', 'a') == [b'1', None, None]
        assert call(c, 'HGETALL', 'h') == [b'b', b'2', b'c', b'3']
        assert call(c, 'HGETDEL', 'nokey', 'FIELDS', 2, 'a', 'b') == [None, None]
        assert call(c, 'HGETDEL', 'h', 'FIELDS', 2, 'b', 'c') == [b'2', b'3']
        assert call(c, 'EXISTS', 'h') == 0
        call(c, 'HSET', 'h', 'a', 1)
        assert err(c, 'HGETDEL', 'h', 'FIELD', 1, 'a') == \
            'ERR Mandatory argument FIELDS is missing or not at the right position'
        assert err(c, 'HGETDEL', 'h', 'FIELDS', 0, 'a') == \
            'ERR Number of fields must be a positive integer'
        assert err(c, 'HGETDEL', 'h', 'FIELDS', 'x', 'a') == \
            'ERR Number of fields must be a positive integer'
        assert err(c, 'HGETDEL', 'h', 'FIELDS', 2, 'a') == \
            'ERR The `numfields` parameter must match the number of arguments'
        assert err(c, 'HGETDEL', 'h', 'FIELDS', 1) == \
            "ERR wrong number of arguments for 'hgetdel' command"
        call(c, 'SET', 's', 'v')
        assert err(c, 'HGETDEL', 's', 'FIELDS', 1, 'a').startswith('WRONGTYPE')
    with t.sut.client(3) as c:
        assert c.cmd('HGETDEL', 'h', 'FIELDS', 2, 'a', 'z') == b'*2\r\n$1\r\n1\r\n_\r\n'


@test
@xkv_only
def hgetex(t):
    with t.sut.client() as c:
        call(c, 'HSET', 'h', 'a', 1, 'b', 2, 'c', 3)
        # Without an option it is HMGET.
        assert call(c, 'HGETEX', 'h', 'FIELDS', 2, 'a', 'nofield') == [b'1', None]
        assert call(c, 'HTTL', 'h', 'FIELDS', 1, 'a') == [-1]
        assert call(c, 'HGETEX', 'h', 'EX', 100, 'FIELDS', 2, 'a', 'nofield') == [b'1', None]
        assert call(c, 'HTTL', 'h', 'FIELDS', 2, 'a', 'nofield') == [100, -2]
        assert call(c, 'HGETEX', 'h', 'PX', 200000, 'FIELDS', 1, 'b') == [b'2']
        assert call(c, 'HTTL', 'h', 'FIELDS', 1, 'b') == [200]
        assert call(c, 'HGETEX', 'h', 'EXAT', FUTURE_S, 'FIELDS', 1, 'a') == [b'1']
        assert call(c, 'HEXPIRETIME', 'h', 'FIELDS', 1, 'a') == [FUTURE_S]
        assert call(c, 'HGETEX', 'h', 'PXAT', FUTURE_MS, 'FIELDS', 1, 'a') == [b'1']
        assert call(c, 'HPEXPIRETIME', 'h', 'FIELDS', 1, 'a') == [FUTURE_MS]
        assert call(c, 'HGETEX', 'h', 'PERSIST', 'FIELDS', 2, 'a', 'c') == [b'1', b'3']
        assert call(c, 'HTTL', 'h', 'FIELDS', 2, 'a', 'c') == [-1, -1]
        # A deadline already reached: the value is returned, the field deleted.
        assert call(c, 'HGETEX', 'h', 'EX', 0, 'FIELDS', 2, 'a', 'a') == [b'1', None]
        assert call(c, 'HGETEX', 'h', 'PXAT', 1, 'FIELDS', 2, 'b', 'c') == [b'2', b'3']
        assert call(c, 'EXISTS', 'h') == 0
        assert call(c, 'HGETEX', 'nokey', 'EX', 10, 'FIELDS', 2, 'a', 'b') == [None, None]
        assert call(c, 'EXISTS', 'nokey') == 0
        call(c, 'HSET', 'h', 'a', 1)
        assert err(c, 'HGETEX', 'h', 'EX', 'x', 'FIELDS', 1, 'a') == \
            'ERR value is not an integer or out of range'
        assert err(c, 'HGETEX', 'h', 'EX', -1, 'FIELDS', 1, 'a') == \
            'ERR invalid expire time, must be >= 0'
        assert err(c, 'HGETEX', 'h', 'EX', 70368744178, 'FIELDS', 1, 'a') == \
            "ERR invalid expire time in 'hgetex' command"
        assert err(c, 'HGETEX', 'h', 'KEEPTTL', 'FIELDS', 1, 'a') == \
            'ERR unknown argument: KEEPTTL'
        assert err(c, 'HGETEX', 'h', 'EX', 10, 'PERSIST', 'FIELDS', 1, 'a') == \
            'ERR Only one of EX, PX, EXAT, PXAT or PERSIST arguments can be specified'
        assert err(c, 'HGETEX', 'h', 'FIELDS', 0, 'a') == \
            'ERR invalid number of fields'
        assert err(c, 'HGETEX', 'h', 'PERSIST', 'FIELDS', 2, 'a') == \
            'ERR wrong number of arguments'
        call(c, 'SET', 's', 'v')
        assert err(c, 'HGETEX', 's', 'EX', 'x', 'FIELDS', 1, 'a').startswith('WRONGTYPE')
    with t.sut.client(3) as c:
        assert c.cmd('HGETEX', 'h', 'FIELDS', 2, 'a', 'z') == b'*2\r\n$1\r\n1\r\n_\r\n'


@test
@xkv_only
def hsetex(t):
    with t.sut.client() as c:
        assert call(c, 'HSETEX', 'h', 'FIELDS', 2, 'a', 1, 'b', 2) == 1
        assert call(c, 'HGETALL', 'h') == [b'a', b'1', b'b', b'2']
        assert call(c, 'HSETEX', 'h', 'EX', 100, 'FIELDS', 1, 'a', 'x') == 1
        assert call(c, 'HTTL', 'h', 'FIELDS', 2, 'a', 'b') == [100, -1]
        assert call(c, 'HSETEX', 'h', 'KEEPTTL', 'FIELDS', 1, 'a', 'y') == 1
        assert call(c, 'HTTL', 'h', 'FIELDS', 1, 'a') == [100]
        # Without KEEPTTL or a deadline a set clears the field's TTL.
        assert call(c, 'HSETEX', 'h', 'FIELDS', 1, 'a', 'z') == 1
        assert call(c, 'HTTL', 'h', 'FIELDS', 1, 'a') == [-1]
        # FNX: only if none exists; FXX: only if all exist.
        assert call(c, 'HSETEX', 'h', 'FNX', 'FIELDS', 2, 'new', 1, 'a', 2) == 0
        assert call(c, 'HSETEX', 'h', 'FNX', 'PX', 100000, 'FIELDS', 2, 'n1', 1, 'n2', 2) == 1
        assert call(c, 'HTTL', 'h', 'FIELDS', 2, 'n1', 'n2') == [100, 100]
        assert call(c, 'HSETEX', 'h', 'FXX', 'FIELDS', 2, 'a', 1, 'nofield', 2) == 0
        assert call(c, 'HEXISTS', 'h', 'nofield') == 0
        assert call(c, 'HSETEX', 'h', 'EXAT', FUTURE_S, 'FXX', 'FIELDS', 2, 'a', 5, 'b', 6) == 1
        assert call(c, 'HEXPIRETIME', 'h', 'FIELDS', 2, 'a', 'b') == [FUTURE_S, FUTURE_S]
        assert call(c, 'HSETEX', 'h', 'PXAT', FUTURE_MS, 'FIELDS', 1, 'a', 7) == 1
        assert call(c, 'HPEXPIRETIME', 'h', 'FIELDS', 1, 'a') == [FUTURE_MS]
        assert call(c, 'HMGET', 'h', 'a', 'b') == [b'7', b'6']
        assert call(c, 'HSETEX', 'nokey', 'FXX', 'FIELDS', 1, 'a', 1) == 0
        assert call(c, 'EXISTS', 'nokey') == 0
        assert call(c, 'HSETEX', 'nokey', 'FNX', 'EX', 10, 'FIELDS', 1, 'a', 1) == 1
        assert call(c, 'HTTL', 'nokey', 'FIELDS', 1, 'a') == [10]
        # A deadline already reached sets and deletes: the key may go.
        assert call(c, 'HSETEX', 'nokey', 'PX', 0, 'FIELDS', 1, 'a', 1) == 1
        assert call(c, 'EXISTS', 'nokey') == 0
        assert call(c, 'HSETEX', 'h', 'EXAT', 1, 'FIELDS', 1, 'a', 1) == 1
        assert call(c, 'HEXISTS', 'h', 'a') == 0
        errors = [
            (('EX', 1, 'PX', 1), 'ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be '
                                 'specified'),
            (('KEEPTTL', 'EXAT', 1), 'ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments '
                                     'can be specified'),
            (('FNX', 'FXX'), 'ERR Only one of FXX or FNX arguments can be specified'),
            (('FNX', 'FNX'), 'ERR Only one of FXX or FNX arguments can be specified'),
            (('BAD',), 'ERR unknown argument: BAD'),
            (('EX', 'x'), 'ERR value is not an integer or out of range'),
            (('EX', -1), 'ERR invalid expire time, must be >= 0'),
            (('PX', 70368744177664), "ERR invalid expire time in 'hsetex' command"),
        ]
        for opts, msg in errors:
            assert err(c, 'HSETEX', 'h', *opts, 'FIELDS', 1, 'a', 1) == msg, (opts, msg)
        assert err(c, 'HSETEX', 'h', 'FIELDS', 0, 'a', 1) == 'ERR invalid number of fields'
        assert err(c, 'HSETEX', 'h', 'FIELDS', 'x', 'a', 1) == 'ERR invalid number of fields'
        assert err(c, 'HSETEX', 'h', 'FIELDS', 2, 'a', 1) == \
            'ERR wrong number of arguments'
        assert err(c, 'HSETEX', 'h', 'FIELDS', 1, 'a', 1, 'b') == \
            'ERR unknown argument: b'
        assert err(c, 'HSETEX', 'h', 'EX', 10, 'FIELDS', 1) == \
            'ERR wrong number of arguments'
        assert err(c, 'HSETEX', 'h', 'FNX', 'EX', 10, 'KEEPTTL') == \
            'ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified'
        assert err(c, 'HSETEX', 'h', 'FNX', 'FIELDS', 1, 'a') == \
            'ERR wrong number of arguments'
        call(c, 'SET', 's', 'v')
        assert err(c, 'HSETEX', 's', 'FIELDS', 1, 'a', 1).startswith('WRONGTYPE')
        # Argument errors come before the type check, as in Redis.
        assert err(c, 'HSETEX', 's', 'BAD', 'FIELDS', 1, 'a', 1) == 'ERR unknown argument: BAD'


@test
@xkv_only
def field_expiry_arguments_in_any_order_as_redis_88(t):
    """HSETEX, HGETEX and HEXPIRE take their FIELDS block anywhere among the
    options, with Redis 8.8's errors."""
    err = RespError
    with t.sut.client() as c:
        for cmd, want in [
            (('HSETEX', 'h', 'FIELDS', 1, 'a', 1, 'EX', 100), 1),
            (('HSETEX', 'h', 'FIELDS', 1, 'a', 2, 'KEEPTTL', 'FXX'), 1),
            (('HGETEX', 'h', 'FIELDS', 1, 'a', 'PERSIST'), [b'2']),
            (('HEXPIRE', 'h', 100, 'FIELDS', 1, 'a', 'NX'), [1]),
            (('HEXPIRE', 'h', 100, 'FIELDS', 1, 'a', 'NX', 'XX'),
             err('ERR Multiple condition flags specified')),
            (('HSETEX', 'h', 'FIELDS', 1, 'a', 1, 'FIELDS', 1, 'b', 2),
             err('ERR FIELDS keyword specified multiple times')),
            (('HSETEX', 'h', 'FIELDS', 2, 'a', 1), err('ERR wrong number of arguments')),
            (('HSETEX', 'h', 'FIELDS', 1, 'a', 1, 'b'), err('ERR unknown argument: b')),
            (('HSETEX', 'h', 'EX', 10, 'FNX', 'FXX'),
             err('ERR Only one of FXX or FNX arguments can be specified')),
            (('HSETEX', 'h', 'KEEPTTL', 'FNX', 'x', 'y'), err('ERR unknown argument: x')),
            (('HGETEX', 'h', 'PERSIST', 'PERSIST', 'x'),
             err('ERR Only one of EX, PX, EXAT, PXAT or PERSIST arguments can be specified')),
            (('HGETEX', 'h', 'FIELDS', 2, 'a'), err('ERR wrong number of arguments')),
            (('HGETEX', 'h', 'FIELDS', 0, 'a'), err('ERR invalid number of fields')),
            (('HGETEX', 'h', 'PERSIST', 'EX', 10, 'FIELDS', 1, 'a'),
             err('ERR Only one of EX, PX, EXAT, PXAT or PERSIST arguments can be specified')),
            (('HEXPIRE', 'h', 100, 'NX', 'FIELDS', 1),
             err('ERR FIELDS requires at least numfields and one field argument')),
            (('HEXPIRE', 'h', 100, 'NX', 'XX', 'GT'), err('ERR missing FIELDS argument')),
            (('HGETEX', 'h', 'FIELDS', 1, 'a', 'PXAT', 1), [b'2']),
            (('EXISTS', 'h'), 0),
        ]:
            got = c.call(*cmd)
            assert got == want, (cmd, got, want)


@test
@xkv_only
def listpackex_encoding_as_redis_88(t):
    """A listpack hash that field expiry touched is "listpackex" for good."""
    with t.sut.client() as c:
        for cmd, want in [
            (('HSET', 'h', 'a', 1), 1), (('OBJECT', 'ENCODING', 'h'), b'listpack'),
            (('HEXPIRE', 'h', 100, 'FIELDS', 1, 'nosuch'), [-2]),
            (('OBJECT', 'ENCODING', 'h'), b'listpackex'),
            (('HSET', 'h2', 'a', 1), 1), (('HGETEX', 'h2', 'PERSIST', 'FIELDS', 1, 'a'), [b'1']),
            (('OBJECT', 'ENCODING', 'h2'), b'listpackex'),
            (('HSET', 'h3', 'a', 1), 1), (('HGETEX', 'h3', 'FIELDS', 1, 'a'), [b'1']),
            (('OBJECT', 'ENCODING', 'h3'), b'listpack'),
            (('HSETEX', 'h4', 'EX', 100, 'FIELDS', 1, 'a', 1), 1),
            (('HPERSIST', 'h4', 'FIELDS', 1, 'a'), [1]), (('OBJECT', 'ENCODING', 'h4'), b'listpackex'),
            (('COPY', 'h4', 'h5'), 1), (('OBJECT', 'ENCODING', 'h5'), b'listpackex'),
            (('DEL', 'h', 'h2', 'h3', 'h4', 'h5'), 5),
        ]:
            got = c.call(*cmd)
            assert got == want, (cmd, got, want)


@test
@xkv_only
def hrandfield_negative_count_is_uniform(t):
    # hash.tcl's chi-square check on a hashtable-encoded hash: picks with
    # repeats must be uniform (a random non-empty bucket was not: fields after
    # runs of empty buckets came up far more often). 10 fields, 20,000 picks:
    # chi-square above 60 (9 degrees of freedom) has odds below 1e-9.
    with t.sut.client() as c:
        c.call('CONFIG', 'SET', 'hash-max-listpack-value', 10)
        try:
            c.call('HSET', 'h', *[x for i in range(10) for x in ('f%d' % i, 'v' * (20 * (i == 9)))])
            assert c.call('OBJECT', 'ENCODING', 'h') == b'hashtable'
            counts = {}
            for _ in range(20):
                for f in c.call('HRANDFIELD', 'h', -1000):
                    counts[f] = counts.get(f, 0) + 1
            assert len(counts) == 10, counts
            expected = 20000 / 10
            chi = sum((n - expected) ** 2 / expected for n in counts.values())
            assert chi < 60, (chi, counts)
        finally:
            c.call('CONFIG', 'SET', 'hash-max-listpack-value', 64)
            c.call('FLUSHALL')
