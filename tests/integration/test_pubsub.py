# SPDX-License-Identifier: GPL-2.0-only
"""Pub/sub: (P|S)SUBSCRIBE (P|S)UNSUBSCRIBE (S)PUBLISH PUBSUB, the RESP2
subscribed mode, delivery across workers in order, and the pubsub class of
client-output-buffer-limit."""

import socket
import threading
import time

from harness import HOST, Raw, decode, encode, info_fields, test, wait_until, xkv_only


def many(n, *args):
    """A compare step: one command that answers with n replies."""
    return Raw(encode(args), n)


class PublishToSelf:
    """A compare step: PUBLISH by a client subscribed to the channel. In RESP3
    it gets its reply and its own message: Redis 8.8 sends the message after
    the reply (7.0, the reference here, before it), so the reference's two
    are put in 8.8's order."""

    def __init__(self, proto, *args):
        self.proto, self.args = proto, args

    def run(self, c):
        c.send(*self.args)
        if self.proto != 3:
            return c.read_reply()
        first, second = c.read_reply(), c.read_reply()
        return second + first if c.kind == 'redis' else first + second

    def __repr__(self):
        return ' '.join(self.args) + ' (to itself, as Redis 8.8)'


def sub(c, *args):
    """A (un)subscribe with one confirmation per argument; their bytes."""
    c.send(*args)
    return c.read_replies(len(args) - 1)


SUBSCRIBED_MODE = [
    ('SUBSCRIBE',),                                   # arity error, not subscribed yet
    ('UNSUBSCRIBE',), ('PUNSUBSCRIBE',), ('SUNSUBSCRIBE',),   # nothing: a null name
    many(3, 'SUBSCRIBE', 'a', 'b', 'a'),
    ('PSUBSCRIBE', 'p*'),
    many(2, 'SSUBSCRIBE', 's1', 's2'),
    ('PING',), ('PING', 'hello'),
    ('GET', 'k'), ('SET', 'k', 'v'), ('CLIENT', 'GETNAME'), 'publish-to-self',
    ('NOSUCHCMD', 'x'), ('GET',), ('MULTI',), ('DISCARD',),
    ('UNSUBSCRIBE', 'b'), ('UNSUBSCRIBE', 'nosuch'),
    many(2, 'PSUBSCRIBE', 'p*', 'q?'), many(2, 'PUNSUBSCRIBE', 'q?', 'p*'),
    ('SUNSUBSCRIBE', 's1'),
    ('UNSUBSCRIBE',),                                 # the one channel left
    ('GET', 'k'),                                     # still a shard channel
    ('SUNSUBSCRIBE',),
    ('GET', 'k'), ('PING',),                          # out of subscribed mode
    ('PSUBSCRIBE', 'x*'), ('ECHO', 'e'), ('RESET',), ('GET', 'k'), ('PING',),
    ('SSUBSCRIBE', 'only'), ('QUIT',),
]


@test
def subscribed_mode_replies(t):
    for proto in (2, 3):
        steps = [PublishToSelf(proto, 'PUBLISH', 'a', 'm') if s == 'publish-to-self' else s
                 for s in SUBSCRIBED_MODE]
        t.compare(steps, proto=proto)


@test
def publish_delivery(t):
    def run(srv):
        out = []
        with srv.client(2) as s2, srv.client(3) as s3, srv.client(3) as pub:
            out.append(sub(s2, 'SUBSCRIBE', 'news', 'other'))
            out.append(s2.cmd('PSUBSCRIBE', 'n*'))
            out.append(sub(s3, 'PSUBSCRIBE', 'ne?s', '*'))
            out.append(s3.cmd('SSUBSCRIBE', 'shard'))
            out.append(pub.cmd('PUBLISH', 'news', 'hello'))        # 1 + 1 + 2 receivers
            out.append(s2.read_replies(2))
            out.append(sorted(s3.read_replies(1) for _ in range(2)))
            out.append(pub.cmd('PUBLISH', 'nothing', ''))          # n* and *
            out.append(s2.read_replies(1))
            out.append(s3.read_replies(1))
            out.append(pub.cmd('PUBLISH', 'shard', 'x'))           # only '*'
            out.append(s3.read_replies(1))
            out.append(pub.cmd('SPUBLISH', 'shard', 'sx\r\n'))     # shard subscribers only
            out.append(s3.read_replies(1))
            out.append(pub.cmd('SPUBLISH', 'news', 'y'))
            out.append(pub.cmd('PUBLISH', 'zzz', 'bin\x00ary'))
            out.append(s3.read_replies(1))
            # A RESP3 client may publish to itself: Redis 8.8 sends the
            # push after the reply (7.0, the reference, before it).
            mine = [s3.cmd('PUBLISH', 'other', 'self'), s3.read_replies(1)]
            out.append(mine[::-1] if srv.kind == 'redis' else mine)
            out.append(s2.read_replies(1))
            out.append(pub.cmd('PING'))
            # Unsubscribed clients get nothing more.
            out.append(s2.cmd('UNSUBSCRIBE', 'news'))
            out.append(s2.cmd('PUNSUBSCRIBE', 'n*'))
            out.append(pub.cmd('PUBLISH', 'news', 'late'))
            out.append(sorted(s3.read_replies(1) for _ in range(2)))
            out.append(s2.cmd('PING', 'still'))
        return out
    t.same(run, 'replies seen by subscribers and publisher')


