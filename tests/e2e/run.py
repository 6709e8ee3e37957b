#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""End-to-end tests of the kernel fast path, printed as TAP.

Every test makes its own network namespaces (each with its own lo) and, where
it needs a wire, a veth pair between a server namespace and a client
namespace, and removes them afterwards. xkvd runs inside the server namespace
with the XDP program attached; the test talks to it from the client namespace
(this process enters it with setns). Every process is stopped by PID."""

import argparse
import ctypes
import hashlib
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLONE_NEWNET = 0x40000000
MAGIC, VERSION = 0x584b, 1
F_REPLY, F_TRUNCATED, F_KERNEL = 1, 2, 4
HDR = struct.Struct('!HBBIHHIQ')
PORT = 7379
libc = ctypes.CDLL(None, use_errno=True)
TESTS = []
OUTPUT = os.path.join(REPO, '.output')


def test(fn):
    TESTS.append(fn)
    return fn


def sh(*args, check=True):
    return subprocess.run(args, check=check, capture_output=True, text=True).stdout


class Netns:
    """A named network namespace with lo up; removed on close."""

    def __init__(self, tag):
        self.name = 'xkv-e2e-%d-%s' % (os.getpid(), tag)
        sh('ip', 'netns', 'add', self.name)
        sh('ip', '-n', self.name, 'link', 'set', 'lo', 'up')

    def close(self):
        sh('ip', 'netns', 'del', self.name, check=False)


class Entered:
    """Runs the with-block's sockets inside a namespace (this thread only)."""

    def __init__(self, ns):
        self.ns = ns

    def __enter__(self):
        self.home = os.open('/proc/self/ns/net', os.O_RDONLY)
        fd = os.open('/var/run/netns/' + self.ns.name, os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), 'setns')
        finally:
            os.close(fd)

    def __exit__(self, *exc):
        libc.setns(self.home, CLONE_NEWNET)
        os.close(self.home)


class Xkvd:
    """xkvd in a namespace, stopped by PID."""

    def __init__(self, ns, *directives):
        self.dir = tempfile.mkdtemp(prefix='xkv-e2e-')
        self.log = os.path.join(self.dir, 'xkvd.log')
        argv = ['ip', 'netns', 'exec', ns.name, os.path.join(OUTPUT, 'xkvd'),
                '--port', str(PORT), '--dir', self.dir, '--threads', '2',
                '--fastpath-admit-threshold', '1',
                # Clients connect from another namespace, without a password.
                '--protected-mode', 'no'] + list(directives)
        with open(self.log, 'wb') as log:
            # `ip netns exec` execs the command: the PID is xkvd's own.
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        self.ns = ns

    def wait_ready(self, host):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError('xkvd exited:\n' + self.log_text())
            try:
                with Entered(self.ns), socket.create_connection((host, PORT), 1):
                    pass
                if 'XDP attached' in self.log_text() or 'fastpath: off' in self.log_text():
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError('xkvd not ready:\n' + self.log_text())

    def log_text(self):
        with open(self.log, errors='replace') as f:
            return f.read()

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def tcp(host, *args, password=None):
    """One command over TCP (after AUTH password, if given); the raw reply line(s)."""
    with socket.create_connection((host, PORT), 2) as s:
        s.settimeout(2)
        if password is not None:
            s.sendall(b'*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n' % (len(password), password))
            data = b''
            while not data.endswith(b'\r\n'):
                data += s.recv(65536)
            assert data == b'+OK\r\n', data
        body = b'*%d\r\n' % len(args) + b''.join(
            b'$%d\r\n%s\r\n' % (len(a), a) for a in (x if isinstance(x, bytes) else
                                                        str(x).encode() for x in args))
        s.sendall(body)
        data = b''
        while not data.endswith(b'\r\n') or data.startswith(b'$') and data.count(b'\r\n') < 2:
            data += s.recv(65536)
        return data


def fastpath_stats(host):
    with socket.create_connection((host, PORT), 2) as s:
        s.sendall(b'*2\r\n$8\r\nFASTPATH\r\n$5\r\nSTATS\r\n')
        s.settimeout(2)
        data = b''
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            data += s.recv(65536)
            parts = data.split(b'\r\n')
            if parts[0].startswith(b'*') and len(parts) >= 2 * int(parts[0][1:]) + 1:
                break
        words = [p for p in data.split(b'\r\n')[1:] if p and not p.startswith(b'$')]
        return {words[i].decode(): words[i + 1].decode() for i in range(0, len(words) - 1, 2)}


def derived_token(password):
    """The token a server derives from requirepass (docs/udp-protocol.md), as the
    8 bytes of the header's token field."""
    return hashlib.sha256(b'xkv-fastpath-token:' + password).digest()[:8]


def request(key, rid=7, token=b'\0' * 8, pad=256):
    """A GET request datagram's bytes; token is the 8 raw bytes of its field."""
    cmd = b'*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n' % (len(key), key)
    pkt = HDR.pack(MAGIC, VERSION, 0, rid, len(cmd), 0, 0, 0)[:16] + token + cmd
    return pkt + b'\0' * max(0, pad - len(pkt))


def resp(*args):
    return b'*%d\r\n' % len(args) + b''.join(b'$%d\r\n%s\r\n' % (len(a), a) for a in args)


def udp_exchange(host, cmd, pad=256, rid=7, family=socket.AF_INET, timeout=1.0,
                 token=b'\0' * 8):
    """(request datagram, reply datagram) or (request, None) on timeout; token is
    the 8 raw bytes of the header's field."""
    pkt = HDR.pack(MAGIC, VERSION, 0, rid, len(cmd), 0, 0, 0)[:16] + token + cmd
    pkt += b'\0' * max(0, pad - len(pkt))
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        s.sendto(pkt, (host, PORT))
        try:
            data = s.recv(70000)
        except socket.timeout:
            return pkt, None
    magic, _, flags, got_id, cmd_len, _, _, _ = HDR.unpack(data[:HDR.size])
    assert magic == MAGIC and got_id == rid and flags & F_REPLY, data
    return pkt, data


def udp_cmd(host, cmd, **kw):
    """(flags, RESP reply) or None on timeout."""
    data = udp_exchange(host, cmd, **kw)[1]
    if data is None:
        return None
    flags, cmd_len = HDR.unpack(data[:HDR.size])[2], HDR.unpack(data[:HDR.size])[4]
    return flags, data[HDR.size:HDR.size + cmd_len]


