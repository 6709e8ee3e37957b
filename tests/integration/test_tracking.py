# SPDX-License-Identifier: GPL-2.0-only
"""CLIENT TRACKING (client-side caching): RESP3 invalidation pushes, RESP2
redirection through the __redis__:invalidate channel, BCAST prefixes,
OPTIN/OPTOUT with CLIENT CACHING, NOLOOP, flush and expiry invalidation,
tracking-table-max-keys, the introspection fields, invalidations across the
server's two workers arriving before any later reply, and node-redis's
client-side cache."""

import json
import os
import re
import shutil
import subprocess

from harness import REPO, decode, info_fields, test, wait_until, xkv_only

INVALIDATE = b'>2\r\n$10\r\ninvalidate\r\n'


def push_keys(*keys):
    """The RESP3 invalidation push of these keys."""
    out = INVALIDATE + b'*%d\r\n' % len(keys)
    for k in keys:
        k = k.encode() if isinstance(k, str) else k
        out += b'$%d\r\n%s\r\n' % (len(k), k)
    return out


def channel_keys(*keys):
    """The same invalidation as a RESP2 message of __redis__:invalidate."""
    out = b'*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*%d\r\n' % len(keys)
    for k in keys:
        out += b'$%d\r\n%s\r\n' % (len(k), k.encode())
    return out


def client_id(c):
    return int(c.cmd('CLIENT', 'ID')[1:-2])


def redirect_target(srv):
    """A RESP2 client subscribed to __redis__:invalidate, and its id."""
    r = srv.client(2)
    rid = client_id(r)
    r.cmd('SUBSCRIBE', '__redis__:invalidate')
    return r, rid


OPTION_ERRORS = [
    ('CLIENT', 'TRACKING'),
    ('CLIENT', 'TRACKING', 'maybe'),
    ('CLIENT', 'TRACKING', 'on', 'PREFIX', 'a'),
    ('CLIENT', 'TRACKING', 'on', 'BCAST', 'OPTIN'),
    ('CLIENT', 'TRACKING', 'on', 'OPTIN', 'OPTOUT'),
    ('CLIENT', 'TRACKING', 'on', 'REDIRECT', '987654'),
    ('CLIENT', 'TRACKING', 'on', 'REDIRECT', 'abc'),
    ('CLIENT', 'TRACKING', 'on', 'NOSUCH'),
    ('CLIENT', 'TRACKING', 'on', 'PREFIX'),
    ('CLIENT', 'CACHING', 'yes'),
    ('CLIENT', 'CACHING', 'yes', 'no'),
    ('CLIENT', 'GETREDIR'), ('CLIENT', 'TRACKINGINFO'),
    ('CLIENT', 'TRACKING', 'on', 'OPTIN'),
    ('CLIENT', 'CACHING', 'no'), ('CLIENT', 'CACHING', 'maybe'),
    ('CLIENT', 'CACHING', 'YES'), ('CLIENT', 'TRACKINGINFO'),
    ('PING',), ('CLIENT', 'TRACKINGINFO'),      # CACHING lasted one command
    ('CLIENT', 'TRACKING', 'on', 'OPTOUT'),
    ('CLIENT', 'TRACKING', 'on', 'BCAST'),
    ('CLIENT', 'GETREDIR'),
    ('CLIENT', 'TRACKING', 'off'),
    ('CLIENT', 'TRACKING', 'on', 'BCAST', 'PREFIX', 'ab', 'PREFIX', 'a'),
    ('CLIENT', 'TRACKING', 'on', 'BCAST', 'PREFIX', 'b', 'PREFIX', 'a'),
    ('CLIENT', 'TRACKING', 'on', 'BCAST', 'PREFIX', 'abc'),
    ('CLIENT', 'TRACKING', 'on', 'BCAST', 'PREFIX', 'c', 'PREFIX', 'b'),
    ('CLIENT', 'TRACKINGINFO'),
    ('CLIENT', 'TRACKING', 'on'),
    ('CLIENT', 'TRACKING', 'off'), ('CLIENT', 'TRACKINGINFO'),
    ('CLIENT', 'TRACKING', 'on', 'NOLOOP'), ('CLIENT', 'TRACKINGINFO'),
    ('CLIENT', 'GETREDIR'), ('RESET',), ('CLIENT', 'TRACKINGINFO'),
]


@test
def tracking_options_and_errors(t):
    for proto in (2, 3):
        t.compare(OPTION_ERRORS, proto=proto)