@test
def pubsub_introspection(t):
    def run(srv):
        out = []
        clients = [srv.client(2) for _ in range(3)]
        try:
            a, b, c = clients
            out.append(sub(a, 'SUBSCRIBE', 'ch1', 'ch2', 'x'))
            out.append(sub(b, 'SUBSCRIBE', 'ch1'))
            out.append(sub(b, 'PSUBSCRIBE', 'ch*', 'ch*', '?'))
            out.append(sub(c, 'PSUBSCRIBE', 'ch*'))
            out.append(sub(c, 'SSUBSCRIBE', 'sh1', 'sh2'))
            with srv.client(3) as q3, srv.client(2) as q:
                for cl in (q, q3):
                    out.append(sorted(cl.call('PUBSUB', 'CHANNELS')))
                    out.append(sorted(cl.call('PUBSUB', 'channels', 'ch*')))
                    out.append(cl.cmd('PUBSUB', 'CHANNELS', 'nomatch*'))
                    out.append(cl.cmd('PUBSUB', 'NUMSUB'))
                    out.append(cl.cmd('PUBSUB', 'NUMSUB', 'ch1', 'ch2', 'none', 'sh1'))
                    out.append(cl.cmd('PUBSUB', 'NUMPAT'))
                    out.append(sorted(cl.call('PUBSUB', 'SHARDCHANNELS')))
                    out.append(cl.cmd('PUBSUB', 'SHARDCHANNELS', '*2'))
                    out.append(cl.cmd('PUBSUB', 'SHARDNUMSUB', 'sh1', 'ch1'))
                    out.append(cl.cmd('PUBSUB', 'SHARDNUMSUB'))
                    for bad in (('PUBSUB',), ('PUBSUB', 'NOPE'), ('PUBSUB', 'CHANNELS', 'a', 'b'),
                                ('PUBSUB', 'shardchannels', 'a', 'b'), ('PUBSUB', 'NUMPAT', 'x'),
                                ('PUBSUB', 'HELP', 'x'), ('PUBLISH', 'a'), ('SPUBLISH', 'a'),
                                ('PUBSUB', 'HELP')):
                        out.append(cl.cmd(*bad))
                # A closed subscriber leaves every channel and pattern.
                b.close()
                out.append(wait_until(lambda: q.cmd('PUBSUB', 'NUMPAT') == b':1\r\n'))
                out.append(q.cmd('PUBSUB', 'NUMSUB', 'ch1'))
                c.close()
                out.append(wait_until(lambda: q.cmd('PUBSUB', 'NUMPAT') == b':0\r\n'))
                out.append(q.cmd('PUBSUB', 'SHARDCHANNELS'))
                out.append(q.cmd('PUBLISH', 'ch1', 'm'))
                a.close()
                out.append(wait_until(lambda: q.cmd('PUBSUB', 'CHANNELS') == b'*0\r\n'))
        finally:
            for cl in clients:
                cl.close()
        return out
    t.same(run, 'PUBSUB introspection')


@test
def command_table_rows(t):
    names = ('subscribe', 'unsubscribe', 'psubscribe', 'punsubscribe', 'publish',
             'ssubscribe', 'sunsubscribe', 'spublish')

    def heads(srv):
        rows = [e[:6] for e in srv.call('COMMAND', 'INFO', *names)]
        if srv.kind == 'redis':
            # Redis 8.8 refuses the subscribing commands under maxmemory
            # (denyoom first, as redis-server 8.8.0 lists it); 7.0 did not.
            for r in rows:
                if r[0] in (b'subscribe', b'psubscribe', b'ssubscribe'):
                    r[2] = [b'denyoom'] + r[2]
        return rows
    t.same(heads, 'COMMAND INFO of the pub/sub commands')