def udp_get(host, key, **kw):
    return udp_cmd(host, resp(b'GET', key), **kw)


def udp_mget(host, *keys, **kw):
    return udp_cmd(host, resp(b'MGET', *keys), **kw)


class Pair:
    """Server and client namespaces joined by a veth pair."""

    def __init__(self, v6=False):
        self.server, self.client = Netns('s'), Netns('c')
        self.dev_s, self.dev_c = 'xkvs%d' % os.getpid(), 'xkvc%d' % os.getpid()
        self.dev_s, self.dev_c = self.dev_s[:15], self.dev_c[:15]
        sh('ip', 'link', 'add', self.dev_s, 'netns', self.server.name, 'type', 'veth',
           'peer', 'name', self.dev_c, 'netns', self.client.name)
        for ns, dev, addr4, addr6 in ((self.server, self.dev_s, '10.199.0.1/24', 'fd99::1/64'),
                                      (self.client, self.dev_c, '10.199.0.2/24', 'fd99::2/64')):
            sh('ip', '-n', ns.name, 'addr', 'add', addr4, 'dev', dev)
            sh('ip', '-n', ns.name, 'addr', 'add', addr6, 'dev', dev, 'nodad')
            sh('ip', '-n', ns.name, 'link', 'set', dev, 'up')
        self.host, self.host6 = '10.199.0.1', 'fd99::1'

    def close(self):
        self.server.close()
        self.client.close()


def start_pair_server(pair, *extra):
    srv = Xkvd(pair.server, '--bind', '0.0.0.0 ::', '--fastpath-interfaces', pair.dev_s,
               '--fastpath-allow', '10.199.0.0/24 fd99::/64', *extra)
    try:
        with Entered(pair.client):
            srv.wait_ready(pair.host)
    except BaseException:
        srv.stop()                     # the caller never gets it to stop
        raise
    return srv


def kernel_and_daemon_agree(pair, mode):
    srv = start_pair_server(pair, '--fastpath-mode', mode)
    try:
        assert 'XDP attached to %s (%s mode)' % (pair.dev_s, mode) in srv.log_text(), \
            srv.log_text()
        with Entered(pair.client):
            assert tcp(pair.host, 'SET', 'k', 'hello world') == b'+OK\r\n'
            first = udp_get(pair.host, b'k')       # daemon answers and admits
            second = udp_get(pair.host, b'k')      # the kernel answers
            third = udp_get(pair.host6, b'k', family=socket.AF_INET6)
            missing = udp_get(pair.host, b'nope')
            assert tcp(pair.host, 'SET', 'k2', 'odd') == b'+OK\r\n'
            mgets = [udp_mget(pair.host, b'k', b'k2', b'k') for _ in range(2)]
            mget6 = udp_mget(pair.host6, b'k2', b'k', family=socket.AF_INET6)
            partial = udp_mget(pair.host, b'k', b'nope', b'k2')
            stats = fastpath_stats(pair.host)
        assert first and not first[0] & F_KERNEL, first
        assert second and second[0] & F_KERNEL, (second, stats)
        assert third and third[0] & F_KERNEL, (third, stats)
        assert first[1] == second[1] == third[1] == b'$11\r\nhello world\r\n', (first, second)
        assert missing == (F_REPLY, b'$-1\r\n'), missing
        # k2 is read first by this MGET (daemon), then the kernel answers it.
        assert not mgets[0][0] & F_KERNEL and mgets[1][0] & F_KERNEL, (mgets, stats)
        assert mget6[0] & F_KERNEL, (mget6, stats)
        both = b'*3\r\n$11\r\nhello world\r\n$3\r\nodd\r\n$11\r\nhello world\r\n'
        assert mgets[0][1] == mgets[1][1] == both, mgets
        assert mget6[1] == b'*2\r\n$3\r\nodd\r\n$11\r\nhello world\r\n', mget6
        assert partial == (F_REPLY, b'*3\r\n$11\r\nhello world\r\n$-1\r\n$3\r\nodd\r\n'), partial
        assert int(stats['fastpath_mget_hits']) == 2, stats
        assert int(stats['fastpath_hits']) >= 2, stats
        assert int(stats['fastpath_admissions']) == 2, stats
    finally:
        srv.stop()


@test
def generic_mode_over_veth():
    pair = Pair()
    try:
        kernel_and_daemon_agree(pair, 'generic')
    finally:
        pair.close()


@test
def native_mode_over_veth():
    pair = Pair()
    try:
        # In native mode a veth drops XDP_TX frames unless its peer runs XDP.
        sh('ip', '-n', pair.client.name, 'link', 'set', 'dev', pair.dev_c, 'xdpdrv', 'obj',
           os.path.join(OUTPUT, 'tests', 'e2e', 'xdp_pass.bpf.o'), 'sec', 'xdp')
        kernel_and_daemon_agree(pair, 'native')
    finally:
        pair.close()


@test
def writes_are_seen_at_once():
    pair = Pair()
    srv = start_pair_server(pair, '--fastpath-mode', 'generic')
    try:
        with Entered(pair.client):
            tcp(pair.host, 'SET', 'k', 'v1')
            udp_get(pair.host, b'k')
            assert udp_get(pair.host, b'k')[0] & F_KERNEL
            for cmd, want in ((('SET', 'k', 'v2'), b'$2\r\nv2\r\n'),
                              (('APPEND', 'k', 'x'), b'$3\r\nv2x\r\n'),
                              (('SET', 'k', '41'), b'$2\r\n41\r\n'),
                              (('INCR', 'k'), b'$2\r\n42\r\n'),
                              (('PEXPIRE', 'k', '0'), b'$-1\r\n')):
                tcp(pair.host, *cmd)
                got = udp_get(pair.host, b'k')
                assert got[1] == want, (cmd, got)
                udp_get(pair.host, b'k')  # re-admit for the next step
            tcp(pair.host, 'SET', 'k', 'v3')
            udp_get(pair.host, b'k')
            for cmd in (('DEL', 'k'), ('FLUSHALL',)):
                tcp(pair.host, 'SET', 'k', 'v3')
                udp_get(pair.host, b'k')
                assert udp_get(pair.host, b'k')[0] & F_KERNEL
                tcp(pair.host, *cmd)
                assert udp_get(pair.host, b'k') == (F_REPLY, b'$-1\r\n'), cmd
    finally:
        srv.stop()
        pair.close()


