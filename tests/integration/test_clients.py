# SPDX-License-Identifier: GPL-2.0-only
"""The client libraries (clients/python on redis-py, clients/node on ioredis)
against xkvd: tests/clients/differential.{py,js} compare every GET and MGET
of the xkv client with the plain TCP client's on the same server.

The shared servers run with --fastpath no, so UDP is answered by the daemon
here; the kernel's answers to the same clients are tested in tests/e2e
(clients_in_namespace). Node and the package's node_modules come from
`make deps`: missing ones are a failure, not a skip."""

import json
import os
import shutil
import socket
import subprocess

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
    # WRONGTYPE (and MGET, until the server serves it over UDP) are error replies.
    assert stats['reasons'].get('error', 0) > 0, stats


@both
def password_falls_back_or_uses_the_token(t, kind):
    """requirepass without fastpath-token: the client derives the token from
    the password; a server that does not derive it answers NOAUTH, and the
    client asks over TCP. Either way the results are TCP's."""
    srv = t.spawn('sut', requirepass='s3cret pass')
    stats = run(kind, srv, '--password', 's3cret pass')
    assert stats['udp'] > 0 or stats['reasons'].get('noauth', 0) > 0, stats
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
