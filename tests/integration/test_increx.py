# SPDX-License-Identifier: GPL-2.0-only
"""INCREX (Redis 8.8), which the 7.0 reference lacks: each reply below was
recorded from redis-server 8.8.0 running the same sequence, and TTLs, the
expiry of a past deadline and RESP3's doubles are checked against what 8.8
does. Bounds, SATURATE, overflow at the long long limits, floats, every
expiration option with ENX and PERSIST, and the errors."""

from harness import test, xkv_only

CASES = [
    (('INCREX', 'n'), b'*2\r\n:1\r\n:1\r\n'),
    (('INCREX', 'n'), b'*2\r\n:2\r\n:1\r\n'),
    (('INCREX', 'n', 'BYINT', '10'), b'*2\r\n:12\r\n:10\r\n'),
    (('INCREX', 'n', 'BYINT', '-100', 'LBOUND', '-50'), b'*2\r\n:12\r\n:0\r\n'),
    (('INCREX', 'n', 'BYINT', '-100', 'LBOUND', '-50', 'SATURATE'), b'*2\r\n:-50\r\n:-62\r\n'),
    (('INCREX', 'n', 'BYINT', '100', 'UBOUND', '20', 'SATURATE'), b'*2\r\n:20\r\n:70\r\n'),
    (('GET', 'n'), b'$2\r\n20\r\n'),
    (('INCREX', 'f', 'BYFLOAT', '1.5'), b'*2\r\n$3\r\n1.5\r\n$3\r\n1.5\r\n'),
    (('INCREX', 'f', 'BYFLOAT', '0.1'), b'*2\r\n$3\r\n1.6\r\n$3\r\n0.1\r\n'),
    (('INCREX', 'f', 'BYFLOAT', '10', 'UBOUND', '5', 'SATURATE'), b'*2\r\n$1\r\n5\r\n$3\r\n3.4\r\n'),
    (('INCREX', 'f', 'BYFLOAT', '10', 'UBOUND', '5'), b'*2\r\n$1\r\n5\r\n$1\r\n0\r\n'),
    (('INCREX', 'f', 'BYFLOAT', 'inf'), b'-ERR BYFLOAT increment cannot be Infinity\r\n'),
    (('INCREX', 'f', 'BYFLOAT', 'abc'), b'-ERR Increment is not a valid float\r\n'),
    (('INCREX', 'f', 'BYINT', '1'), b'*2\r\n:6\r\n:1\r\n'),
    (('INCREX', 'n', 'BYINT', '1', 'BYFLOAT', '2'), b'-ERR syntax error\r\n'),
    (('INCREX', 'n', 'BYINT', 'x'), b'-ERR Increment is not an integer or out of range\r\n'),
    (('INCREX', 'n', 'LBOUND', '5', 'UBOUND', '1'), b"-ERR LBOUND can't be greater than UBOUND\r\n"),
    (('INCREX', 'n', 'LBOUND', 'x'), b'-ERR LBOUND is not an integer or out of range\r\n'),
    (('INCREX', 'f', 'BYFLOAT', '1', 'LBOUND', 'x'), b'-ERR LBOUND is not a valid float\r\n'),
    (('INCREX', 'n', 'ENX'), b'-ERR ENX flag requires an expiration\r\n'),
    (('INCREX', 'n', 'PERSIST', 'ENX'), b'-ERR syntax error\r\n'),
    (('INCREX', 'n', 'EX', '100', 'PX', '100'), b'-ERR syntax error\r\n'),
    (('INCREX', 'n', 'EX', '0'), b"-ERR invalid expire time in 'increx' command\r\n"),
    (('INCREX', 'n', 'EX', '100'), b'*2\r\n:21\r\n:1\r\n'),
    (('INCREX', 'n', 'EX', '5000', 'ENX'), b'*2\r\n:22\r\n:1\r\n'),
    (('INCREX', 'n', 'PERSIST'), b'*2\r\n:23\r\n:1\r\n'),
    (('INCREX', 'big', 'BYINT', '9223372036854775807'), b'*2\r\n:9223372036854775807\r\n:9223372036854775807\r\n'),
    (('INCREX', 'big'), b'*2\r\n:9223372036854775807\r\n:0\r\n'),
    (('INCREX', 'big', 'SATURATE'), b'*2\r\n:9223372036854775807\r\n:0\r\n'),
    (('INCREX', 'neg', 'BYINT', '-9223372036854775808'), b'*2\r\n:-9223372036854775808\r\n:-9223372036854775808\r\n'),
    (('INCREX', 'neg', 'BYINT', '9223372036854775807', 'SATURATE', 'LBOUND', '0'), b'-ERR applied increment would overflow\r\n'),
    (('INCREX', 'neg', 'UBOUND', '5', 'SATURATE', 'BYINT', '9223372036854775807'), b'*2\r\n:-1\r\n:9223372036854775807\r\n'),
    (('SET', 's', 'hello'), b'+OK\r\n'),
    (('INCREX', 's'), b'-ERR value is not an integer or out of range\r\n'),
    (('INCREX', 's', 'BYFLOAT', '1'), b'-ERR value is not a valid float\r\n'),
    (('RPUSH', 'l', 'a'), b':1\r\n'),
    (('INCREX', 'l'), b'-WRONGTYPE Operation against a key holding the wrong kind of value\r\n'),
    (('INCREX', 'gone', 'EXAT', '1', 'BYINT', '5'), b'*2\r\n:5\r\n:5\r\n'),
    (('SET', 'old', '5'), b'+OK\r\n'),
    (('INCREX', 'old', 'PXAT', '1'), b'*2\r\n:6\r\n:1\r\n'),
    (('INCREX', 'foo', 'bar'), b'-ERR syntax error\r\n'),
    (('OBJECT', 'ENCODING', 'n'), b'$3\r\nint\r\n'),
    (('OBJECT', 'ENCODING', 'f'), b'$3\r\nint\r\n'),
]


@test
@xkv_only
def recorded_sequence(t):
    with t.sut.client() as c:
        for args, want in CASES:
            got = c.cmd(*args)
            assert got == want, '%s: %r, Redis 8.8 %r' % (' '.join(args), got, want)


@test
@xkv_only
def deadlines(t):
    with t.sut.client() as c:
        c.call('INCREX', 'k', 'EX', 100)
        assert 99 <= c.call('TTL', 'k') <= 100
        c.call('INCREX', 'k', 'EX', 5000, 'ENX')        # has a deadline: kept
        assert c.call('TTL', 'k') <= 100
        c.call('INCREX', 'k')                            # no option: kept
        assert c.call('TTL', 'k') > 0
        c.call('INCREX', 'k', 'PERSIST')
        assert c.call('TTL', 'k') == -1
        c.call('INCREX', 'k', 'PX', 5000, 'ENX')         # none: set
        assert 4000 < c.call('PTTL', 'k') <= 5000
        assert c.call('INCREX', 'gone', 'EXAT', 1, 'BYINT', 5) == [5, 5]
        assert c.call('EXISTS', 'gone') == 0             # a past deadline deletes
        c.call('SET', 'old', 5)
        c.call('INCREX', 'old', 'PXAT', 1)
        assert c.call('EXISTS', 'old') == 0


@test
@xkv_only
def resp3_doubles(t):
    with t.sut.client(proto=3) as c:
        assert c.cmd('INCREX', 'f', 'BYFLOAT', '2.25') == b'*2\r\n,2.25\r\n,2.25\r\n'
        assert c.cmd('INCREX', 'i', 'BYINT', 2) == b'*2\r\n:2\r\n:2\r\n'