@test
def replies_never_larger_than_requests():
    """No amplification: for GET and MGET, hits and misses, kernel and daemon,
    the reply datagram is never longer than its request, at every padding
    from none to more than enough. Both the kernel's answers and the daemon's
    TRUNCATED ones must show up along the way."""
    pair = Pair()
    srv = start_pair_server(pair, '--fastpath-mode', 'generic')
    try:
        with Entered(pair.client):
            tcp(pair.host, 'SET', 'a', 'x' * 40)
            tcp(pair.host, 'SET', 'b', 'y' * 300)
            tcp(pair.host, 'SET', 'c', 'z')
            cmds = [resp(b'GET', b'a'), resp(b'GET', b'b'), resp(b'GET', b'nope'),
                    resp(b'MGET', b'a', b'b', b'c'), resp(b'MGET', *[b'c'] * 8),
                    resp(b'MGET', *[b'a'] * 8), resp(b'MGET', *[b'b'] * 9),
                    resp(b'MGET', b'a', b'nope'), resp(b'MGET'), resp(b'PING'),
                    resp(b'SET', b'a', b'b')]
            for cmd in cmds:
                udp_exchange(pair.host, cmd, pad=65000)  # read once: admitted
            seen = set()
            rid = 100
            for cmd in cmds:
                for pad in list(range(0, 24 + len(cmd) + 3000, 97)) + [65000]:
                    rid += 1
                    pkt, reply = udp_exchange(pair.host, cmd, pad=pad, rid=rid)
                    assert reply is not None, (cmd, pad)
                    assert len(reply) <= len(pkt), (cmd, pad, len(pkt), len(reply))
                    flags = HDR.unpack(reply[:HDR.size])[2]
                    seen.add((cmd.split(b'\r\n')[2], flags & (F_KERNEL | F_TRUNCATED)))
            stats = fastpath_stats(pair.host)
        for name in (b'GET', b'MGET'):
            assert (name, F_KERNEL) in seen and (name, F_TRUNCATED) in seen, (seen, stats)
    finally:
        srv.stop()
        pair.close()


@test
def clock_keeps_the_keys_that_are_read():
    """Two slots, admission at the second read: a key read over TCP while cached
    survives the CLOCK sweep, the cold one goes, and must earn its way back."""
    pair = Pair()
    srv = start_pair_server(pair, '--fastpath-mode', 'generic', '--fastpath-slots', '2',
                            '--fastpath-admit-threshold', '2')
    try:
        with Entered(pair.client):
            for key in ('a', 'b', 'c'):
                tcp(pair.host, 'SET', key, 'v' + key)
            for key in ('a', 'b'):
                tcp(pair.host, 'GET', key)
                tcp(pair.host, 'GET', key)          # admitted: a in slot 0, b in slot 1
            tcp(pair.host, 'GET', 'a')              # a cached key read by the daemon
            tcp(pair.host, 'GET', 'c')
            tcp(pair.host, 'GET', 'c')              # admitted: the sweep passes a, takes b
            hot, cold = udp_get(pair.host, b'a'), udp_get(pair.host, b'b')
            stats = fastpath_stats(pair.host)
        assert hot == (F_REPLY | F_KERNEL, b'$2\r\nva\r\n'), (hot, stats)
        assert cold == (F_REPLY, b'$2\r\nvb\r\n'), (cold, stats)
        # b's one read since its eviction is not enough to come back.
        assert int(stats['fastpath_admissions']) == 3, stats
        assert int(stats['fastpath_evictions']) == 1, stats
    finally:
        srv.stop()
        pair.close()


class Resp:
    """One TCP connection for pipelined commands; replies parsed enough for
    simple strings, errors, integers, bulks and flat arrays of those."""

    def __init__(self, host):
        self.sock = socket.create_connection((host, PORT), 5)
        self.sock.settimeout(5)
        self.buf = b''

    def close(self):
        self.sock.close()

    def send(self, *cmds):
        out = []
        for args in cmds:
            args = [a if isinstance(a, bytes) else str(a).encode() for a in args]
            out.append(b'*%d\r\n' % len(args) +
                       b''.join(b'$%d\r\n%s\r\n' % (len(a), a) for a in args))
        self.sock.sendall(b''.join(out))

    def _line(self):
        while b'\r\n' not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise AssertionError('connection closed')
            self.buf += chunk
        line, self.buf = self.buf.split(b'\r\n', 1)
        return line

    def read(self):
        line = self._line()
        if line[:1] == b'$' and int(line[1:]) >= 0:
            n = int(line[1:])
            while len(self.buf) < n + 2:
                self.buf += self.sock.recv(65536)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if line[:1] == b'*':
            return [self.read() for _ in range(int(line[1:]))]
        if line[:1] == b':':
            return int(line[1:])
        return line                      # +OK, -ERR ..., $-1

    def call(self, *args):
        self.send(args)
        return self.read()

    def info(self, section):
        text = self.call('INFO', section).decode()
        return dict(line.split(':', 1) for line in text.split('\r\n') if ':' in line)


FILLER = b'f' * 1000


def settled_memory(c, host):
    """used_memory once start-up is over. The listeners are open before the
    workers run, and a worker allocates its engine's buffers (megabytes) when
    it starts: a limit set from a reading taken before would leave no room.
    A PING answered on each of 16 connections means that every worker (the
    kernel spreads connections over their SO_REUSEPORT listeners) is running,
    with odds of missing one of two below 1 in 30,000; then the reading must
    hold still three times."""
    conns = [Resp(host) for _ in range(16)]
    for conn in conns:
        assert conn.call('PING') == b'+PONG'
        conn.close()
    readings = []
    for _ in range(100):               # at most 5 s
        readings.append(int(c.info('memory')['used_memory']))
        if len(readings) >= 3 and len(set(readings[-3:])) == 1:
            return readings[-1]
        time.sleep(0.05)
    raise AssertionError('used_memory never settled: %s' % readings[-5:])