@test
def tracking_resp3_pushes(t):
    def run(srv):
        out = []
        with srv.client(3) as r, srv.client(2) as w:
            out.append(r.cmd('CLIENT', 'TRACKING', 'on'))
            out.append(w.cmd('SET', 'k1', 'v'))
            out.append(r.cmd('GET', 'k1'))
            out.append(r.cmd('MGET', 'k2', 'k3', 'k4'))
            out.append(r.cmd('HGET', 'h', 'f'))        # any read command's keys
            out.append(w.cmd('SET', 'k1', 'w'))
            out.append(w.cmd('MSET', 'k3', '1', 'k2', '2', 'other', '3'))
            out.append(w.cmd('HSET', 'h', 'f', 'v'))
            out.append(w.cmd('SET', 'k1', 'again'))    # k1 was forgotten: no message
            out.append(r.cmd('PING'))                  # the pushes come first
            out.append(r.read_replies(4))
            # A change by the reader itself comes after its own reply.
            out.append(r.cmd('GET', 'k1'))
            out.append(r.cmd('SET', 'k1', 'mine'))
            out.append(r.read_reply())
            # Inside MULTI, after the whole EXEC reply.
            out.append(r.cmd('GET', 'k1'))
            out.append(r.cmd('MULTI'))
            out.append(r.cmd('INCR', 'k9'))
            out.append(r.cmd('SET', 'k1', 'x'))
            out.append(r.cmd('EXEC'))
            out.append(r.read_reply())
            # Expiry invalidates too (active expiry; no command needed).
            out.append(w.cmd('SET', 'e', 'v', 'PX', '1000'))
            out.append(r.cmd('GET', 'e'))
            out.append(r.read_reply())
            # A flush: one null for all keys, whatever the databases.
            out.append(r.cmd('GET', 'k1'))
            out.append(w.cmd('FLUSHALL'))
            out.append(r.read_reply())
            out.append(r.cmd('PING'))
        return out
    out = t.same(run, 'pushes seen by a RESP3 tracking client')
    assert out[9] == push_keys('k1') and out[10].endswith(b'+PONG\r\n'), out[9:11]
    assert out[-2] == INVALIDATE + b'_\r\n', out[-2]


@test
def tracking_resp2_redirect(t):
    def run(srv):
        out = []
        sub, rid = redirect_target(srv)
        try:
            with srv.client(2) as r, srv.client(2) as w:
                out.append(r.cmd('CLIENT', 'TRACKING', 'on', 'REDIRECT', rid))
                out.append(r.cmd('CLIENT', 'GETREDIR') == b':%d\r\n' % rid)
                out.append(r.cmd('GET', 'a'))
                out.append(w.cmd('SET', 'a', '1'))
                out.append(sub.read_reply())
                # A client in RESP3 redirecting gets nothing on its own
                # connection: the messages go to the redirection.
                out.append(r.cmd('HELLO', '3')[:1])
                out.append(r.cmd('GET', 'a'))
                out.append(w.cmd('DEL', 'a'))
                out.append(sub.read_reply())
                out.append(r.cmd('PING'))
                out.append(w.cmd('FLUSHDB'))
                out.append(sub.read_reply())     # the null of r's protocol, as Redis
                # The redirection goes away: the tracking client is told once
                # a key it tracks changes.
                out.append(r.cmd('GET', 'b'))
                sub.close()
                out.append(wait_until(lambda: b'id=%d ' % rid not in w.cmd('CLIENT', 'LIST')))
                out.append(w.cmd('SET', 'b', '1'))
                broken = r.cmd('PING')
                if broken.startswith(b'>'):
                    broken = broken.replace(b':%d\r\n' % rid, b':ID\r\n') + r.read_reply()
                out.append(broken)
                info = decode(r.cmd('CLIENT', 'TRACKINGINFO'))
                out.append(sorted(info[b'flags']))
        finally:
            sub.close()
        return out
    out = t.same(run, 'redirected invalidations')
    assert out[4] == channel_keys('a'), out[4]


