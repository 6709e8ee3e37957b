# SPDX-License-Identifier: GPL-2.0-only
"""xkvctl and libxkv against xkvd (docs/udp-protocol.md, tools/xkvctl/README.md).

The shared servers run with --fastpath no, so every UDP answer here comes from
the daemon's socket ("via daemon udp"); the kernel's answers are tested in
network namespaces (tests/e2e). A fake UDP responder stands in for the server
where the client's own behaviour is the subject (lost datagrams, stale ids,
the KERNEL flag). xkvctl sits next to the xkvd under test; a missing binary
is a failure, not a skip."""

import os
import socket
import struct
import subprocess
import threading
import time

from harness import free_port, info_fields, test, xkv_only

HDR = struct.Struct('!HBBIHHIQ')      # struct xkv_udp_hdr, token as sent by a big-endian host
MAGIC, VERSION = 0x584b, 1
F_REPLY, F_TRUNCATED, F_KERNEL = 1, 2, 4


def xkvctl_path(t):
    path = os.path.join(os.path.dirname(t.env.xkvd), 'xkvctl')
    assert os.access(path, os.X_OK), 'no xkvctl binary at %s (make tools)' % path
    return path


def ctl(t, port, *args, host='127.0.0.1', env=None, timeout=30):
    """Runs xkvctl -h host -p port args...: (exit status, stdout bytes, stderr text)."""
    argv = [xkvctl_path(t), '-h', host, '-p', str(port)] + [str(a) for a in args]
    full_env = {k: v for k, v in os.environ.items() if k != 'XKV_PASSWORD'}
    full_env.update(env or {})
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
                       env=full_env)
    return p.returncode, p.stdout, p.stderr.decode('utf-8', 'replace')


def get(t, srv, key, *opts, **kw):
    """xkvctl -v get KEY: (status, value or None, how or None, stderr)."""
    rc, out, err = ctl(t, srv.port, '-v', *opts, 'get', key, **kw)
    how = [line[4:] for line in err.splitlines() if line.startswith('via ')]
    return rc, (out[:-1] if rc == 0 else out), (how[0] if how else None), err


def commands_processed(srv, password=None):
    with srv.client() as c:
        if password:
            assert c.cmd('AUTH', password) == b'+OK\r\n'
        return int(info_fields(c.call('INFO', 'stats'))['stats']['total_commands_processed'])


@test
@xkv_only
def get_hit_miss_wrongtype(t):
    t.sut.call('SET', 'k', 'hello')
    t.sut.call('SET', 'bin', b'a\r\nb\x00c\xff')
    t.sut.call('SET', 'empty', '')
    t.sut.call('RPUSH', 'list', 'x')
    assert get(t, t.sut, 'k')[:3] == (0, b'hello', 'daemon udp')
    assert get(t, t.sut, 'bin')[:3] == (0, b'a\r\nb\x00c\xff', 'daemon udp')
    assert get(t, t.sut, 'empty')[:3] == (0, b'', 'daemon udp')
    rc, out, how, err = get(t, t.sut, 'nokey')
    assert (rc, out, how) == (1, b'', 'daemon udp'), (rc, out, how, err)
    rc, out, how, err = get(t, t.sut, 'list')
    assert (rc, out, how) == (2, b'', 'daemon udp') and 'WRONGTYPE' in err, (rc, out, how, err)
    # Without -v nothing but the value is printed.
    assert ctl(t, t.sut.port, 'get', 'k') == (0, b'hello\n', '')


@test
@xkv_only
def get_larger_than_padding(t):
    """A reply that does not fit comes back TRUNCATED with the value's size;
    the client asks once more padded to fit (one more UDP command), or over
    TCP past the largest datagram."""
    fits, one_more = 1167, 1168     # "$1167\r\n" + value + "\r\n" is 1176 = 1200 - 24
    for n in (fits, one_more, 5000, 60000, 65507 - 24 - 16):
        t.sut.call('SET', 'v%d' % n, bytes(i % 251 for i in range(n)))
    t.sut.call('SET', 'huge', b'z' * 100000)

    def counted(key, *opts):
        before = commands_processed(t.sut)
        rc, value, how, err = get(t, t.sut, key, '-t', 2000, *opts)
        assert rc == 0, (rc, err)
        return value, how, commands_processed(t.sut) - before

    base = counted('v%d' % fits)
    assert base[:2] == (bytes(i % 251 for i in range(fits)), 'daemon udp')
    for n in (one_more, 5000, 60000, 65507 - 24 - 16):
        value, how, n_cmds = counted('v%d' % n)
        assert (value, how) == (bytes(i % 251 for i in range(n)), 'daemon udp'), (n, how)
        assert n_cmds == base[2] + 1, 'value of %d bytes: %d commands, not %d' % (
            n, n_cmds, base[2] + 1)
    # Padded enough from the start: one datagram.
    assert counted('v5000', '--pad', 5100)[1:] == ('daemon udp', base[2])
    # Too large for any datagram: TRUNCATED, then TCP.
    value, how, n_cmds = counted('huge')
    assert (value, how, n_cmds) == (b'z' * 100000, 'tcp', base[2] + 1)