def kernel_hits_count_as_accesses(policy):
    """Issue 11: under maxmemory, a key read only through the kernel must be as
    safe from eviction as one read over TCP. Both are read once every 50 SETs
    of new keys, 12,000 of them, far past the limit. The fillers are read twice
    each (STRLEN: no admission to the cache), and lfu-log-factor 0 makes every
    access count, so under LFU a key whose kernel hits were not counted would
    rank below every filler.

    The batches are paced to at most 50 SETs per 6 ms, so the 2,600 keys the
    limit holds span about 30 ticks of the 10 ms access clock: written in a
    burst, they all share a few ticks with the hot keys, and sampled LRU
    cannot tell them apart (a slower machine only spreads them more)."""
    pair = Pair()
    srv = None
    try:
        srv = start_pair_server(pair, '--fastpath-mode', 'generic', '--fastpath-slots', '64')
        with Entered(pair.client):
            c = Resp(pair.host)
            base = settled_memory(c, pair.host)
            assert c.call('CONFIG', 'SET', 'maxmemory', base + 3 * 1024 * 1024,
                          'maxmemory-policy', policy, 'lfu-log-factor', '0') == b'+OK'
            # volatile-*: every key has a deadline, far away.
            ttl = (b'EX', b'3600') if policy.startswith('volatile') else ()
            assert c.call('SET', 'kern', 'kv', *ttl) == b'+OK'
            assert c.call('SET', 'tcp', 'tv', *ttl) == b'+OK'
            first = udp_get(pair.host, b'kern')          # the daemon answers and admits
            assert first == (F_REPLY, b'$2\r\nkv\r\n'), first
            hits_before = int(fastpath_stats(pair.host)['fastpath_hits'])
            n, batch, kernel_replies = 12000, 50, 0
            for start in range(0, n, batch):
                paced = time.monotonic() + 0.006
                cmds = []
                for i in range(start, start + batch):
                    key = b'f:%d' % i
                    cmds += [(b'SET', key, FILLER) + ttl, (b'STRLEN', key), (b'STRLEN', key)]
                c.send(*cmds)
                for _ in cmds:
                    reply = c.read()
                    # 0: under LFU a filler can go before its first read.
                    assert reply in (b'+OK', len(FILLER), 0), reply
                got = udp_get(pair.host, b'kern')
                # Only through the kernel: an evicted key would get the
                # daemon's $-1 here, and a key the daemon answers is touched.
                assert got == (F_REPLY | F_KERNEL, b'$2\r\nkv\r\n'), (start, got)
                kernel_replies += 1
                assert c.call('GET', 'tcp') == b'tv', start
                time.sleep(max(0, paced - time.monotonic()))
            stats = fastpath_stats(pair.host)
            evicted = int(c.info('stats')['evicted_keys'])
            kern, tcp_key = c.call('EXISTS', 'kern'), c.call('EXISTS', 'tcp')
            c.close()
        assert evicted > n // 2, evicted
        assert int(stats['fastpath_hits']) - hits_before >= kernel_replies, stats
        assert int(stats['fastpath_hits_collected']) > 0, stats
        assert (kern, tcp_key) == (1, 1), (kern, tcp_key, evicted)
    finally:
        if srv:
            srv.stop()
        pair.close()


@test
def kernel_hits_keep_a_key_under_allkeys_lru():
    kernel_hits_count_as_accesses('allkeys-lru')


@test
def kernel_hits_keep_a_key_under_allkeys_lfu():
    kernel_hits_count_as_accesses('allkeys-lfu')


@test
def kernel_hits_keep_a_key_under_volatile_lru():
    kernel_hits_count_as_accesses('volatile-lru')


@test
def kernel_hits_reach_object_idletime_and_freq():
    """OBJECT IDLETIME and FREQ see the kernel's hits as accesses."""
    pair = Pair()
    srv = None
    try:
        srv = start_pair_server(pair, '--fastpath-mode', 'generic', '--fastpath-slots', '64')
        with Entered(pair.client):
            c = Resp(pair.host)
            assert c.call('CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lfu',
                          'lfu-log-factor', '0') == b'+OK'
            c.call('SET', 'k', 'v')
            assert udp_get(pair.host, b'k') == (F_REPLY, b'$1\r\nv\r\n')   # admitted
            freq = c.call('OBJECT', 'FREQ', 'k')
            for _ in range(20):
                assert udp_get(pair.host, b'k')[0] & F_KERNEL
            # Every access counts with lfu-log-factor 0.
            assert c.call('OBJECT', 'FREQ', 'k') == freq + 20, freq
            assert c.call('CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lru') == b'+OK'
            c.call('SET', 'idle', 'v')
            time.sleep(2.2)                 # two seconds of the access clock
            assert c.call('OBJECT', 'IDLETIME', 'idle') >= 2
            assert c.call('OBJECT', 'IDLETIME', 'k') >= 2
            assert udp_get(pair.host, b'k')[0] & F_KERNEL
            assert c.call('OBJECT', 'IDLETIME', 'k') == 0
            c.close()
    finally:
        if srv:
            srv.stop()
        pair.close()


@test
def the_slab_counts_toward_maxmemory():
    """The mapped slab is in used_memory (INFO memory and MEMORY STATS say how
    much), so a limit between the heap alone and heap plus slab is exceeded."""
    pair = Pair()
    nslots = 4096
    srv = None
    try:
        srv = start_pair_server(pair, '--fastpath-mode', 'generic', '--fastpath-slots', str(nslots))
        with Entered(pair.client):
            c = Resp(pair.host)
            page = os.sysconf('SC_PAGE_SIZE')
            used = settled_memory(c, pair.host)
            mem = c.info('memory')
            slab = int(mem['fastpath_slab_bytes'])
            assert slab == (nslots * 1208 + page - 1) // page * page, mem
            assert used > slab, mem
            stats = c.call('MEMORY', 'STATS')
            stats = dict(zip(stats[::2], stats[1::2]))
            assert stats[b'fastpath.slab'] == slab, stats
            # The slab is there from the start: start-up memory, not data.
            assert stats[b'startup.allocated'] > slab, stats
            assert stats[b'dataset.bytes'] == \
                stats[b'total.allocated'] - stats[b'overhead.total'], stats
            heap = used - slab
            assert c.call('CONFIG', 'SET', 'maxmemory', heap + slab // 2,
                          'maxmemory-policy', 'noeviction') == b'+OK'
            refused = c.call('SET', 'k', 'v')
            assert refused == b"-OOM command not allowed when used memory > 'maxmemory'.", \
                refused
            assert 'is smaller than the current memory usage' in srv.log_text()
            # Room for about 1 MB of keys on top of heap and slab.
            limit = used + 1024 * 1024
            assert c.call('CONFIG', 'SET', 'maxmemory', limit,
                          'maxmemory-policy', 'allkeys-lru') == b'+OK'
            for start in range(0, 3000, 100):
                c.send(*[(b'SET', b'k:%d' % i, FILLER) for i in range(start, start + 100)])
                for _ in range(100):
                    assert c.read() == b'+OK'
            mem = c.info('memory')
            keys = c.call('DBSIZE')
            evicted = int(c.info('stats')['evicted_keys'])
            c.close()
        assert evicted > 0 and keys * len(FILLER) < 1024 * 1024, (evicted, keys)
        # INFO's own buffers are allocated after the eviction that ran before it.
        assert int(mem['used_memory']) <= limit + 16 * 1024, (mem['used_memory'], limit)
    finally:
        if srv:
            srv.stop()
        pair.close()


