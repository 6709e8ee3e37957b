# SPDX-License-Identifier: GPL-2.0-only
"""Wire protocol: RESP3 replies, inline commands, big pipelines, big values,
requests split across many writes."""

import random
import threading

from harness import Redis8, Raw, decode, encode, test


@test
def resp3_replies(t):
    t.compare([
        ('TTL', 'nokey'), ('SET', 'k', 'v'), ('TTL', 'k'), ('GET', 'k'), ('GET', 'nokey'),
        ('SCAN', 0), ('SCAN', 0, 'MATCH', 'x*'), ('KEYS', 'k'), ('RANDOMKEY',),   # one key: fixed order
        ('CONFIG', 'GET', 'timeout'), ('CONFIG', 'GET', 'nosuch'),
        ('SET', 'f', '1.5'), ('INCRBYFLOAT', 'f', '1.5'), ('INCRBYFLOAT', 'f', 'abc'),
        ('MGET', 'k', 'nokey', 'nokey2'), ('EXISTS', 'k', 'nokey', 'k'), ('CLIENT', 'GETNAME'),
        ('SET', 'k', 'v2', 'GET'), ('SET', 'k', 'v', 'NX'), ('GETEX', 'nokey'), ('GETDEL', 'nokey'),
        ('TYPE', 'k'),
        ('COMMAND', 'GETKEYS', 'MSET', 'a', 1), ('COMMAND', 'INFO', 'nosuch'), ('COMMAND', 'DOCS', 'nosuch'),
        ('INCR', 'n'), ('PING',), ('PING', 'x'), ('ECHO', 'x'), ('DBSIZE',), ('HELLO', 4),
        # Redis 8 words an unknown command without arguments shorter.
        Redis8(b"-ERR unknown command 'foo'\r\n", 'foo'),
        ('RESET',), ('GET', 'nokey'),          # RESET returns to RESP2
    ], proto=3)


@test
def resp3_shapes(t):
    def shapes(srv):
        with srv.client(proto=3) as c:
            docs = c.cmd('COMMAND', 'DOCS', 'get')
            d = decode(docs)
            info = c.cmd('COMMAND', 'INFO', 'get')
            texts = [c.cmd(*a) for a in [('INFO', 'server'), ('CLIENT', 'INFO'), ('CLIENT', 'LIST')]]
            return (docs[:len(b'%1\r\n$3\r\nget\r\n%')], list(d),
                    {b'summary', b'since', b'group'} <= set(d[b'get']),
                    # In RESP3, COMMAND INFO flags are a set; INFO and CLIENT
                    # INFO/LIST are verbatim text.
                    info[:info.index(b':1\r\n')],
                    [x[:1] + x[x.index(b'\r\n') + 2:][:4] for x in texts],
                    c.cmd('CONFIG', 'GET', '*max*')[:1], c.cmd('TIME')[:4])
    got = t.same(shapes, 'RESP3 reply shapes')
    assert got == (b'%1\r\n$3\r\nget\r\n%', [b'get'], True,
                   b'*1\r\n*10\r\n$3\r\nget\r\n:2\r\n~2\r\n+readonly\r\n+fast\r\n',
                   [b'=txt:'] * 3, b'%', b'*2\r\n'), got


@test
def inline_commands(t):
    t.compare([
        Raw(b'PING\r\n'), Raw(b'ping\n'), Raw(b'PING hello\r\n'), Raw(b'SET a b\r\n'),
        Raw(b'GET a\r\n'), Raw(b'SET "a b" "c d"\r\n'), Raw(b'GET "a b"\r\n'),
        Raw(b"SET 'x y' '\\x41\\'q'\r\n"), Raw(b'GET "x y"\r\n'),
        Raw(b'ECHO "\\x41\\n\\t\\r\\b\\a\\\\\\"q"\r\n'), Raw(b'ECHO "\\xZZ\\q"\r\n'),
        Raw(b'\r\n\r\n\n PING\r\n'), Raw(b'  PING  \r\n'), Raw(b'SET\tk\tv\r\nGET k\r\nDEL k\r\n', 3),
        Raw(b'MGET a "a b" nokey\r\n'), Raw(b'ECHO ""\r\n'), Raw(b"ECHO ''\r\n"),
        Raw(b'GET\r\n'), Raw(b'foo bar\r\n'), Raw(b'ECHO "a"\r\n'),
        Raw(b'PING\r\n*1\r\n$4\r\nPING\r\nPING\r\n', 3),       # inline and multibulk mixed
        Raw(b'SET k\x80\xff v\r\nGET k\x80\xff\r\n', 2),
    ])


