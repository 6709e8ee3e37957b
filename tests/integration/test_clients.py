# SPDX-License-Identifier: GPL-2.0-only
"""The client libraries (clients/python on redis-py, clients/node on ioredis)
against xkvd: tests/clients/differential.{py,js} compare every GET and MGET
of the xkv client with the plain TCP client's on the same server.

The shared servers run with --fastpath no, so UDP is answered by the daemon
here; the kernel's answers to the same clients are tested in tests/e2e
(clients_in_namespace). Node and the package's node_modules come from
`make deps`: missing ones are a failure, not a skip."""

import hashlib
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import threading

from harness import REPO, free_port, test, xkv_only

DIFF = os.path.join(REPO, 'tests', 'clients', 'differential')
PYTHON = '/usr/bin/python3'


def run(kind, srv, *args, timeout=120):
    """Runs the differential test of one client against srv: its stats dict."""
    if kind == 'node':
        node = shutil.which('node')
        assert node, 'node is not installed (make deps)'
        assert os.path.isdir(os.path.join(REPO, 'clients', 'node', 'node_modules', 'ioredis')), \
            'clients/node/node_modules is missing (make deps runs npm ci)'
        argv = [node, DIFF + '.js']
    else:
        argv = [PYTHON, DIFF + '.py']
    argv += ['--port', str(srv.port)] + [str(a) for a in args]
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=timeout)
    assert p.returncode == 0, '%s differential failed (rc %d):\n%s\n%s' % (
        kind, p.returncode, p.stdout, p.stderr[-6000:])
    result = json.loads(p.stdout.strip().splitlines()[-1])
    assert result['checks'] > 100, result
    return result['stats']


def both(fn):
    """One test per client library."""
    def python(t):
        fn(t, 'python')

    def node(t):
        fn(t, 'node')
    python.__name__ = fn.__name__ + '_python'
    node.__name__ = fn.__name__ + '_node'
    python.__module__ = node.__module__ = fn.__module__
    test(xkv_only(python))
    test(xkv_only(node))
    return fn


@both
def same_as_tcp(t, kind):
    """Hits, misses, binary values and keys, WRONGTYPE, values too large for
    the padding (TRUNCATED, then TCP), MGET of mixed hits and misses."""
    stats = run(kind, t.sut)
    assert stats['udp'] > 50, stats
    assert stats['reasons'].get('truncated', 0) > 0, stats
    # WRONGTYPE is an error reply: TCP raises it.
    assert stats['reasons'].get('error', 0) > 0, stats
    if kind == 'node':      # the GET and MGET after SELECT 1
        assert stats['tcpOnly'] == 2, stats


@both
def password_derives_the_token(t, kind):
    """requirepass without fastpath-token: client and server derive the same
    token from the password, and UDP answers."""
    srv = t.spawn('sut', requirepass='s3cret pass')
    stats = run(kind, srv, '--password', 's3cret pass')
    assert stats['udp'] > 50 and 'noauth' not in stats['reasons'], stats
    # A wrong token: NOAUTH over UDP every time, and TCP answers.
    stats = run(kind, srv, '--password', 's3cret pass', '--fastpath-token', 99)
    assert stats['udp'] == 0 and stats['reasons'].get('noauth', 0) > 0, stats


@both
def explicit_token(t, kind):
    srv = t.spawn('sut', requirepass='pw', **{'fastpath-token': 1234567890123})
    stats = run(kind, srv, '--password', 'pw', '--fastpath-token', 1234567890123)
    assert stats['udp'] > 50 and 'noauth' not in stats['reasons'], stats


@both
def no_udp_answer(t, kind):
    """A UDP port that nobody listens on (refused at once) or that swallows
    every datagram (timeouts, then the back-off sends GETs straight to TCP)."""
    stats = run(kind, t.sut, '--udp-port', free_port())
    assert stats['udp'] == 0 and stats['reasons'].get('refused', 0) > 0, stats
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sink:
        sink.bind(('127.0.0.1', 0))
        ms = kind == 'node'
        stats = run(kind, t.sut, '--udp-port', sink.getsockname()[1],
                    '--udp-timeout', 50 if ms else 0.05, '--udp-backoff', 60000 if ms else 60)
    assert stats['udp'] == 0 and stats['reasons'] == {'timeout': 2}, stats
    assert stats['tcp_only' if kind == 'python' else 'tcpOnly'] > 100, stats


# ---------------------------------------------------------------- a fake UDP responder

