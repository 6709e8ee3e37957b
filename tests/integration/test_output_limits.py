# SPDX-License-Identifier: GPL-2.0-only
"""client-output-buffer-limit for the normal class: a client that pipelines
big replies without reading them is disconnected past the hard limit at
once, past the soft limit after its seconds, and the server serves others."""

import socket

from harness import HOST, encode, test, wait_until, xkv_only

BIG = b'x' * 100000


def greedy_client(srv):
    """A client with a tiny receive buffer that never reads its replies."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect((HOST, srv.port))
    s.sendall(encode(('CLIENT', 'SETNAME', 'greedy')))
    # Named before anything watches for the name to go away.
    assert s.recv(5) == b'+OK\r\n'
    return s


def named_greedy(srv):
    return b'name=greedy ' in srv.call('CLIENT', 'LIST')


def pipeline_until_closed(srv, s):
    """Keeps pipelining GETs of the big value, a batch at a time (so the
    pending replies keep growing past a soft limit's seconds), until the
    server drops the client. True if it did within 20 s."""
    batch = encode(('GET', 'big')) * 20

    def step():
        try:
            s.sendall(batch)
        except OSError:
            return True
        return not named_greedy(srv)
    return wait_until(step, timeout=20, interval=0.1)


def closed(s, timeout=10.0):
    """Reads (and drops) until the server closes s; True if it did."""
    s.settimeout(timeout)
    try:
        while s.recv(1 << 20):
            pass
    except ConnectionResetError:
        pass
    except socket.timeout:
        return False
    return True


def run_limit(srv, limit):
    with srv.client() as c:
        assert c.cmd('CONFIG', 'SET', 'client-output-buffer-limit', limit) == b'+OK\r\n'
        assert c.cmd('SET', 'big', BIG) == b'+OK\r\n'
    s = greedy_client(srv)
    try:
        gone = pipeline_until_closed(srv, s)
        # Everyone else is still served.
        with srv.client() as c:
            assert c.cmd('PING') == b'+PONG\r\n'
            assert c.call('STRLEN', 'big') == len(BIG)
        return (bool(gone), named_greedy(srv), closed(s))
    finally:
        s.close()
        with srv.client() as c:
            c.cmd('CONFIG', 'SET', 'client-output-buffer-limit', 'normal 0 0 0')


@test
def normal_hard_limit_disconnects(t):
    assert t.same(lambda srv: run_limit(srv, 'normal 1mb 0 0'), 'disconnected') == (True, False, True)


@test
def normal_soft_limit_disconnects(t):
    assert t.same(lambda srv: run_limit(srv, 'normal 0 512kb 1'), 'disconnected') == (True, False, True)


@test
@xkv_only
def unlimited_client_gets_every_reply(t):
    srv = t.sut
    with srv.client() as c:
        assert c.cmd('SET', 'big', BIG) == b'+OK\r\n'
        assert c.call('CONFIG', 'GET', 'client-output-buffer-limit')[1].startswith(b'normal 0 0 0')
    with srv.client(timeout=30) as c:
        c.send_raw(encode(('GET', 'big')) * 200)
        for _ in range(200):
            assert c.read_reply() == b'$100000\r\n' + BIG + b'\r\n'


@test
@xkv_only
def limit_is_logged_as_redis(t):
    srv = t.sut
    assert run_limit(srv, 'normal 1mb 0 0') == (True, False, True)
    log = srv.log_bytes().decode('utf-8', 'replace')
    assert wait_until(lambda: 'name=greedy' in srv.log_bytes().decode('utf-8', 'replace')
                      and 'scheduled to be closed ASAP for overcoming of output buffer '
                      'limits.' in srv.log_bytes().decode('utf-8', 'replace')), log[-2000:]