def subscriber_reader(srv, sub_args, total, out, ready):
    """Subscribes, then reads `total` messages; records payloads in order."""
    with srv.client(2, timeout=60) as c:
        sub(c, *sub_args)
        ready.release()
        got = []
        for _ in range(total):
            got.append(decode(c.read_reply())[-1])
        out.append(got)


@test
def ordering_across_workers(t):
    pubs, subs, count = 4, 8, 1000
    srv = t.sut
    out, ready = [], threading.Semaphore(0)
    readers = []
    for i in range(subs):
        args = ('SUBSCRIBE', 'ord') if i % 2 == 0 else ('PSUBSCRIBE', 'or?')
        th = threading.Thread(target=subscriber_reader,
                              args=(srv, args, pubs * count, out, ready))
        th.start()
        readers.append(th)
    for _ in range(subs):
        assert ready.acquire(timeout=10), 'a subscriber did not subscribe'
    counts, errors = [], []

    def publisher(p):
        try:
            with srv.client(2, timeout=60) as c:
                for base in range(0, count, 100):
                    c.send_raw(b''.join(encode(('PUBLISH', 'ord', '%d:%d' % (p, n)))
                                        for n in range(base, base + 100)))
                    counts.extend(decode(c.read_reply()) for _ in range(100))
        except Exception as e:        # noqa: BLE001 - reported below
            errors.append(repr(e))
    workers = [threading.Thread(target=publisher, args=(p,)) for p in range(pubs)]
    for th in workers:
        th.start()
    for th in workers + readers:
        th.join(120)
    assert not errors, errors
    assert counts == [subs] * (pubs * count), 'PUBLISH counts: %r' % sorted(set(counts))
    assert len(out) == subs, 'only %d subscribers finished' % len(out)
    for got in out:
        assert len(got) == pubs * count
        seen = {}
        for m in got:
            p, n = map(int, m.split(b':'))
            assert n == seen.get(p, -1) + 1, 'publisher %d: %d after %d' % (p, n, seen.get(p, -1))
            seen[p] = n
        assert seen == {p: count - 1 for p in range(pubs)}
    with srv.client() as c:
        assert wait_until(lambda: c.call('PUBSUB', 'NUMSUB', 'ord') == [b'ord', 0])
        assert wait_until(lambda: c.call('PUBSUB', 'NUMPAT') == 0)


@test
def output_buffer_limit_config(t):
    steps = [
        ('CONFIG', 'GET', 'client-output-buffer-limit'),
        ('CONFIG', 'SET', 'client-output-buffer-limit', 'pubsub 1mb 512kb 5'),
        ('CONFIG', 'GET', 'client-output-buffer-limit'),
        ('CONFIG', 'SET', 'client-output-buffer-limit', 'normal 1k 0 0 replica 2gb 1gb 10'),
        ('CONFIG', 'GET', 'client-output-buffer-limit'),
        ('CONFIG', 'SET', 'client-output-buffer-limit', 'pubsub 1mb'),
        ('CONFIG', 'SET', 'client-output-buffer-limit', 'master 1mb 1mb 1'),
        ('CONFIG', 'SET', 'client-output-buffer-limit', 'pubsub -1 1 1'),
        ('CONFIG', 'SET', 'client-output-buffer-limit', 'pubsub 1 1 x'),
        ('CONFIG', 'SET', 'client-output-buffer-limit', ''),
        ('CONFIG', 'GET', 'client-output-buffer-limit'),
        ('CONFIG', 'SET', 'client-output-buffer-limit',
         'normal 0 0 0 slave 256mb 64mb 60 pubsub 32mb 8mb 60'),
        ('CONFIG', 'GET', 'client-output*'),
    ]
    t.compare(steps)


@test
def output_buffer_limit_at_start(t):
    def run(srv):
        return srv.call('CONFIG', 'GET', 'client-output-buffer-limit')
    ref, sut = t.spawn_pair(**{'client-output-buffer-limit': 'pubsub 2mb 1mb 7'})
    a, b = run(ref), run(sut)
    assert a == b, (a, b)