@test
def clock_keeps_the_keys_the_kernel_serves():
    """As clock_keeps_the_keys_that_are_read, with the hot key read only through
    the kernel: the hand takes its slot's hit count as a reference and passes
    it."""
    pair = Pair()
    srv = None
    try:
        srv = start_pair_server(pair, '--fastpath-mode', 'generic', '--fastpath-slots', '2',
                                '--fastpath-admit-threshold', '2')
        with Entered(pair.client):
            for key in ('a', 'b', 'c'):
                tcp(pair.host, 'SET', key, 'v' + key)
            for key in ('a', 'b'):
                tcp(pair.host, 'GET', key)
                tcp(pair.host, 'GET', key)          # admitted: a in slot 0, b in slot 1
            kernel = udp_get(pair.host, b'a')       # a's slot counts one hit
            tcp(pair.host, 'GET', 'c')
            tcp(pair.host, 'GET', 'c')              # admitted: the sweep passes a, takes b
            hot, cold = udp_get(pair.host, b'a'), udp_get(pair.host, b'b')
            stats = fastpath_stats(pair.host)
        assert kernel == (F_REPLY | F_KERNEL, b'$2\r\nva\r\n'), kernel
        assert hot == (F_REPLY | F_KERNEL, b'$2\r\nva\r\n'), (hot, stats)
        assert cold == (F_REPLY, b'$2\r\nvb\r\n'), (cold, stats)
        assert int(stats['fastpath_evictions']) == 1, stats
        assert int(stats['fastpath_hits_collected']) >= 1, stats
    finally:
        if srv:
            srv.stop()
        pair.close()


@test
def sigkill_leaves_no_kernel_answer():
    pair = Pair()
    srv = start_pair_server(pair, '--fastpath-mode', 'generic')
    try:
        with Entered(pair.client):
            tcp(pair.host, 'SET', 'k', 'v')
            udp_get(pair.host, b'k')
            assert udp_get(pair.host, b'k')[0] & F_KERNEL
            # Frozen: the program is attached but the heartbeat goes stale.
            srv.proc.send_signal(signal.SIGSTOP)
            time.sleep(1.5)
            assert udp_get(pair.host, b'k', timeout=0.5) is None
            srv.proc.send_signal(signal.SIGCONT)
            # The daemon answers the datagram that waited in its socket.
            time.sleep(0.3)
            srv.proc.send_signal(signal.SIGKILL)
            srv.proc.wait(5)
            assert udp_get(pair.host, b'k', timeout=0.5) is None
        xdp = sh('ip', '-n', pair.server.name, '-d', 'link', 'show', pair.dev_s)
        assert 'prog/xdp' not in xdp, xdp
    finally:
        srv.stop()
        pair.close()