def expected_pipeline(n):
    cmds, replies = [], []
    for i in range(n):
        if i % 3 == 0:
            cmds.append(encode(('INCR', 'ctr')))
            replies.append(b':%d\r\n' % (i // 3 + 1))
        elif i % 3 == 1:
            cmds.append(encode(('SET', 'k%d' % i, 'v%d' % i)))
            replies.append(b'+OK\r\n')
        else:
            cmds.append(encode(('GET', 'k%d' % (i - 1))))
            v = b'v%d' % (i - 1)
            replies.append(b'$%d\r\n%s\r\n' % (len(v), v))
    return b''.join(cmds), replies


@test
def pipeline_10000(t):
    data, want = expected_pipeline(10000)
    with t.sut.client() as c:
        # Send from a thread: a server that stops reading while its replies
        # are unread must not deadlock the test.
        sender = threading.Thread(target=c.send_raw, args=(data,))
        sender.start()
        got = [c.read_reply() for _ in want]
        sender.join()
        bad = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)
        assert bad is None, 'reply %d: got %r, want %r' % (bad, got[bad], want[bad])
        assert c.cmd('PING') == b'+PONG\r\n'


@test
def pipeline_inline_10000(t):
    with t.sut.client() as c:
        sender = threading.Thread(target=c.send_raw, args=(b'PING\r\n' * 5000 + b'INCR n\r\n' * 5000,))
        sender.start()
        got = c.read_replies(10000)
        sender.join()
        assert got == b'+PONG\r\n' * 5000 + b''.join(b':%d\r\n' % i for i in range(1, 5001))


@test
def many_arguments(t):
    keys = ['key:%d' % i for i in range(10000)]
    t.compare([('MSET',) + tuple(x for k in keys for x in (k, k + ':v')),
               ('MGET',) + tuple(keys) + ('nokey',), ('DEL',) + tuple(keys[:5000]), ('DBSIZE',),
               ('EXISTS',) + tuple(keys)])


@test
def value_10mb(t):
    value = random.Random(7).randbytes(10 * 1024 * 1024)   # includes \r\n and \0 bytes
    with t.sut.client(timeout=30) as c:
        assert c.cmd('SET', 'big', value) == b'+OK\r\n'
        assert c.cmd('GET', 'big') == b'$%d\r\n%s\r\n' % (len(value), value), 'GET big differs'
        assert c.call('STRLEN', 'big') == len(value)
        assert c.call('GETRANGE', 'big', -5, -1) == value[-5:]
        assert c.call('APPEND', 'big', 'tail') == len(value) + 4
        assert c.call('GETRANGE', 'big', len(value) - 2, -1) == value[-2:] + b'tail'
        assert c.cmd('PING') == b'+PONG\r\n'


@test
def split_writes(t):
    value = bytes(range(256)) * 12                          # 3 KB with \r, \n and \0
    sizes = [1, 2, 3, 5, 7, 11]
    with t.sut.client() as c:
        data = encode(('SET', 'split', value)) + encode(('ECHO', 'x' * 100)) + b'PING\r\n'
        pos = i = 0
        while pos < len(data):
            n = sizes[i % len(sizes)]
            c.send_raw(data[pos:pos + n])
            pos, i = pos + n, i + 1
        assert c.read_replies(3) == b'+OK\r\n$100\r\n' + b'x' * 100 + b'\r\n+PONG\r\n'
        assert c.call('GET', 'split') == value
        for byte in encode(('GET', 'split')):               # one byte per write
            c.send_raw(bytes([byte]))
        assert c.read_reply() == b'$%d\r\n%s\r\n' % (len(value), value)


@test
def pipelined_gets(t):
    # One write of many GETs: the daemon warms the cache for a batch of GETs
    # before running it (client.c), which must not change any reply.
    def get(k, name=b'GET'):
        return b'*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n' % (len(name), name, len(k), k)
    batch = b''.join([get(b'a'), get(b'b', b'get'), get(b'nokey'), get(b'n', b'gEt'),
                      get(b'l'), get(b''), get(b'k\x00\r\nx'),
                      b'*3\r\n$3\r\nGET\r\n$1\r\na\r\n$1\r\nb\r\n',
                      b'*3\r\n$3\r\nSET\r\n$1\r\na\r\n$2\r\na2\r\n', get(b'a'),
                      b'*2\r\n$3\r\nDEL\r\n$1\r\nb\r\n', get(b'b')] + [get(b'k%d' % i)
                                                                     for i in range(20)])
    t.compare([('SET', 'a', 'x' * 300), ('SET', 'b', 'short'), ('SET', 'n', 12345),
               ('RPUSH', 'l', 'v'), ('SET', b'k\x00\r\nx', 'bin'), ('SET', 'k3', 'v3'),
               ('SET', 'k17', 'v17'), Raw(batch, 32)])