@test
def tracking_bcast(t):
    def run(srv):
        out = []
        with srv.client(3) as r, srv.client(3) as n, srv.client(2) as w:
            out.append(r.cmd('CLIENT', 'TRACKING', 'on', 'BCAST', 'PREFIX', 'b:', 'PREFIX', 'a:'))
            out.append(n.cmd('CLIENT', 'TRACKING', 'on', 'BCAST', 'NOLOOP'))
            out.append(w.cmd('MULTI'))
            for k in ('b:2', 'a:1', 'c:1', 'b:1', 'a:2'):
                out.append(w.cmd('INCR', k))
            out.append(w.cmd('EXEC'))
            out.append(r.cmd('PING'))        # a:, then b:, each sorted; then PONG
            out.append(r.read_replies(2))
            out.append(n.cmd('PING'))
            out.append(n.read_reply())
            # NOLOOP: its own changes are left out, others' are not.
            out.append(n.cmd('MSET', 'x', '1', 'a:9', '2'))
            out.append(w.cmd('SET', 'y', '1'))
            out.append(n.cmd('PING'))
            out.append(n.read_reply())
            out.append(r.cmd('PING'))
            out.append(r.read_reply())
            out.append(info_fields(w.call('INFO', 'stats').decode())['stats']
                       ['tracking_total_prefixes'])
            out.append(info_fields(w.call('INFO', 'clients').decode())['clients']
                       ['tracking_clients'])
            # Adding prefixes keeps the others; TRACKINGINFO lists them sorted.
            out.append(r.cmd('CLIENT', 'TRACKING', 'on', 'BCAST', 'PREFIX', 'c:'))
            out.append(r.cmd('CLIENT', 'TRACKINGINFO'))
            line = r.cmd('CLIENT', 'INFO')
            out.append(re.search(rb'flags=(\S+).* redir=(\S+)', line).groups())
        return out
    out = t.same(run, 'BCAST invalidations')
    assert out[9] + out[10] == push_keys('a:1', 'a:2') + push_keys('b:1', 'b:2') + b'+PONG\r\n', \
        out[9:11]


@test
def tracking_optin_optout(t):
    def run(srv):
        out = []
        with srv.client(3) as i, srv.client(3) as o, srv.client(2) as w:
            out.append(i.cmd('CLIENT', 'TRACKING', 'on', 'OPTIN'))
            out.append(o.cmd('CLIENT', 'TRACKING', 'on', 'OPTOUT'))
            out.append(i.cmd('GET', 'not'))                 # not cached
            out.append(i.cmd('CLIENT', 'CACHING', 'yes'))
            out.append(i.cmd('GET', 'yes'))
            out.append(i.cmd('GET', 'later'))               # CACHING lasted one
            out.append(o.cmd('CLIENT', 'CACHING', 'no'))
            out.append(o.cmd('GET', 'not'))
            out.append(o.cmd('GET', 'yes'))
            # CACHING before MULTI covers the whole transaction.
            out.append(i.cmd('CLIENT', 'CACHING', 'yes'))
            out.append(i.cmd('MULTI'))
            out.append(i.cmd('GET', 'm1'))
            out.append(i.cmd('GET', 'm2'))
            out.append(i.cmd('EXEC'))
            out.append(w.cmd('MSET', 'not', '1', 'yes', '2', 'later', '3', 'm1', '4', 'm2', '5'))
            out.append(i.cmd('PING'))
            out.append(i.read_replies(2))
            out.append(o.cmd('PING'))
            out.append(o.read_reply())
        return out
    out = t.same(run, 'OPTIN and OPTOUT')
    assert out[15] == push_keys('yes') and out[16] == push_keys('m1') + push_keys('m2'), out


@test
def tracking_table_max_keys(t):
    def run(srv):
        out = []
        sub, rid = redirect_target(srv)
        try:
            with srv.client(2) as r, srv.client(2) as w:
                out.append(r.cmd('CLIENT', 'TRACKING', 'on', 'REDIRECT', rid))
                keys = ['mk%d' % i for i in range(250)]
                for k in keys:
                    r.cmd('GET', k)
                stats = info_fields(w.call('INFO', 'stats').decode())['stats']
                out.append((stats['tracking_total_keys'], stats['tracking_total_items']))
                out.append(w.cmd('CONFIG', 'SET', 'tracking-table-max-keys', '2'))
                # Forgotten keys are invalidated as if they had changed:
                # exactly 248 messages, each of a key that was tracked.
                got = set()
                for _ in range(248):
                    msg = decode(sub.read_reply())
                    got.update(k.decode() for k in msg[2])
                out.append((len(got), got <= set(keys)))
                out.append(sub.cmd('PING'))            # nothing more came
                stats = info_fields(w.call('INFO', 'stats').decode())['stats']
                out.append(stats['tracking_total_keys'])
                out.append(w.cmd('CONFIG', 'SET', 'tracking-table-max-keys', '1000000'))
        finally:
            sub.close()
        return out
    t.same(run, 'the tracking table at its limit')


