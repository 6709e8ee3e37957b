# SPDX-License-Identifier: GPL-2.0-only
"""unixsocket and unixsocketperm: the server also listens on a Unix socket
with those permission bits, names its clients by the path with flag U, and
removes the socket file at shutdown."""

import os
import stat
import subprocess
import tempfile

import redis

from harness import REDIS_CLI, REDIS_SERVER, Server, pairs, test, wait_until, xkv_only


def client_fields(line):
    return dict(kv.split('=', 1) for kv in line.decode().split())


def spawn_with_socket(t, role, tmp, perm):
    path = os.path.join(tmp, role + '.sock')
    srv = t.spawn(role, unixsocket=path, unixsocketperm=perm)
    return srv, path


@test
def unix_socket_serves_like_redis(t):
    with tempfile.TemporaryDirectory(prefix='xkv-it-unix-') as tmp:
        seen = {}
        for role in ('ref', 'sut'):
            srv, path = spawn_with_socket(t, role, tmp, '700')
            st = os.stat(path)
            assert stat.S_ISSOCK(st.st_mode), oct(st.st_mode)
            mode = stat.S_IMODE(st.st_mode)
            out = subprocess.run([REDIS_CLI, '-s', path, 'PING'], capture_output=True,
                                 timeout=10).stdout
            r = redis.Redis(unix_socket_path=path)
            try:
                assert r.set('k', 'v') and r.get('k') == b'v'
                info = client_fields(r.execute_command('CLIENT', 'INFO'))
                listed = [client_fields(line.encode()) for line in
                          r.execute_command('CLIENT', 'LIST').decode().splitlines()]
                conf = pairs(r.execute_command('CONFIG', 'GET', 'unixsocket*'))
            finally:
                r.close()
            srv.stop()
            seen[role] = (
                mode, out,
                {k: info[k].replace(path, 'PATH') for k in ('addr', 'laddr', 'flags')},
                [(c['addr'].replace(path, 'PATH'), c['flags']) for c in listed
                 if c['addr'].startswith(path)],
                {k: v.replace(path.encode(), b'PATH') for k, v in conf.items()},
                os.path.exists(path))
        assert seen['ref'] == seen['sut'], seen
        assert seen['sut'][:3] == (0o700, b'PONG\n', {'addr': 'PATH:0', 'laddr': 'PATH:0',
                                                      'flags': 'U'}), seen['sut']
        assert seen['sut'][5] is False, 'socket file left after shutdown'


@test
def unixsocket_config_is_immutable(t):
    # One name per CONFIG GET: Redis lists a pattern's matches in hash order.
    t.compare([('CONFIG', 'GET', 'unixsocket'), ('CONFIG', 'GET', 'unixsocketperm'),
               ('CONFIG', 'SET', 'unixsocket', '/tmp/x.sock'),
               ('CONFIG', 'SET', 'unixsocketperm', '700')])


@test
@xkv_only
def unix_socket_permissions_and_stale_file(t):
    with tempfile.TemporaryDirectory(prefix='xkv-it-unix-') as tmp:
        path = os.path.join(tmp, 'x.sock')
        # A file left at the path (by a crash) is replaced.
        with open(path, 'w') as f:
            f.write('stale')
        srv = Server('xkvd', binary=t.env.xkvd, engine=t.env.engine,
                     directives={'unixsocket': path, 'unixsocketperm': '640'}).start()
        t.spawned.append(srv)
        st = os.stat(path)
        assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o640, oct(st.st_mode)
        # Many connections: the workers share the socket and all serve it.
        conns = [redis.Redis(unix_socket_path=path) for _ in range(8)]
        try:
            for i, r in enumerate(conns):
                assert r.incr('n') == i + 1
            assert int(srv.call('CLIENT', 'LIST').count(b'flags=U')) == 8
        finally:
            for r in conns:
                r.close()
        srv.stop()
        assert not os.path.exists(path)
        assert 'Removing the unix socket file.' in srv.log_bytes().decode()


@test
def unix_socket_only(t):
    """port 0: no TCP listener, the Unix socket alone."""
    def run(srv):
        with tempfile.TemporaryDirectory(prefix='xkv-it-unix-') as tmp:
            path = os.path.join(tmp, 's.sock')
            exe = [REDIS_SERVER, '--save', '', '--daemonize', 'no'] if srv.kind == 'redis' \
                else [t.env.xkvd, '--fastpath', 'no', '--io-engine', t.env.engine]
            proc = subprocess.Popen(exe + ['--port', '0', '--unixsocket', path, '--dir', tmp],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                r = redis.Redis(unix_socket_path=path)
                try:
                    assert wait_until(lambda: os.path.exists(path), timeout=10)
                    ok = wait_until(lambda: pings(r), timeout=10)
                    ports = r.execute_command('CONFIG', 'GET', 'port')
                    listening = tcp_listeners(proc.pid)
                finally:
                    r.close()
            finally:
                proc.terminate()
                proc.wait(10)
            return ok, ports, listening, os.path.exists(path)
    assert t.same(run) == (True, [b'port', b'0'], [], False)


def pings(r):
    try:
        return r.ping()
    except redis.ConnectionError:
        return False


def tcp_listeners(pid):
    """TCP sockets pid listens on (from /proc, by socket inode)."""
    inodes = set()
    fd_dir = '/proc/%d/fd' % pid
    for fd in os.listdir(fd_dir):
        try:
            link = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if link.startswith('socket:['):
            inodes.add(link[8:-1])
    found = []
    for table in ('/proc/%d/net/tcp' % pid, '/proc/%d/net/tcp6' % pid):
        with open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if cols[3] == '0A' and cols[9] in inodes:
                    found.append(cols[1])
    return found