@test
@xkv_only
def udp_command(t):
    t.sut.call('SET', 'k', 'v')
    assert ctl(t, t.sut.port, 'udp', 'PING') == (0, b'PONG\n', '')
    assert ctl(t, t.sut.port, 'udp', 'ping', 'hi there') == (0, b'hi there\n', '')
    assert ctl(t, t.sut.port, '-v', 'udp', 'GET', 'k') == (0, b'v\n', 'via daemon udp\n')
    assert ctl(t, t.sut.port, 'udp', 'GET', 'nokey')[:2] == (1, b'(nil)\n')
    rc, out, err = ctl(t, t.sut.port, 'udp', 'SET', 'k', 'other')
    assert rc == 2 and out == b'' and 'only GET, MGET and PING are served over UDP' in err, (
        rc, err)
    assert ctl(t, t.sut.port, 'udp', 'MGET', 'k', 'nokey') == (
        0, b'*2\r\n$1\r\nv\r\n$-1\r\n', '')
    rc, out, err = ctl(t, t.sut.port, 'udp', 'MGET')
    assert rc == 2 and 'wrong number of arguments' in err, (rc, err)
    rc, out, err = ctl(t, t.sut.port, 'udp', 'GET', 'a', 'b')
    assert rc == 2 and 'wrong number of arguments' in err, (rc, err)
    assert t.sut.call('GET', 'k') == b'v'


def mget(t, srv, *keys, opts=(), **kw):
    """xkvctl -v mget KEY...: (status, output lines, how or None, stderr)."""
    rc, out, err = ctl(t, srv.port, '-v', *opts, 'mget', *keys, **kw)
    how = [line[4:] for line in err.splitlines() if line.startswith('via ')]
    return rc, out.split(b'\n')[:-1], (how[0] if how else None), err


@test
@xkv_only
def mget_over_udp(t):
    """MGET over the daemon's UDP socket: nil for missing keys and other types,
    as Redis; a reply past the padding is asked again padded, one past the
    largest datagram over TCP; the daemon serves any number of keys."""
    t.sut.call('SET', 'a', 'alpha')
    t.sut.call('SET', 'b', '')
    t.sut.call('RPUSH', 'list', 'x')
    assert mget(t, t.sut, 'a', 'nokey', 'b', 'list', 'a')[:3] == (
        1, [b'alpha', b'(nil)', b'', b'(nil)', b'alpha'], 'daemon udp')
    assert mget(t, t.sut, 'a', 'b')[:3] == (0, [b'alpha', b''], 'daemon udp')
    assert ctl(t, t.sut.port, 'mget', 'a') == (0, b'alpha\n', '')
    keys = ['key:%d' % i for i in range(200)]
    for k in keys[::2]:
        t.sut.call('SET', k, k.upper())
    rc, lines, how, err = mget(t, t.sut, *keys)
    assert (rc, how) == (1, 'daemon udp'), (rc, how, err)
    assert lines == [k.upper().encode() if i % 2 == 0 else b'(nil)' for i, k in enumerate(keys)]
    # Three values of 2000 bytes: TRUNCATED at 1200 bytes, then padded to fit.
    for k in ('x', 'y', 'z'):
        t.sut.call('SET', k, k * 2000)
    before = commands_processed(t.sut)
    assert mget(t, t.sut, 'x', 'y', 'z')[:3] == (0, [b'x' * 2000, b'y' * 2000, b'z' * 2000],
                                                'daemon udp')
    assert commands_processed(t.sut) - before == 3    # INFO, the first MGET, the padded one
    t.sut.call('SET', 'huge', b'h' * 40000)
    assert mget(t, t.sut, 'huge', 'huge', 'a')[:3] == (0, [b'h' * 40000] * 2 + [b'alpha'], 'tcp')
    rc, _, _, err = mget(t, t.sut)
    assert rc == 2 and 'usage' in err, (rc, err)