def two_workers(srv, n=12):
    """Two RESP3 clients on different workers (CLIENT INFO io-thread), and
    the clients opened to find them, to close."""
    opened = [srv.client(3) for _ in range(n)]
    seen = {}
    for c in opened:
        w = re.search(rb'io-thread=(\d+)', c.cmd('CLIENT', 'INFO')).group(1)
        seen.setdefault(w, c)
    assert len(seen) >= 2, 'all %d connections landed on one worker' % n
    a, b = list(seen.values())[:2]
    return a, b, opened


@test
@xkv_only
def tracking_across_workers(t):
    srv = t.sut
    reader, writer, opened = two_workers(srv)
    try:
        assert reader.cmd('CLIENT', 'TRACKING', 'on') == b'+OK\r\n'
        # The writer's reply is out before the reader asks again: the
        # invalidation must come before the reader's next reply, every time.
        for i in range(300):
            key = 'x%d' % i
            assert reader.cmd('GET', key) == b'_\r\n'
            assert writer.cmd('SET', key, 'v') == b'+OK\r\n'
            got = reader.cmd('PING')
            assert got == push_keys(key), (i, got)
            assert reader.read_reply() == b'+PONG\r\n'
        # RESP2 redirection to a subscriber on the writer's worker.
        sub = writer
        assert sub.cmd('HELLO', '2')[:1] == b'*'
        rid = client_id(sub)
        sub.cmd('SUBSCRIBE', '__redis__:invalidate')
        with srv.client(2) as w2:
            assert reader.cmd('CLIENT', 'TRACKING', 'on', 'REDIRECT', rid) == b'+OK\r\n'
            for i in range(50):
                key = 'y%d' % i
                reader.cmd('GET', key)
                assert w2.cmd('SET', key, '1') == b'+OK\r\n'
                assert sub.read_reply() == channel_keys(key)
            # BCAST messages across workers too.
            assert reader.cmd('CLIENT', 'TRACKING', 'off') == b'+OK\r\n'
            assert reader.cmd('CLIENT', 'TRACKING', 'on', 'BCAST', 'PREFIX', 'z') == b'+OK\r\n'
            assert w2.cmd('MSET', 'z1', '1', 'q', '2', 'z0', '3') == b'+OK\r\n'
            assert reader.cmd('PING') == push_keys('z0', 'z1')
            assert reader.read_reply() == b'+PONG\r\n'
        line = reader.cmd('CLIENT', 'INFO')
        assert re.search(rb' flags=tB ', line) and b' redir=0 ' in line, line
    finally:
        for c in opened:
            c.close()


@test
@xkv_only
def tracking_node_client_side_cache(t):
    node = shutil.which('node')
    assert node, 'node is not installed (make deps)'
    assert os.path.isdir(os.path.join(REPO, 'clients', 'node', 'node_modules', 'redis')), \
        'clients/node/node_modules/redis is missing (make deps runs npm ci)'
    p = subprocess.run([node, os.path.join(REPO, 'tests', 'clients', 'tracking.js'),
                        '--port', str(t.sut.port)], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, 'node-redis client-side cache failed:\n%s\n%s' % (
        p.stdout, p.stderr[-4000:])
    result = json.loads(p.stdout.strip().splitlines()[-1])
    assert result['ok'] and result['third'] == 'v2' and result['hits'] == 1, result


@test
@xkv_only
def tracking_eviction_before_reply(t):
    """A key maxmemory evicts before a command is invalidated before that
    command's reply (Redis's order)."""
    srv = t.spawn('sut')
    with srv.client(3) as r:
        assert r.cmd('CLIENT', 'TRACKING', 'on') == b'+OK\r\n'
        mem = info_fields(r.call('INFO', 'memory').decode())['memory']
        used = int(mem['used_memory']) - int(mem.get('mem_not_counted_for_evict', 0))
        assert r.cmd('CONFIG', 'SET', 'maxmemory-policy', 'volatile-random') == b'+OK\r\n'
        assert r.cmd('CONFIG', 'SET', 'maxmemory', used + 1024 * 1024) == b'+OK\r\n'
        assert r.cmd('SETEX', 'volatile-key', '10000', 'x') == b'+OK\r\n'
        assert r.cmd('GET', 'volatile-key') == b'$1\r\nx\r\n'
        # 2 MB in one value: the next command must evict the volatile key.
        assert r.cmd('SETBIT', 'big-key', 16 * 1024 * 1024, 0) == b':0\r\n'
        assert r.cmd('GETBIT', 'big-key', 0) == push_keys('volatile-key')
        assert r.read_reply() == b':0\r\n'
        assert r.cmd('EXISTS', 'volatile-key') == b':0\r\n'