HDR = struct.Struct('!HBBIHHI8s')
MAGIC, F_REPLY, F_TRUNCATED, F_KERNEL = 0x584b, 1, 2, 4
DOC_TOKEN = 1234567890123          # docs/udp-protocol.md's example


class FakeUdp:
    """A UDP responder in front of a real TCP server, so the client's own
    behaviour is the subject: answers by key (see answer()), and records
    every request datagram as (size, token, request id, RESP command)."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(('127.0.0.1', 0))
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.requests, self.first_id = [], {}
        self.stopping = False
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def close(self):
        self.stopping = True
        self.thread.join(5)
        self.sock.close()

    def _loop(self):
        while not self.stopping:
            try:
                data, peer = self.sock.recvfrom(70000)
            except socket.timeout:
                continue
            magic, _, flags, rid, cmd_len, _, _, token = HDR.unpack_from(data)
            cmd = data[24:24 + cmd_len]
            self.requests.append((len(data), token, rid, cmd))
            for out in self.answer(rid, cmd):
                self.sock.sendto(out, peer)

    @staticmethod
    def reply(rid, body, flags=F_REPLY, value_len=0):
        return HDR.pack(MAGIC, 1, flags, rid, len(body), 0, value_len, bytes(8)) + body

    def answer(self, rid, cmd):
        key = cmd.split(b'\r\n')[-2]
        r = self.reply
        if cmd.startswith(b'*3\r\n$4\r\nMGET'):
            return [r(rid, b'*2\r\n$1\r\na\r\n$-1\r\n')]
        if key == b'stale':     # a late answer to someone else first, then ours
            return [r((rid + 12345) & 0xffffffff, b'$5\r\nWRONG\r\n'), r(rid, b'$5\r\nright\r\n')]
        if key == b'kern':
            return [r(rid, b'$4\r\nkern\r\n', F_REPLY | F_KERNEL)]
        if key == b'bad':
            return [r(rid, b'$5\r\nhel')]
        if key == b'trunc':
            return [r(rid, b'', F_REPLY | F_TRUNCATED, 5000)]
        if key == b'retry':     # drop the first attempt, then answer it late
            if key not in self.first_id:
                self.first_id[key] = rid
                return []
            return [r(self.first_id.pop(key), b'$4\r\nlate\r\n')]
        if key == b'quiet':     # not a reply, then silence
            return [HDR.pack(MAGIC, 1, 0, rid, 0, 0, 0, bytes(8))]
        return [r(rid, b'$-1\r\n')]


FAKE_CALLS = [('get', 'stale'), ('get', 'kern'), ('get', 'bad'), ('get', 'trunc'),
              ('get', 'retry'), ('mget', 'x', 'y'), ('get', 'quiet'), ('get', 'after')]
FAKE_WANT = ['right', 'kern', 'from tcp', 't' * 10, 'late', ['a', None], 'quiet tcp', 'after tcp']


def fake_setup(t):
    for k, v in (('stale', 'tcp'), ('kern', 'tcp'), ('bad', 'from tcp'), ('trunc', 't' * 10),
                 ('retry', 'tcp'), ('quiet', 'quiet tcp'), ('after', 'after tcp')):
        t.sut.call('SET', k, v)


def fake_check(fake, stats, sizes, tcp_only):
    assert stats['udp'] == 4 and stats['kernel'] == 1 and stats['fallbacks'] == 3, stats
    assert stats['reasons'] == {'protocol': 1, 'truncated': 1, 'timeout': 1}, stats
    assert stats[tcp_only] == 1, stats     # the GET after the timeout: backing off
    got = fake.requests
    assert {size for size, _, _, _ in got} == {sizes}, got
    assert {token for _, token, _, _ in got} == {bytes.fromhex('cb04fb711f010000')}, got
    assert len({rid for _, _, rid, _ in got}) == len(got), 'a request id was reused'
    assert got[0][3] == b'*2\r\n$3\r\nGET\r\n$5\r\nstale\r\n', got[0]
    assert b'*3\r\n$4\r\nMGET\r\n$1\r\nx\r\n$1\r\ny\r\n' in [cmd for _, _, _, cmd in got]
    # quiet: the first attempt and both retries.
    assert sum(cmd.endswith(b'$5\r\nquiet\r\n') for _, _, _, cmd in got) == 3, got


@test
@xkv_only
def fake_udp_python(t):
    """Stale ids, the KERNEL flag, a malformed reply, TRUNCATED, a late answer
    to a retried request, MGET, a non-reply then silence, the back-off."""
    sys.path.insert(0, os.path.join(REPO, 'clients', 'python'))
    import xkv
    fake_setup(t)
    fake = FakeUdp()
    try:
        r = xkv.Redis(port=t.sut.port, udp_port=fake.port, fastpath_token=DOC_TOKEN,
                      udp_timeout=0.25, udp_backoff=60, decode_responses=True)
        got = [getattr(r, op)(*args) for op, *args in FAKE_CALLS]
        assert got == FAKE_WANT, got
        fake_check(fake, r.stats.as_dict(), 1200, 'tcp_only')
        r.close()
    finally:
        fake.close()


@test
@xkv_only
def fake_udp_node(t):
    fake_setup(t)
    fake = FakeUdp()
    try:
        opts = {'port': t.sut.port, 'udpPort': fake.port, 'fastpathToken': DOC_TOKEN,
                'udpTimeout': 250, 'udpBackoff': 60000, 'udpPadding': 300}
        p = subprocess.run([shutil.which('node') or 'node',
                            os.path.join(REPO, 'tests', 'clients', 'ops.js'), json.dumps(opts),
                            json.dumps(FAKE_CALLS)], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, (p.stdout, p.stderr)
        out = json.loads(p.stdout)
        got = [r.get('value', r.get('error')) for r in out['results']]
        assert got == FAKE_WANT, got
        fake_check(fake, out['stats'], 300, 'tcpOnly')
    finally:
        fake.close()


@test
@xkv_only
def when_udp_is_not_used_python(t):
    """Other databases, UDP turned off, from_url, and the derived token."""
    sys.path.insert(0, os.path.join(REPO, 'clients', 'python'))
    import xkv
    t.sut.call('SET', 'k', 'v')
    r = xkv.Redis.from_url('redis://127.0.0.1:%d/0' % t.sut.port)
    assert r.get('k') == b'v' and r.stats.udp == 1, r.stats
    for r in (xkv.Redis(port=t.sut.port, db=1), xkv.Redis(port=t.sut.port, udp=False),
              xkv.Redis.from_url('redis://127.0.0.1:%d/1' % t.sut.port)):
        r.get('k')
        r.mget(['k'])
        assert r.stats.as_dict() == {'udp': 0, 'kernel': 0, 'fallbacks': 0, 'tcp_only': 2,
                                     'reasons': {}}, r.stats
        r.close()
    want = hashlib.sha256(b'xkv-fastpath-token:p\xc3\xa4ss').digest()[:8]
    assert xkv.token_from_password('p\u00e4ss') == want
    node = subprocess.run([shutil.which('node') or 'node', '-e',
                           'process.stdout.write(require(process.argv[1])'
                           '.tokenFromPassword("p\\u00e4ss").toString("hex"))',
                           os.path.join(REPO, 'clients', 'node')],
                          capture_output=True, text=True, timeout=30)
    assert node.stdout == want.hex(), (node.stdout, node.stderr)


@test
@xkv_only
def next_address_after_refused(t):
    """A name that resolves to several addresses: one that refuses (nothing
    listens on 127.0.0.2) is passed over within the same call, not a fallback."""
    sys.path.insert(0, os.path.join(REPO, 'clients', 'python'))
    import xkv
    t.sut.call('SET', 'k', 'v')
    r = xkv.Redis(port=t.sut.port)
    r._endpoint._addrs = [(socket.AF_INET, socket.SOCK_DGRAM, 17, '', (ip, t.sut.port))
                          for ip in ('127.0.0.2', '127.0.0.1')]
    assert [r.get('k'), r.get('k'), r.mget(['k', 'k'])[0]] == [b'v', b'v', b'v']
    # The MGET falls back with 'error' where the server does not serve it over UDP.
    assert r.stats.udp >= 2 and set(r.stats.reasons) <= {'error'}, r.stats
    r.close()
    script = '''
const Redis = require(process.argv[1]);
(async () => {
  const r = new Redis({ port: Number(process.argv[2]) });
  await r.ping();
  r._endpoint.addrs = [{ address: '127.0.0.2', family: 4 }, { address: '127.0.0.1', family: 4 }];
  const got = [await r.get('k'), await r.get('k'), await Promise.all([r.get('k'), r.get('k')])];
  await r.quit();
  console.log(JSON.stringify({ got, stats: r.stats }));
})();
'''
    p = subprocess.run([shutil.which('node') or 'node', '-e', script,
                        os.path.join(REPO, 'clients', 'node'), str(t.sut.port)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, (p.stdout, p.stderr)
    out = json.loads(p.stdout)
    assert out['got'] == ['v', 'v', ['v', 'v']], out
    assert out['stats']['udp'] == 4 and 'refused' not in out['stats']['reasons'], out