@test
@xkv_only
def udp_wire_format(t):
    """The protocol as docs/udp-protocol.md describes it, from a raw socket."""
    t.sut.call('SET', 'k', 'hello')
    cmd = b'*2\r\n$3\r\nGET\r\n$1\r\nk\r\n'
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(5)
        s.connect(('127.0.0.1', t.sut.port))

        def ask(rid, pad, body=cmd, flags=0):
            req = HDR.pack(MAGIC, VERSION, flags, rid, len(body), 0, 0, 0) + body
            s.send(req + bytes(max(0, pad - len(req))))
            reply = s.recv(70000)
            assert len(reply) <= max(pad, len(req)), 'reply larger than the request'
            return HDR.unpack(reply[:24]), reply[24:]

        (magic, ver, flags, rid, clen, res, vlen, tok), body = ask(0xdeadbeef, 1200)
        assert (magic, ver, flags, rid, res, tok) == (MAGIC, VERSION, F_REPLY, 0xdeadbeef, 0, 0)
        assert (clen, vlen, body) == (11, 5, b'$5\r\nhello\r\n')
        # Unpadded: "$5\r\nhello\r\n" (11 bytes) still fits in the 20-byte command's room.
        assert ask(7, 0)[1] == b'$5\r\nhello\r\n'
        t.sut.call('SET', 'k', 'x' * 100)
        (_, _, flags, rid, clen, _, vlen, _), body = ask(8, 0)
        assert (flags, rid, clen, vlen, body) == (F_REPLY | F_TRUNCATED, 8, 0, 100, b'')
        assert ask(9, 24 + 100 + 16)[1] == b'$100\r\n' + b'x' * 100 + b'\r\n'
        t.sut.call('DEL', 'k')
        assert ask(10, 0)[1] == b'$-1\r\n'
        assert ask(11, 0, b'*1\r\n$4\r\nPING\r\n')[1] == b'+PONG\r\n'
        # MGET: Redis's array; TRUNCATED says how large the whole reply is.
        t.sut.call('SET', 'k', 'hello')
        mget = b'*4\r\n$4\r\nMGET\r\n$1\r\nk\r\n$4\r\nnope\r\n$1\r\nk\r\n'
        want = b'*3\r\n$5\r\nhello\r\n$-1\r\n$5\r\nhello\r\n'
        (_, _, flags, _, clen, _, vlen, _), body = ask(15, 0, mget)
        assert (flags, clen, vlen, body) == (F_REPLY, len(want), 0, want)
        t.sut.call('SET', 'k', 'x' * 100)
        (_, _, flags, _, clen, _, vlen, _), body = ask(16, 0, mget)
        full = 4 + 2 * (6 + 100 + 2) + 5
        assert (flags, clen, vlen, body) == (F_REPLY | F_TRUNCATED, 0, full, b'')
        assert ask(17, 24 + full, mget)[1].startswith(b'*3\r\n$100\r\n')
        assert ask(18, 24 + full - 1, mget)[0][2] == F_REPLY | F_TRUNCATED
        # Not ours (bad magic, or a reply): no answer at all.
        s.send(HDR.pack(0x1234, VERSION, 0, 12, len(cmd), 0, 0, 0) + cmd + bytes(1000))
        s.send(HDR.pack(MAGIC, VERSION, F_REPLY, 13, len(cmd), 0, 0, 0) + cmd + bytes(1000))
        assert ask(14, 1200)[0][3] == 14, 'a stranger datagram was answered'


@test
@xkv_only
def ipv6(t):
    srv = t.spawn('sut', bind='127.0.0.1 ::1')
    srv.call('SET', 'k6', 'over v6')
    assert get(t, srv, 'k6', host='::1')[:3] == (0, b'over v6', 'daemon udp')
    srv.call('SET', 'big6', 'y' * 3000)
    assert get(t, srv, 'big6', host='::1')[:3] == (0, b'y' * 3000, 'daemon udp')
    srv.call('SET', 'huge6', 'w' * 70000)
    assert get(t, srv, 'huge6', host='::1')[:3] == (0, b'w' * 70000, 'tcp')
    assert ctl(t, srv.port, 'stats', host='::1')[0] == 0
    # A name resolving to several addresses: any that refuses moves on to the next.
    assert get(t, t.sut, 'nokey', host='localhost')[:3] == (1, b'', 'daemon udp')


