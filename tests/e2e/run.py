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
import json
import os
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


def tcp(host, *args):
    """One command over TCP; the raw reply line(s)."""
    with socket.create_connection((host, PORT), 2) as s:
        body = b'*%d\r\n' % len(args) + b''.join(
            b'$%d\r\n%s\r\n' % (len(a), a) for a in (x if isinstance(x, bytes) else
                                                        str(x).encode() for x in args))
        s.sendall(body)
        s.settimeout(2)
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


def udp_get(host, key, pad=256, rid=7, family=socket.AF_INET, timeout=1.0):
    """(flags, RESP reply) or None on timeout."""
    cmd = b'*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n' % (len(key), key)
    pkt = HDR.pack(MAGIC, VERSION, 0, rid, len(cmd), 0, 0, 0) + cmd
    pkt += b'\0' * max(0, pad - len(pkt))
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        s.sendto(pkt, (host, PORT))
        try:
            data = s.recv(70000)
        except socket.timeout:
            return None
    magic, _, flags, got_id, cmd_len, _, _, _ = HDR.unpack(data[:HDR.size])
    assert magic == MAGIC and got_id == rid and flags & F_REPLY, data
    return flags, data[HDR.size:HDR.size + cmd_len]


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
    with Entered(pair.client):
        srv.wait_ready(pair.host)
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
            stats = fastpath_stats(pair.host)
        assert first and not first[0] & F_KERNEL, first
        assert second and second[0] & F_KERNEL, (second, stats)
        assert third and third[0] & F_KERNEL, (third, stats)
        assert first[1] == second[1] == third[1] == b'$11\r\nhello world\r\n', (first, second)
        assert missing == (F_REPLY, b'$-1\r\n'), missing
        assert int(stats['fastpath_hits']) >= 2, stats
        assert int(stats['fastpath_admissions']) == 1, stats
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
        assert fields['kernel_reads'] > 0, fields
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
    results as their TCP clients, and hot keys answered by the kernel."""
    ns = Netns('cli')
    srv = Xkvd(ns, '--bind', '127.0.0.1')
    try:
        with Entered(ns):
            srv.wait_ready('127.0.0.1')
        assert 'XDP attached to lo' in srv.log_text(), srv.log_text()
        for kind in ('python', 'node'):
            stats = client_differential(ns, kind)
            print('# %s client: %s' % (kind, json.dumps(stats)))
            assert stats['kernel'] > 20 and stats['udp'] > 50, (kind, stats)
    finally:
        srv.stop()
    token = 1234567890123
    srv = Xkvd(ns, '--bind', '127.0.0.1', '--requirepass', 'pw', '--fastpath-token', str(token))
    try:
        with Entered(ns):
            srv.wait_ready('127.0.0.1')
        for kind in ('python', 'node'):
            stats = client_differential(ns, kind, '--password', 'pw', '--fastpath-token', token)
            assert stats['kernel'] > 20, (kind, stats)
            # The token derived from the password, where the server knows it;
            # else NOAUTH and TCP: the results are TCP's either way.
            client_differential(ns, kind, '--password', 'pw')
    finally:
        srv.stop()
        ns.close()


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
