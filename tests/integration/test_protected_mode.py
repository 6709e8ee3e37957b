# SPDX-License-Identifier: GPL-2.0-only
"""protected-mode: with no password, a TCP client that is not on the loopback
interface gets Redis's -DENIED message and is disconnected. Runs in a network
namespace of its own (a veth pair with a private address), removed after."""

import ctypes
import os
import socket

from harness import Server, info_fields, test

CLONE_NEWNET = 0x40000000
ADDR = '10.231.7.1'
libc = ctypes.CDLL(None, use_errno=True)


def ip(*args):
    import subprocess
    subprocess.run(('ip',) + args, check=True, capture_output=True)


class Namespace:
    """A namespace with lo and a veth pair (ADDR on one end); the calling
    thread is inside it (and processes it starts) until exit."""

    def __enter__(self):
        self.name = 'xkv-it-%d-pm' % os.getpid()
        ip('netns', 'add', self.name)
        try:
            ip('-n', self.name, 'link', 'set', 'lo', 'up')
            ip('-n', self.name, 'link', 'add', 'pm0', 'type', 'veth', 'peer', 'name', 'pm1')
            ip('-n', self.name, 'addr', 'add', ADDR + '/24', 'dev', 'pm0')
            ip('-n', self.name, 'link', 'set', 'pm0', 'up')
            ip('-n', self.name, 'link', 'set', 'pm1', 'up')
            self.home = os.open('/proc/self/ns/net', os.O_RDONLY)
            fd = os.open('/var/run/netns/' + self.name, os.O_RDONLY)
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), 'setns')
            finally:
                os.close(fd)
        except BaseException:
            ip('netns', 'del', self.name)
            raise
        return self

    def __exit__(self, *exc):
        libc.setns(self.home, CLONE_NEWNET)
        os.close(self.home)
        ip('netns', 'del', self.name)


def greeting(port, host=ADDR, send=None):
    """What the server says to a fresh connection from host (all of it, until
    it closes or goes quiet), and whether it closed."""
    with socket.create_connection((host, port), timeout=5) as s:
        if send:
            s.sendall(send)
        s.settimeout(1.0)
        data = b''
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    return data, True
                data += chunk
        except socket.timeout:
            return data, False
        except ConnectionResetError:
            return data, True


def scenario(t, kind):
    srv = Server(kind, binary=t.env.xkvd, engine=t.env.engine,
                 directives={'bind': '127.0.0.1 ' + ADDR}).start()
    t.spawned.append(srv)
    try:
        out = [greeting(srv.port)]
        # Loopback is always let in.
        out.append(greeting(srv.port, '127.0.0.1', b'PING\r\n'))
        with srv.client() as c:
            out.append(info_fields(c.call('INFO', 'stats'))['stats']['rejected_connections'])
            out.append(c.call('CONFIG', 'GET', 'protected-mode'))
            out.append(c.cmd('CONFIG', 'SET', 'protected-mode', 'no'))
            out.append(greeting(srv.port, send=b'PING\r\n'))
            out.append(c.cmd('CONFIG', 'SET', 'protected-mode', 'yes'))
            out.append(greeting(srv.port, send=b'PING\r\n'))
            # A password lifts it: the client is asked to authenticate instead.
            out.append(c.cmd('CONFIG', 'SET', 'requirepass', 'pw'))
            out.append(greeting(srv.port, send=b'PING\r\n'))
    finally:
        srv.stop()
    return out


@test
def protected_mode_denies_remote_clients(t):
    with Namespace():
        got = t.same(lambda srv: scenario(t, srv.kind), 'protected mode')
    assert got[0][0].startswith(b'-DENIED Redis is running in protected mode') and got[0][1], got
    assert got[1] == (b'+PONG\r\n', False), got
    assert got[2] == '1', got
    assert got[5] == (b'+PONG\r\n', False) and got[7][0].startswith(b'-DENIED'), got
    assert got[9][0].startswith(b'-NOAUTH'), got


@test
def protected_mode_config(t):
    t.compare([('CONFIG', 'GET', 'protected-mode'),
               ('CONFIG', 'SET', 'protected-mode', 'maybe'),
               ('CONFIG', 'SET', 'protected-mode', 'no'),
               ('CONFIG', 'GET', 'protected-mode'),
               ('CONFIG', 'SET', 'protected-mode', 'YES'),
               ('CONFIG', 'GET', 'protected-mode')])