def csum(data):
    if len(data) % 2:
        data += b'\0'
    s = sum(struct.unpack('!%dH' % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def mac_bytes(text):
    return bytes(int(x, 16) for x in text.split(':'))


def frame(dmac, smac, src, dst, payload, sport=40000):
    """An Ethernet frame: IPv4 or IPv6 (by the source's form) / UDP to PORT."""
    v6 = ':' in src
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    s, d = socket.inet_pton(fam, src), socket.inet_pton(fam, dst)
    ulen = 8 + len(payload)
    pseudo = s + d + (struct.pack('!IxxxB', ulen, 17) if v6 else struct.pack('!xBH', 17, ulen))
    udp = struct.pack('!HHHH', sport, PORT, ulen, 0) + payload
    udp = udp[:6] + struct.pack('!H', csum(pseudo + udp) or 0xffff) + udp[8:]
    if v6:
        ip = struct.pack('!IHBB', 0x60000000, ulen, 17, 64) + s + d
    else:
        ip = struct.pack('!BBHHHBBH', 0x45, 0, 20 + ulen, 1, 0, 64, 17, 0) + s + d
        ip = ip[:10] + struct.pack('!H', csum(ip)) + ip[12:]
    return dmac + smac + struct.pack('!H', 0x86dd if v6 else 0x0800) + ip + udp


class Wire:
    """Raw frames on the client's end of the veth (AF_PACKET): sends them, and
    counts the xkv replies that come back, by who sent them."""

    def __init__(self, pair):
        with Entered(pair.client):
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
            self.sock.bind((pair.dev_c, 0))
        self.dev = pair.dev_c

    def send(self, data):
        """Sends one frame, after dropping whatever arrived before it."""
        while select.select([self.sock], [], [], 0)[0]:
            self.sock.recv(70000)
        self.sock.send(data)

    def replies(self, wait=0.3):
        """(kernel, daemon) replies seen within `wait` seconds."""
        kernel = daemon = 0
        deadline = time.monotonic() + wait
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                return kernel, daemon
            data, addr = self.sock.recvfrom(70000)
            if addr[2] == socket.PACKET_OUTGOING:
                continue
            proto = struct.unpack('!H', data[12:14])[0]
            l4 = 14 + (40 if proto == 0x86dd else 20)
            if proto not in (0x0800, 0x86dd) or data[23 if proto == 0x0800 else 20] != 17:
                continue
            sport = struct.unpack('!H', data[l4:l4 + 2])[0]
            body = data[l4 + 8:]
            if sport != PORT or len(body) < HDR.size or body[:2] != b'XK':
                continue
            if body[3] & F_KERNEL:
                kernel += 1
            else:
                daemon += 1

    def close(self):
        self.sock.close()


def link_mac(ns, dev):
    out = sh('ip', '-n', ns.name, 'link', 'show', dev)
    return mac_bytes(out.split('link/ether ')[1].split()[0])


def spoofing(pair, mode):
    """Raw frames the kernel must not answer (spoofed loopback sources, group
    and foreign destinations, missing or wrong tokens) next to legitimate ones
    it must, in one server; counted on the wire and in kv_stats."""
    srv = start_pair_server(pair, '--fastpath-mode', mode, '--fastpath-allow',
                            '10.199.0.0/24 fd99::/64 127.0.0.0/8 ::1/128')
    wire = Wire(pair)
    try:
        smac, cmac = link_mac(pair.server, pair.dev_s), link_mac(pair.client, pair.dev_c)
        bcast = b'\xff' * 6
        with Entered(pair.client):
            assert tcp(pair.host, 'SET', 'k', 'v') == b'+OK\r\n'
            udp_get(pair.host, b'k')
            assert udp_get(pair.host, b'k')[0] & F_KERNEL       # cached
            before = fastpath_stats(pair.host)
        req = request(b'k')
        spoofed = [
            # (what, frame, the miss reason it must count as)
            ('loopback source', frame(smac, cmac, '127.0.0.1', '10.199.0.1', req), 'denied'),
            ('loopback to loopback', frame(smac, cmac, '127.0.0.1', '127.0.0.1', req),
             'not_local'),
            ('::1 source', frame(smac, cmac, '::1', 'fd99::1', req), 'denied'),
            ('mapped loopback', frame(smac, cmac, '::ffff:127.0.0.1', 'fd99::1', req),
             'denied'),
            ('mapped peer', frame(smac, cmac, '::ffff:10.199.0.2', 'fd99::1', req), 'denied'),
            ('foreign destination', frame(smac, cmac, '10.199.0.2', '1.2.3.4', req),
             'not_local'),
            ('broadcast MAC', frame(bcast, cmac, '10.199.0.2', '10.199.0.1', req), 'not_local'),
            ('subnet broadcast', frame(bcast, cmac, '10.199.0.2', '10.199.0.255', req),
             'not_local'),
            ('limited broadcast', frame(bcast, cmac, '10.199.0.2', '255.255.255.255', req),
             'not_local'),
            ('broadcast IP, our MAC', frame(smac, cmac, '10.199.0.2', '255.255.255.255', req),
             'not_local'),
            ('multicast', frame(b'\x01\x00\x5e\x00\x00\x01', cmac, '10.199.0.2', '224.0.0.1',
                                req), 'not_local'),
            ('IPv6 multicast', frame(b'\x33\x33\x00\x00\x00\x01', cmac, 'fd99::2', 'ff02::1',
                                     req), 'not_local'),
            ('group source MAC', frame(smac, b'\x03' + cmac[1:], '10.199.0.2', '10.199.0.1',
                                       req), 'not_local'),
        ]
        for what, data, _ in spoofed:
            wire.send(data)
            kernel, _daemon = wire.replies(0.2)
            assert kernel == 0, '%s: answered by the kernel' % what
        with Entered(pair.client):
            after = fastpath_stats(pair.host)
        assert after['fastpath_hits'] == before['fastpath_hits'], (before, after)
        for reason in ('not_local', 'denied'):
            want = sum(1 for s in spoofed if s[2] == reason)
            key = 'fastpath_miss_' + reason
            assert int(after[key]) - int(before[key]) == want, (reason, before, after)
        # The same request, legitimately sent, is answered by the kernel.
        for src, dst in (('10.199.0.2', '10.199.0.1'), ('fd99::2', 'fd99::1')):
            wire.send(frame(smac, cmac, src, dst, req))
            assert wire.replies(0.5)[0] == 1, (src, dst)
    finally:
        wire.close()
        srv.stop()


def token_rules(pair, mode):
    """requirepass without fastpath-token: only the derived token is answered,
    by kernel and daemon; CONFIG SET of either takes effect before its reply."""
    srv = start_pair_server(pair, '--fastpath-mode', mode, '--requirepass', 's3cret')
    wire = Wire(pair)
    try:
        smac, cmac = link_mac(pair.server, pair.dev_s), link_mac(pair.client, pair.dev_c)
        good = derived_token(b's3cret')
        with Entered(pair.client):
            assert tcp(pair.host, 'SET', 'k', 'v', password=b's3cret') == b'+OK\r\n'
            assert udp_get(pair.host, b'k', token=good) == (F_REPLY, b'$1\r\nv\r\n')
            assert udp_get(pair.host, b'k', token=good)[0] & F_KERNEL
            # The daemon refuses what the kernel passes.
            assert udp_get(pair.host, b'k')[1].startswith(b'-NOAUTH')
        for what, tok in (('no token', b'\0' * 8), ('wrong token', b'\1' * 8),
                          ('token 1', struct.pack('=Q', 1))):
            wire.send(frame(smac, cmac, '10.199.0.2', '10.199.0.1', request(b'k', token=tok)))
            kernel, daemon = wire.replies(0.3)
            assert (kernel, daemon) == (0, 1), (what, kernel, daemon)   # NOAUTH
        wire.send(frame(smac, cmac, '10.199.0.2', '10.199.0.1', request(b'k', token=good)))
        assert wire.replies(0.5) == (1, 0)

        # Right after the CONFIG SET reply, with no wait: the old token is refused.
        with Entered(pair.client):
            assert tcp(pair.host, 'CONFIG', 'SET', 'requirepass', 'n3w',
                       password=b's3cret') == b'+OK\r\n'
        wire.send(frame(smac, cmac, '10.199.0.2', '10.199.0.1', request(b'k', token=good)))
        assert wire.replies(0.3)[0] == 0
        new = derived_token(b'n3w')
        wire.send(frame(smac, cmac, '10.199.0.2', '10.199.0.1', request(b'k', token=new)))
        assert wire.replies(0.5)[0] == 1
        with Entered(pair.client):
            assert tcp(pair.host, 'CONFIG', 'SET', 'fastpath-token', '1234567890123',
                       password=b'n3w') == b'+OK\r\n'
        wire.send(frame(smac, cmac, '10.199.0.2', '10.199.0.1', request(b'k', token=new)))
        assert wire.replies(0.3)[0] == 0
        tok = struct.pack('=Q', 1234567890123)
        wire.send(frame(smac, cmac, '10.199.0.2', '10.199.0.1', request(b'k', token=tok)))
        assert wire.replies(0.5)[0] == 1
    finally:
        wire.close()
        srv.stop()


def acl_default_user(pair, mode):
    """A UDP request is the default user's: once its ACL restricts anything
    (here its keys), the kernel answers nothing (miss_acl) and the daemon
    answers as TCP does (NOPERM); an ACL that opens everything again lets the
    kernel answer, both before the ACL SETUSER reply."""
    srv = start_pair_server(pair, '--fastpath-mode', mode)
    wire = Wire(pair)
    try:
        smac, cmac = link_mac(pair.server, pair.dev_s), link_mac(pair.client, pair.dev_c)
        with Entered(pair.client):
            assert tcp(pair.host, 'SET', 'k', 'v') == b'+OK\r\n'
            assert tcp(pair.host, 'SET', 'public:k', 'p') == b'+OK\r\n'
            for key in (b'k', b'public:k'):
                assert udp_get(pair.host, key)[1].startswith(b'$1')  # cached by the daemon
                assert udp_get(pair.host, key)[0] & F_KERNEL
            assert tcp(pair.host, 'ACL', 'SETUSER', 'default', 'resetkeys',
                       '~public:*') == b'+OK\r\n'
            assert udp_get(pair.host, b'k') == (F_REPLY, b'-NOPERM No permissions to access a key\r\n')
            flags, reply = udp_get(pair.host, b'public:k')
            assert (flags & F_KERNEL, reply) == (0, b'$1\r\np\r\n'), (flags, reply)
            assert int(fastpath_stats(pair.host)['fastpath_miss_acl']) >= 2
        wire.send(frame(smac, cmac, '10.199.0.2', '10.199.0.1', request(b'public:k')))
        assert wire.replies(0.5) == (0, 1)
        with Entered(pair.client):
            assert tcp(pair.host, 'ACL', 'SETUSER', 'default', 'allkeys') == b'+OK\r\n'
        wire.send(frame(smac, cmac, '10.199.0.2', '10.199.0.1', request(b'k')))
        assert wire.replies(0.5) == (1, 0)
    finally:
        wire.close()
        srv.stop()


def protected(pair, mode):
    """protected-mode yes, no password: a network in fastpath-allow is served
    by nobody, kernel included; CONFIG SET protected-mode no opens it."""
    srv = Xkvd(pair.server, '--bind', '0.0.0.0 ::', '--fastpath-interfaces', pair.dev_s,
               '--fastpath-allow', '10.199.0.0/24 fd99::/64 127.0.0.0/8', '--fastpath-mode',
               mode, '--protected-mode', 'yes')
    wire = Wire(pair)
    try:
        with Entered(pair.server):
            srv.wait_ready('127.0.0.1')
            assert tcp('127.0.0.1', 'SET', 'k', 'v') == b'+OK\r\n'
            tcp('127.0.0.1', 'GET', 'k')                        # admitted
            stats = fastpath_stats('127.0.0.1')
        assert int(stats['fastpath_slots_used']) == 1, stats
        smac, cmac = link_mac(pair.server, pair.dev_s), link_mac(pair.client, pair.dev_c)
        req = frame(smac, cmac, '10.199.0.2', '10.199.0.1', request(b'k'))
        wire.send(req)
        assert wire.replies(0.5) == (0, 0)                      # nobody answers
        with Entered(pair.server):
            assert int(fastpath_stats('127.0.0.1')['fastpath_miss_denied']) == 1
            assert tcp('127.0.0.1', 'CONFIG', 'SET', 'protected-mode', 'no') == b'+OK\r\n'
        wire.send(req)
        assert wire.replies(0.5) == (1, 0)
    finally:
        wire.close()
        srv.stop()


def in_both_modes(check):
    def run_generic():
        pair = Pair()
        try:
            check(pair, 'generic')
        finally:
            pair.close()

    def run_native():
        pair = Pair()
        try:
            sh('ip', '-n', pair.client.name, 'link', 'set', 'dev', pair.dev_c, 'xdpdrv', 'obj',
               os.path.join(OUTPUT, 'tests', 'e2e', 'xdp_pass.bpf.o'), 'sec', 'xdp')
            check(pair, 'native')
        finally:
            pair.close()

    run_generic.__name__ = check.__name__ + '_generic'
    run_native.__name__ = check.__name__ + '_native'
    test(run_generic)
    test(run_native)


@test
def local_addresses_follow_the_interface():
    """An address added to the interface is answered by the kernel within the
    daemon's one-second refresh of kv_local, and no longer once removed."""
    pair = Pair()
    srv = start_pair_server(pair, '--fastpath-mode', 'generic')
    wire = Wire(pair)
    try:
        smac, cmac = link_mac(pair.server, pair.dev_s), link_mac(pair.client, pair.dev_c)
        with Entered(pair.client):
            assert tcp(pair.host, 'SET', 'k', 'v') == b'+OK\r\n'
            udp_get(pair.host, b'k')
            assert udp_get(pair.host, b'k')[0] & F_KERNEL
        req = frame(smac, cmac, '10.199.0.2', '10.199.0.3', request(b'k'))
        wire.send(req)
        assert wire.replies(0.3)[0] == 0
        sh('ip', '-n', pair.server.name, 'addr', 'add', '10.199.0.3/24', 'dev', pair.dev_s)

        def kernel_answers(want):
            deadline = time.monotonic() + 5   # the refresh is once a second
            while time.monotonic() < deadline:
                wire.send(req)
                if (wire.replies(0.2)[0] > 0) == want:
                    return True
            return False
        assert kernel_answers(True), 'the new address is never answered by the kernel'
        sh('ip', '-n', pair.server.name, 'addr', 'del', '10.199.0.3/24', 'dev', pair.dev_s)
        assert kernel_answers(False), 'the removed address is still answered by the kernel'
        wire.send(req)
        assert wire.replies(0.3)[0] == 0
    finally:
        wire.close()
        srv.stop()
        pair.close()


in_both_modes(spoofing)
in_both_modes(token_rules)
in_both_modes(acl_default_user)
in_both_modes(protected)


@test
def coherence_checker():
    ns = Netns('coh')
    srv = Xkvd(ns, '--bind', '127.0.0.1')
    try:
        with Entered(ns):
            srv.wait_ready('127.0.0.1')
        out = subprocess.run(['ip', 'netns', 'exec', ns.name,
                              os.path.join(OUTPUT, 'tests', 'e2e', 'coherence'), '127.0.0.1',
                              str(PORT), str(ARGS.coherence_ops)],
                             capture_output=True, text=True,
                             timeout=max(600, ARGS.coherence_ops // 20000))   # make soak: 20M+
        print('# ' + out.stdout.strip())
        for line in out.stderr.splitlines()[:20]:
            print('# ' + line)
        assert out.returncode == 0, 'coherence checker failed'
        fields = dict(zip(out.stdout.split()[::2], map(int, out.stdout.split()[1::2])))
        assert fields['stale'] == 0 and fields['ops'] >= ARGS.coherence_ops, fields
        assert fields['kernel_reads'] > 0 and fields['kernel_mget_reads'] > 0, fields
        assert fields['torn'] == 0, fields
    finally:
        srv.stop()
        ns.close()


def client_differential(ns, kind, *args):
    """tests/clients/differential.{py,js} inside ns against the xkvd there:
    the xkv client's stats, after it gave the plain TCP client's results."""
    script = os.path.join(REPO, 'tests', 'clients', 'differential.' + ('js' if kind == 'node'
                                                                      else 'py'))
    exe = shutil.which('node') if kind == 'node' else '/usr/bin/python3'
    assert exe, 'node is not installed (make deps)'
    out = subprocess.run(['ip', 'netns', 'exec', ns.name, exe, script, '--port', str(PORT)]
                         + [str(a) for a in args], capture_output=True, text=True, timeout=120,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, '%s differential (rc %d):\n%s\n%s' % (
        kind, out.returncode, out.stdout, out.stderr[-6000:])
    return json.loads(out.stdout.strip().splitlines()[-1])['stats']


@test
def clients_in_namespace():
    """The Python and Node clients with XDP on the namespace's lo: the same
    results as their TCP clients, and hot keys answered by the kernel, without
    a password, with requirepass and fastpath-token, and with requirepass
    alone (both sides derive the token from the password)."""
    token = 1234567890123
    cases = (((), ()),
             (('--requirepass', 'pw', '--fastpath-token', str(token)),
              ('--password', 'pw', '--fastpath-token', token)),
             (('--requirepass', 'pw'), ('--password', 'pw')))
    ns = Netns('cli')
    try:
        for directives, client_args in cases:
            srv = Xkvd(ns, '--bind', '127.0.0.1', *directives)
            try:
                with Entered(ns):
                    srv.wait_ready('127.0.0.1')
                assert 'XDP attached to lo' in srv.log_text(), srv.log_text()
                for kind in ('python', 'node'):
                    stats = client_differential(ns, kind, *client_args)
                    print('# %s client, %s: %s' % (kind, ' '.join(directives) or 'no password',
                                                   json.dumps(stats)))
                    assert stats['kernel'] > 20 and stats['udp'] > 50, (kind, stats)
                    assert 'noauth' not in stats['reasons'], (kind, stats)
            finally:
                srv.stop()
    finally:
        ns.close()


@test
def cluster_kernel_answers_only_owned_slots():
    """Cluster mode: the kernel answers a key only while this node owns its
    slot, and an MGET only if its keys share one (else the daemon's redirect
    or CROSSSLOT, as TCP would give)."""
    pair = Pair()
    srv = start_pair_server(pair, '--fastpath-mode', 'generic', '--cluster-enabled', 'yes')
    try:
        with Entered(pair.client):
            assert tcp(pair.host, 'CLUSTER', 'ADDSLOTSRANGE', 0, 16383) == b'+OK\r\n'
            deadline = time.monotonic() + 10
            while b'cluster_state:ok' not in tcp(pair.host, 'CLUSTER', 'INFO'):
                assert time.monotonic() < deadline, tcp(pair.host, 'CLUSTER', 'INFO')
                time.sleep(0.05)
            assert tcp(pair.host, 'SET', 'k', 'v') == b'+OK\r\n'
            slot = int(tcp(pair.host, 'CLUSTER', 'KEYSLOT', 'k')[1:])
            udp_get(pair.host, b'k')
            assert udp_get(pair.host, b'k') == (F_REPLY | F_KERNEL, b'$1\r\nv\r\n')
            # The slot unassigned: the daemon answers, with its error.
            assert tcp(pair.host, 'CLUSTER', 'DELSLOTS', slot) == b'+OK\r\n'
            got = udp_get(pair.host, b'k')
            assert got[0] == F_REPLY and got[1].startswith(b'-CLUSTERDOWN'), got
            stats = fastpath_stats(pair.host)
            assert int(stats['fastpath_miss_not_owner']) >= 1, stats
            # Owned again: the kernel's cached copy is good again.
            assert tcp(pair.host, 'CLUSTER', 'ADDSLOTS', slot) == b'+OK\r\n'
            assert udp_get(pair.host, b'k') == (F_REPLY | F_KERNEL, b'$1\r\nv\r\n')
            # {t}a and {t}b share a slot, k is elsewhere.
            for key in ('{t}a', '{t}b'):
                assert tcp(pair.host, 'SET', key, 'w') == b'+OK\r\n'
                udp_get(pair.host, key.encode())
            same = udp_mget(pair.host, b'{t}a', b'{t}b')
            assert same == (F_REPLY | F_KERNEL, b'*2\r\n$1\r\nw\r\n$1\r\nw\r\n'), same
            mixed = udp_mget(pair.host, b'{t}a', b'k')
            assert mixed[0] == F_REPLY and mixed[1].startswith(b'-CROSSSLOT'), mixed
            stats = fastpath_stats(pair.host)
            assert int(stats['fastpath_miss_crossslot']) >= 1, stats
    finally:
        srv.stop()
        pair.close()


def main():
    global ARGS, OUTPUT
    ap = argparse.ArgumentParser()
    ap.add_argument('--output', default=OUTPUT)
    ap.add_argument('--only', default='')
    ap.add_argument('--coherence-ops', type=int, default=1000000)
    ARGS = ap.parse_args()
    OUTPUT = os.path.abspath(ARGS.output)
    tests = [t for t in TESTS if ARGS.only in t.__name__]
    print('TAP version 13\n1..%d' % len(tests))
    failed = 0
    for i, fn in enumerate(tests, 1):
        try:
            fn()
            print('ok %d - e2e:%s' % (i, fn.__name__))
        except Exception:
            failed += 1
            print('not ok %d - e2e:%s' % (i, fn.__name__))
            for line in traceback.format_exc().splitlines():
                print('# ' + line)
        sys.stdout.flush()
    print('# e2e: %d passed, %d failed' % (len(tests) - failed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