def slow_subscriber(srv):
    """A subscriber with a tiny receive buffer that never reads."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect((HOST, srv.port))
    s.sendall(encode(('SUBSCRIBE', 'flood')))
    return s


@test
def slow_subscriber_is_disconnected(t):
    srv = t.sut
    with srv.client() as admin:
        assert admin.cmd('CONFIG', 'SET', 'client-output-buffer-limit',
                         'pubsub 1mb 512kb 5') == b'+OK\r\n'
        try:
            base = int(info_fields(admin.call('INFO', 'memory'))['memory']['used_memory'])
            sub = slow_subscriber(srv)
            assert wait_until(lambda: admin.call('PUBSUB', 'NUMSUB', 'flood')[1] == 1)
            payload = b'x' * 16384
            peak, sent, gone = base, 0, False
            with srv.client(timeout=30) as pub:
                # Up to 256 MB: far past socket buffers and the 1 MB limit.
                while sent < 256 * 1024 * 1024:
                    pub.send_raw(encode(('PUBLISH', 'flood', payload)) * 64)
                    replies = [decode(pub.read_reply()) for _ in range(64)]
                    sent += 64 * len(payload)
                    used = int(info_fields(admin.call('INFO', 'memory'))['memory']['used_memory'])
                    peak = max(peak, used)
                    assert admin.cmd('PING') == b'+PONG\r\n'
                    if replies[-1] == 0:
                        gone = True
                        break
            assert gone, 'the subscriber was never disconnected (%d bytes sent)' % sent
            assert peak - base < 32 * 1024 * 1024, 'memory grew by %d bytes' % (peak - base)
            sub.settimeout(10)
            data = b''
            try:
                while True:          # what the kernel had buffered, then EOF
                    chunk = sub.recv(1 << 20)
                    if not chunk:
                        break
                    data += chunk
            except ConnectionResetError:
                pass
            sub.close()
            assert admin.call('PUBSUB', 'NUMSUB', 'flood') == [b'flood', 0]
            with srv.client() as other:
                assert other.cmd('SET', 'k', 'v') == b'+OK\r\n'
        finally:
            admin.cmd('CONFIG', 'SET', 'client-output-buffer-limit',
                      'normal 0 0 0 slave 256mb 64mb 60 pubsub 32mb 8mb 60')


@test
def soft_limit_needs_time(t):
    """Over the soft limit only briefly: kept; over it for longer: closed."""
    srv = t.sut
    with srv.client() as admin:
        assert admin.cmd('CONFIG', 'SET', 'client-output-buffer-limit',
                         'pubsub 0 256kb 1') == b'+OK\r\n'
        try:
            sub = slow_subscriber(srv)
            assert wait_until(lambda: admin.call('PUBSUB', 'NUMSUB', 'flood')[1] == 1)
            with srv.client(timeout=30) as pub:
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline:
                    pub.send_raw(encode(('PUBLISH', 'flood', b'y' * 65536)) * 16)
                    replies = [decode(pub.read_reply()) for _ in range(16)]
                    if replies[-1] == 0:
                        break
                    time.sleep(0.05)
                assert replies[-1] == 0, 'not disconnected past the soft limit'
            sub.close()
        finally:
            admin.cmd('CONFIG', 'SET', 'client-output-buffer-limit',
                      'normal 0 0 0 slave 256mb 64mb 60 pubsub 32mb 8mb 60')



@xkv_only
@test
def publish_to_self_after_reply_as_redis_88(t):
    """A RESP3 subscriber's messages to itself come after the reply of the
    command that published them: after PUBLISH's, after EXEC's whole array,
    after EVAL's (bytes as redis-server 8.8.0 sent them)."""
    msg = b'>3\r\n$7\r\nmessage\r\n$3\r\nfoo\r\n$3\r\nbar\r\n'
    with t.sut.client(3) as c:
        assert c.call('SUBSCRIBE', 'foo') == [b'subscribe', b'foo', 1]
        assert c.cmd('PUBLISH', 'foo', 'bar') + c.read_reply() == b':1\r\n' + msg
        c.send_raw(encode(('MULTI',)) + encode(('PING', 'abc')) + encode(('PUBLISH', 'foo', 'bar'))
                   + encode(('PING', 'def')) + encode(('EXEC',)))
        assert c.read_replies(6) == (b'+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n'
                                     b'*3\r\n$3\r\nabc\r\n:1\r\n$3\r\ndef\r\n' + msg)
        got = c.cmd('EVAL', 'redis.call("publish","foo","bar") return "bla"', 0)
        assert got + c.read_reply() == b'$3\r\nbla\r\n' + msg
        # Keyspace events of its own writes too.
        assert c.call('CONFIG', 'SET', 'notify-keyspace-events', 'KA') == b'OK'
        try:
            assert c.call('SUBSCRIBE', '__keyspace@0__:k') == [b'subscribe', b'__keyspace@0__:k', 2]
            assert c.cmd('SET', 'k', 'v') + c.read_reply() == (
                b'+OK\r\n>3\r\n$7\r\nmessage\r\n$16\r\n__keyspace@0__:k\r\n$3\r\nset\r\n')
        finally:
            c.call('CONFIG', 'SET', 'notify-keyspace-events', '')