@test
@xkv_only
def requirepass_and_token(t):
    token = 1234567890123
    srv = t.spawn('sut', requirepass='s3cret', **{'fastpath-token': token})
    with srv.client() as c:
        assert c.cmd('AUTH', 's3cret') == b'+OK\r\n'
        assert c.cmd('SET', 'k', 'secret value') == b'+OK\r\n'
    # No token: the daemon says NOAUTH over UDP; TCP without a password says it too.
    rc, out, how, err = get(t, srv, 'k')
    assert (rc, out, how) == (2, b'', 'tcp') and 'NOAUTH' in err, (rc, how, err)
    # The password cures it over TCP.
    assert get(t, srv, 'k', '-P', 's3cret')[:3] == (0, b'secret value', 'tcp')
    assert get(t, srv, 'k', env={'XKV_PASSWORD': 's3cret'})[:3] == (0, b'secret value', 'tcp')
    # The token is what UDP needs.
    assert get(t, srv, 'k', '--token', token)[:3] == (0, b'secret value', 'daemon udp')
    assert get(t, srv, 'nokey', '--token', token)[:3] == (1, b'', 'daemon udp')
    assert get(t, srv, 'k', '--token', token + 1, '-P', 's3cret')[:3] == \
        (0, b'secret value', 'tcp')
    # With fastpath-token set, the token derived from the password is not it.
    assert get(t, srv, 'k', '-a', 's3cret')[:3] == (0, b'secret value', 'tcp')
    # MGET: NOAUTH over UDP goes to TCP with the password; the token serves it over UDP.
    assert mget(t, srv, 'k', 'nokey', opts=('-P', 's3cret'))[:3] == (
        1, [b'secret value', b'(nil)'], 'tcp')
    assert mget(t, srv, 'k', opts=('--token', token))[:3] == (0, [b'secret value'], 'daemon udp')
    rc, _, how, err = get(t, srv, 'k', '-P', 'wrong')
    assert rc == 2 and 'WRONGPASS' in err, (rc, err)
    rc, out, err = ctl(t, srv.port, 'udp', 'PING')
    assert rc == 2 and 'NOAUTH' in err, (rc, err)
    assert ctl(t, srv.port, '--token', token, 'udp', 'PING')[:2] == (0, b'PONG\n')
    rc, out, err = ctl(t, srv.port, 'stats')
    assert rc == 2 and 'NOAUTH' in err, (rc, err)
    assert ctl(t, srv.port, '-P', 's3cret', 'stats')[:2] == (0, b'fastpath_enabled: 0\n')


@test
@xkv_only
def password_derives_the_udp_token(t):
    """requirepass without fastpath-token: -a PASSWORD (like redis-cli) is all UDP
    needs, at once and after CONFIG SET changes the password."""
    srv = t.spawn('sut', requirepass='s3cret')
    with srv.client() as c:
        assert c.cmd('AUTH', 's3cret') == b'+OK\r\n'
        assert c.cmd('SET', 'k', 'v') == b'+OK\r\n'
    assert get(t, srv, 'k', '-a', 's3cret')[:3] == (0, b'v', 'daemon udp')
    assert get(t, srv, 'k', env={'XKV_PASSWORD': 's3cret'})[:3] == (0, b'v', 'daemon udp')
    rc, _, how, err = get(t, srv, 'k')
    assert (rc, how) == (2, 'tcp') and 'NOAUTH' in err, (rc, how, err)
    # A token field of 0 never passes, nor a fastpath-token-style number.
    assert ctl(t, srv.port, '--token', 1, 'udp', 'PING')[0] == 2
    with srv.client() as c:
        assert c.cmd('AUTH', 's3cret') == b'+OK\r\n'
        assert c.cmd('CONFIG', 'SET', 'requirepass', 'n3w') == b'+OK\r\n'
    # The next datagram meets the new rule.
    rc, out, err = ctl(t, srv.port, '-a', 's3cret', 'udp', 'PING')
    assert rc == 2 and 'NOAUTH' in err, (rc, err)
    assert ctl(t, srv.port, '-a', 'n3w', 'udp', 'PING')[:2] == (0, b'PONG\n')
    with srv.client() as c:
        assert c.cmd('AUTH', 'n3w') == b'+OK\r\n'
        assert c.cmd('CONFIG', 'SET', 'fastpath-token', '77') == b'+OK\r\n'
    assert ctl(t, srv.port, '-a', 'n3w', 'udp', 'PING')[0] == 2
    assert ctl(t, srv.port, '--token', 77, 'udp', 'PING')[:2] == (0, b'PONG\n')


