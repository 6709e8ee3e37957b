# SPDX-License-Identifier: GPL-2.0-only
"""Hostile and malformed input. Each form goes to redis and to the server
under test on a fresh connection; what comes back (bytes, and whether the
connection was closed) must be identical, and a second client on the same
server must keep being served. Also runs against AddressSanitizer builds."""

import random
import socket
import struct

from harness import encode, test

ERR = b'-ERR Protocol error: '
CLOSED, OPEN = True, False
GARBAGE = random.Random(42).randbytes(65537)
assert GARBAGE[:1] not in b'*\r\n'

# (test name, bytes sent, expected (reply, closed) or None to only compare)
FORMS = [
    ('invalid_multibulk_length', b'*abc\r\n', (ERR + b'invalid multibulk length\r\n', CLOSED)),
    ('invalid_bulk_length', b'*1\r\n$abc\r\n', (ERR + b'invalid bulk length\r\n', CLOSED)),
    ('expected_dollar', b'*1\r\nfoo\r\n', (ERR + b"expected '$', got 'f'\r\n", CLOSED)),
    ('expected_dollar_mid_command', b'*2\r\n$3\r\nGET\r\n*1\r\n',
     (ERR + b"expected '$', got '*'\r\n", CLOSED)),
    # proto-max-bulk-len is 512 MiB.
    ('bulk_over_proto_max_bulk_len', b'*1\r\n$600000000\r\n', (ERR + b'invalid bulk length\r\n', CLOSED)),
    ('bulk_length_negative', b'*1\r\n$-1\r\n', (ERR + b'invalid bulk length\r\n', CLOSED)),
    ('bulk_length_plus_sign', b'*1\r\n$+3\r\n', (ERR + b'invalid bulk length\r\n', CLOSED)),
    ('multibulk_leading_zero', b'*01\r\n', (ERR + b'invalid multibulk length\r\n', CLOSED)),
    ('multibulk_over_int_max', b'*3000000000\r\n', (ERR + b'invalid multibulk length\r\n', CLOSED)),
    # Redis 7.0.15 accepts counts up to INT_MAX and waits for the arguments
    # (it preallocates at most 1024 argv slots): no reply, no close.
    ('multibulk_2e9_waits', b'*2000000000\r\n', (b'', OPEN)),
    ('empty_multibulks_ignored', b'*0\r\n*-1\r\n*-10\r\nPING\r\n', (b'+PONG\r\n', OPEN)),
    # Redis skips the two bytes after bulk data without checking they are CRLF.
    ('missing_crlf_after_bulk', b'*1\r\n$4\r\nPINGXX', (b'+PONG\r\n', OPEN)),
    ('error_after_valid_command', b'*1\r\n$4\r\nPING\r\n*abc\r\n',
     (b'+PONG\r\n' + ERR + b'invalid multibulk length\r\n', CLOSED)),
    ('unbalanced_double_quote', b'SET "a b\r\n', (ERR + b'unbalanced quotes in request\r\n', CLOSED)),
    ('unbalanced_single_quote', b"SET 'a\r\n", (ERR + b'unbalanced quotes in request\r\n', CLOSED)),
    ('quote_not_followed_by_space', b'SET "a"b c\r\n',
     (ERR + b'unbalanced quotes in request\r\n', CLOSED)),
    # Inline requests may be 64 KiB without a newline; one byte more is an error.
    ('inline_64k_no_newline_waits', b'a' * 65536, (b'', OPEN)),
    ('too_big_inline_request', b'a' * 65537, (ERR + b'too big inline request\r\n', CLOSED)),
    ('too_big_mbulk_count_string', b'*' + b'1' * 65536, (ERR + b'too big mbulk count string\r\n', CLOSED)),
    ('too_big_bulk_count_string', b'*1\r\n$' + b'1' * 65536,
     (ERR + b'too big bulk count string\r\n', CLOSED)),
    ('binary_inline_line', b'\x80\xff\xfe garbage\r\n',
     (b"-ERR unknown command '\x80\xff\xfe', with args beginning with: 'garbage' \r\n", OPEN)),
    ('binary_multibulk_length', b'*\x80\xff\xfe\r\n', (ERR + b'invalid multibulk length\r\n', CLOSED)),
    # Redis finds line ends with strchr(), so a NUL hides any later newline:
    # such a request just accumulates until the 64 KiB inline limit.
    ('nul_hides_inline_newline', b'EC\x00HO a\r\n', (b'', OPEN)),
    ('random_garbage_64k', GARBAGE, (ERR + b'too big inline request\r\n', CLOSED)),
    ('random_garbage_after_multibulk', b'*3\r\n' + GARBAGE[:4096], None),
]


def probe(srv, data, first):
    """Send data on a fresh connection: (bytes received, connection closed)."""
    with srv.client() as c:
        c.send_raw(data)
        return c.read_available(first=first)


def check_form(t, data, expected):
    with t.ref.client() as wr, t.sut.client() as ws:     # bystanders on the same servers
        assert wr.cmd('PING') == ws.cmd('PING') == b'+PONG\r\n'
        ref = probe(t.ref, data, first=0.5)
        sut = probe(t.sut, data, first=5.0 if ref[0] else 0.5)
        assert ref == sut, 'sent %r\n  redis: %r\n  %s: %r' % (data[:80], ref, t.sut.label, sut)
        if expected is not None:
            assert ref == expected, 'redis itself answered %r' % (ref,)
        assert ws.cmd('PING') == b'+PONG\r\n', 'bystander not served after %r' % data[:80]


def _register(name, data, expected):
    def fn(t):
        check_form(t, data, expected)
    fn.__name__ = name
    test(fn)


for _name, _data, _expected in FORMS:
    _register(_name, _data, _expected)


@test
def half_command_then_disconnect(t):
    for srv in (t.ref, t.sut):
        with srv.client() as bystander:
            for cut in (5, 20, 29):
                with srv.client() as c:
                    c.send_raw(encode(('SET', 'half', 'value'))[:cut])
                assert bystander.cmd('PING') == b'+PONG\r\n'
            assert bystander.cmd('EXISTS', 'half') == b':0\r\n'


@test
def reset_mid_request(t):
    # SO_LINGER 0 makes close() send RST instead of FIN.
    with t.sut.client() as bystander:
        for payload in (b'*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000\r\nxx', b'PING\r\n' * 1000):
            c = t.sut.client()
            c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
            c.send_raw(payload)
            c.close()
            assert bystander.cmd('PING') == b'+PONG\r\n'


@test
def flood_then_close_without_reading(t):
    # The server must cope with peers that vanish while replies are queued.
    with t.sut.client() as bystander:
        for _ in range(5):
            c = t.sut.client()
            c.send_raw(encode(('SET', 'k', 'x' * 100000)) + encode(('GET', 'k')) * 200)
            c.close()
        assert bystander.cmd('PING') == b'+PONG\r\n'
        assert bystander.cmd('SET', 'k', 'v') == b'+OK\r\n'


@test
def many_short_connections(t):
    with t.sut.client() as bystander:
        for i in range(200):
            c = t.sut.client()
            if i % 2:
                c.send_raw(b'PING\r\n')
            c.close()
        assert bystander.cmd('PING') == b'+PONG\r\n'
        with t.sut.client() as c:
            assert c.cmd('PING') == b'+PONG\r\n'


@test
def info_sections_under_the_sanitizer(t):
    """Every INFO section, directly and from a script, in the tier that runs
    under AddressSanitizer: INFO memory once read a config value after
    config_get() had freed it."""
    with t.sut.client() as c:
        for section in ('memory', 'everything', 'persistence', 'server'):
            text = c.call('INFO', section)
            assert b'# ' in text, text[:80]
        assert c.call('EVAL', "return type(redis.call('info', 'memory'))", 0) == b'string'
        assert b'maxmemory_policy:noeviction' in c.call('INFO', 'memory')


@test
def tracking_clients_vanishing(t):
    """Tracking clients and redirections that close while invalidations for
    them are on their way (to their own worker or another), in the tier that
    runs under AddressSanitizer: nothing is written to a freed client."""
    srv = t.sut
    keys = ['tk%d' % i for i in range(40)]
    with srv.client() as w:
        subs, trackers = [], []
        for i in range(4):
            s = srv.client()
            rid = int(s.cmd('CLIENT', 'ID')[1:-2])
            s.cmd('SUBSCRIBE', '__redis__:invalidate')
            subs.append((s, rid))
        for i in range(16):
            c = srv.client(3 if i % 2 else 2)
            if i % 4 == 0:
                c.cmd('CLIENT', 'TRACKING', 'on', 'BCAST', 'PREFIX', 'tk%d' % (i % 10))
            else:
                c.cmd('CLIENT', 'TRACKING', 'on', 'REDIRECT', subs[i % 4][1])
            c.cmd('MGET', *keys)
            trackers.append(c)
        # Half the redirections and trackers go without reading anything.
        for s, _ in subs[:2]:
            s.close()
        for c in trackers[::2]:
            c.close()
        for round_ in range(3):
            assert w.cmd('MSET', *[x for k in keys for x in (k, round_)]) == b'+OK\r\n'
            for c in trackers[1::2]:
                c.cmd('MGET', *keys)
        assert w.cmd('CONFIG', 'SET', 'tracking-table-max-keys', '5') == b'+OK\r\n'
        assert w.cmd('FLUSHALL') == b'+OK\r\n'
        for c in trackers[1::2]:
            c.close()
        for s, _ in subs[2:]:
            s.close()
        assert w.cmd('CONFIG', 'SET', 'tracking-table-max-keys', '1000000') == b'+OK\r\n'
        assert w.cmd('PING') == b'+PONG\r\n'
        assert b'tracking_clients:' in w.call('INFO', 'clients')