@test
@xkv_only
def stats_status_attach_without_fastpath(t):
    assert ctl(t, t.sut.port, 'stats') == (0, b'fastpath_enabled: 0\n', '')
    assert ctl(t, t.sut.port, 'status') == (1, b'fast path: not loaded\n', '')
    for args in (['attach'], ['attach', 'lo'], ['detach']):
        rc, out, err = ctl(t, t.sut.port, *args)
        assert rc == 2 and out == b'', (args, rc, out, err)
        assert err == 'xkvctl: %s: ERR fastpath: the fast path is not loaded\n' % args[0], err
    assert t.sut.responsive()


class FakeUdp:
    """A UDP responder on the server's port (whose own UDP is off): records
    each request, and answers as `respond(n, header, command)` says."""

    def __init__(self, port, respond):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(('127.0.0.1', port))
        self.sock.settimeout(0.1)
        self.respond, self.requests, self.stop = respond, [], False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop:
            try:
                data, peer = self.sock.recvfrom(70000)
            except socket.timeout:
                continue
            self.requests.append(data)
            h = HDR.unpack(data[:24])
            for reply in self.respond(len(self.requests), h, data[24:24 + h[4]]):
                self.sock.sendto(reply, peer)

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


def reply(rid, body, flags=F_REPLY, value_len=0):
    return HDR.pack(MAGIC, VERSION, flags, rid, len(body), 0, value_len, 0) + body


@test
@xkv_only
def retries_and_stale_replies(t):
    srv = t.spawn('sut', **{'udp-port': 0})
    srv.call('SET', 'k', 'from tcp')
    cmd = b'*2\r\n$3\r\nGET\r\n$1\r\nk\r\n'

    def lossy(n, h, command):
        if n == 1:
            return []           # the first request is lost
        rid = h[3]
        return [reply(rid ^ 0x80000000, b'$5\r\nstale\r\n'),     # some other request's
                reply(rid, b'$5\r\nfresh\r\n', F_REPLY | F_KERNEL, 5)]

    fake = FakeUdp(srv.port, lossy)
    try:
        assert get(t, srv, 'k')[:3] == (0, b'fresh', 'kernel')
    finally:
        fake.close()
    assert len(fake.requests) == 2
    ids = set()
    for req in fake.requests:
        magic, ver, flags, rid, clen, res, vlen, tok = HDR.unpack(req[:24])
        assert (magic, ver, flags, clen, res, vlen, tok) == (MAGIC, VERSION, 0, len(cmd), 0, 0, 0)
        assert req[24:24 + clen] == cmd and len(req) == 1200 and not any(req[24 + clen:])
        ids.add(rid)
    assert len(ids) == 2, 'a retry must carry a fresh request id'

    # Nobody answers: 1 + --retries attempts of -t ms, then TCP.
    fake = FakeUdp(srv.port, lambda n, h, command: [])
    try:
        start = time.monotonic()
        assert get(t, srv, 'k', '-t', 100, '--retries', 3, '--pad', 300)[:3] == \
            (0, b'from tcp', 'tcp')
        elapsed = time.monotonic() - start
    finally:
        fake.close()
    assert len(fake.requests) == 4 and {len(r) for r in fake.requests} == {300}
    assert elapsed >= 0.4, elapsed

    # TRUNCATED: asked again padded to 24 + value_len + 16.
    def truncating(n, h, command):
        if n == 1:
            return [reply(h[3], b'', F_REPLY | F_TRUNCATED, 2000)]
        return [reply(h[3], b'$2000\r\n' + b'q' * 2000 + b'\r\n', F_REPLY, 2000)]

    fake = FakeUdp(srv.port, truncating)
    try:
        assert get(t, srv, 'k')[:3] == (0, b'q' * 2000, 'daemon udp')
    finally:
        fake.close()
    assert [len(r) for r in fake.requests] == [1200, 24 + 2000 + 16]

    # Whatever the token, a client without one sends zeros; with one, its 8 bytes.
    fake = FakeUdp(srv.port, lambda n, h, command: [reply(h[3], b'$-1\r\n')])
    try:
        assert get(t, srv, 'k', '--token', 0x0102030405060708)[:3] == (1, b'', 'daemon udp')
    finally:
        fake.close()
    assert struct.unpack('=Q', fake.requests[0][16:24])[0] == 0x0102030405060708


@test
@xkv_only
def no_server_and_usage(t):
    port = free_port()
    start = time.monotonic()
    rc, out, err = ctl(t, port, 'get', 'k')
    assert rc == 2 and 'refused' in err.lower(), (rc, err)
    assert time.monotonic() - start < 5
    rc, out, err = ctl(t, port, 'stats')
    assert rc == 2 and 'refused' in err.lower(), (rc, err)
    for args in ([], ['nosuch'], ['get'], ['get', 'a', 'b'], ['--pad', 10, 'get', 'k'],
                 ['-t', 0, 'get', 'k'], ['--bogus'], ['stats', 'extra'], ['udp']):
        rc, out, err = ctl(t, t.sut.port, *args)
        assert rc == 2 and err, (args, rc, err)
    rc, out, err = ctl(t, t.sut.port, 'help')
    assert rc == 0 and all(c in out for c in (b'get', b'stats', b'status', b'attach', b'detach'))
    rc, out, err = ctl(t, 0, 'get', 'k')    # -p 0
    assert rc == 2, rc


def slot_key(srv, lo, hi, prefix):
    """A key named prefix<n> whose slot is in [lo, hi]."""
    for n in range(10000):
        key = '%s%d' % (prefix, n)
        if lo <= int(srv.call('CLUSTER', 'KEYSLOT', key)) <= hi:
            return key
    raise AssertionError('no key for slots %d-%d' % (lo, hi))


@test
@xkv_only
def libxkv_follows_cluster_redirects(t):
    """libxkv asks the node a MOVED names (and remembers the slot), and the
    node an ASK names after ASKING, for GET and MGET."""
    a, b = (t.spawn('sut', **{'cluster-enabled': 'yes', 'cluster-port': free_port(),
                              'cluster-node-timeout': 2000}) for _ in range(2))
    for srv, (lo, hi), epoch in ((a, (0, 8191), 1), (b, (8192, 16383), 2)):
        assert srv.call('CLUSTER', 'ADDSLOTSRANGE', lo, hi) == b'OK'
        assert srv.call('CLUSTER', 'SET-CONFIG-EPOCH', epoch) == b'OK'
    assert a.call('CLUSTER', 'MEET', '127.0.0.1', b.port, b.directives['cluster-port']) == b'OK'

    def agreed():
        for s in (a, b):
            text = s.call('CLUSTER', 'INFO').decode()
            if 'cluster_state:ok' not in text or 'cluster_known_nodes:2' not in text:
                return False
        return b'handshake' not in a.call('CLUSTER', 'NODES')
    deadline = time.monotonic() + 30
    while not agreed():
        assert time.monotonic() < deadline, [s.call('CLUSTER', 'NODES') for s in (a, b)]
        time.sleep(0.05)
    on_b = slot_key(b, 8192, 16383, 'b')
    assert b.call('SET', on_b, 'from b') == b'OK'
    assert b.call('SET', '{%s}2' % on_b, 'two') == b'OK'
    # Asked of a: MOVED to b, followed.
    rc, value, how, err = get(t, a, on_b)
    assert rc == 0 and value == b'from b', (rc, value, err)
    rc, out, err = ctl(t, a.port, 'mget', on_b, '{%s}2' % on_b, 'nope{%s}' % on_b)
    # Exit status 1: a key is missing.
    assert rc == 1 and out == b'from b\ntwo\n(nil)\n', (rc, out, err)
    # CROSSSLOT is an answer, not a redirect.
    on_a = slot_key(a, 0, 8191, 'a')
    rc, out, err = ctl(t, a.port, 'mget', on_a, on_b)
    assert rc != 0 and 'CROSSSLOT' in err, (rc, out, err)
    # A slot of b migrating to a, its key already moved: b says ASK.
    moving = slot_key(b, 8192, 16383, 'm')
    slot = int(b.call('CLUSTER', 'KEYSLOT', moving))
    a_id, b_id = a.call('CLUSTER', 'MYID').decode(), b.call('CLUSTER', 'MYID').decode()
    assert a.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', b_id) == b'OK'
    assert b.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', a_id) == b'OK'
    with a.client() as c:
        assert c.cmd('ASKING') == b'+OK\r\n'
        assert c.cmd('SET', moving, 'moved') == b'+OK\r\n'
    rc, value, how, err = get(t, b, moving)
    assert rc == 0 and value == b'moved' and how == 'tcp', (rc, value, how, err)
