# SPDX-License-Identifier: GPL-2.0-only
"""Replication, xkvd as the master: the protocol on raw sockets (SYNC, PSYNC,
REPLCONF, the stream's bytes), redis-server 7.0 as a replica (full sync, a
live workload of every type, a partial resync after the link breaks), WAIT,
min-replicas-to-write, ROLE and INFO, redis-cli --rdb and --replica."""

import os
import re
import socket
import subprocess
import time

from harness import (REDIS_CLI, Client, ConnectionClosed, RespError, Server, decode, encode,
                     info_fields, test, wait_until, xkv_only)
from test_dump import SETUP

REDIS_88 = os.environ.get('XKV_REDIS_88', '/work/peers/redis-8.8.0/src/redis-server')


def repl_info(srv):
    return info_fields(srv.call('INFO', 'replication'))['replication']


class Replica:
    """A raw replica connection: sends the handshake, reads what comes."""

    def __init__(self, port):
        self.sock = socket.create_connection(('127.0.0.1', port), timeout=10)
        self.buf = b''

    def close(self):
        self.sock.close()

    def send(self, *args):
        self.sock.sendall(encode(args))

    def _more(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionClosed()
        self.buf += chunk

    def line(self):
        """The next line, keep-alive newlines skipped."""
        while True:
            while b'\n' not in self.buf:
                self._more()
            i = self.buf.index(b'\n')
            line, self.buf = self.buf[:i + 1], self.buf[i + 1:]
            if line != b'\n':
                return line.rstrip(b'\r\n')

    def bulk_payload(self, want_eof=None):
        """$<len>\\r\\n and that many bytes, or diskless $EOF:<mark>\\r\\n, the
        file and the mark: the RDB file."""
        head = self.line()
        assert head.startswith(b'$'), head
        if want_eof is not None:
            assert head.startswith(b'$EOF:') == want_eof, head
        if head.startswith(b'$EOF:'):
            mark = head[5:]
            assert re.match(rb'[0-9a-f]{40}$', mark), head
            while mark not in self.buf:
                self._more()
            i = self.buf.index(mark)
            data, self.buf = self.buf[:i], self.buf[i + len(mark):]
            return data
        n = int(head[1:])
        while len(self.buf) < n:
            self._more()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def stream(self, want, timeout=5.0):
        """Reads until at least want bytes of stream are there (or timeout)."""
        deadline = time.monotonic() + timeout
        self.sock.settimeout(0.2)
        try:
            while len(self.buf) < want and time.monotonic() < deadline:
                try:
                    self._more()
                except socket.timeout:
                    pass
        finally:
            self.sock.settimeout(10)
        data, self.buf = self.buf[:want], self.buf[want:]
        return data


def commands(data):
    """RESP multibulk stream -> list of argument lists."""
    out, i = [], 0
    while i < len(data):
        assert data[i:i + 1] == b'*', data[i:]
        j = data.index(b'\r\n', i)
        n = int(data[i + 1:j])
        i = j + 2
        args = []
        for _ in range(n):
            j = data.index(b'\r\n', i)
            ln = int(data[i + 1:j])
            args.append(data[j + 2:j + 2 + ln])
            i = j + 2 + ln + 2
        out.append(args)
    return out


@test
@xkv_only
def sync_sends_the_file_then_the_stream_as_redis(t):
    a = t.spawn('sut')
    a.call('SET', 'before', '1')
    assert repl_info(a)['repl_backlog_active'] == '0'
    r = Replica(a.port)
    r.send('SYNC')
    rdb = r.bulk_payload()
    # The oldest format that holds the data, so Redis 7.0 replicas load it.
    assert rdb[:9] == b'REDIS0010' and b'before' in rdb
    info = repl_info(a)
    assert info['repl_backlog_active'] == '1' and info['connected_slaves'] == '1'
    assert re.match(r'ip=127\.0\.0\.1,port=0,state=online,offset=0,lag=\d+,io-thread=\d+$',
                    info['slave0']), info['slave0']
    assert 'flags=S ' in a.call('CLIENT', 'LIST', 'TYPE', 'replica').decode()
    start = int(info['master_repl_offset'])
    with a.client() as c:
        c.call('SET', 'k', 'v')
        c.call('SELECT', '3')
        c.call('INCR', 'n')
        c.call('MULTI')
        c.call('SET', 'x', '1')
        c.call('SET', 'y', '2')
        c.call('EXEC')
        c.call('SELECT', '0')
        c.call('SET', 'e', 'v', 'EX', '100')
        c.call('GETDEL', 'k')
        c.call('GET', 'e')                      # reads are not replicated
    want = [[b'SELECT', b'0'], [b'SET', b'k', b'v'], [b'SELECT', b'3'], [b'INCR', b'n'],
            [b'MULTI'], [b'SET', b'x', b'1'], [b'SET', b'y', b'2'], [b'EXEC'],
            [b'SELECT', b'0'], [b'SET', b'e', b'v', b'PXAT'], [b'DEL', b'k']]
    # Each write is in the stream before its reply: the offset is final.
    end = int(repl_info(a)['master_repl_offset'])
    got = commands(r.stream(end - start))
    got[9] = got[9][:4]                         # the deadline itself varies
    assert [[x.upper() if i == 0 else x for i, x in enumerate(cmd)] for cmd in got] == want, got
    r.close()
    wait_until(lambda: repl_info(a)['connected_slaves'] == '0')


@test
@xkv_only
def psync_full_then_continue_from_the_backlog(t):
    a = t.spawn('sut')
    r = Replica(a.port)
    r.send('REPLCONF', 'listening-port', '6390')
    assert r.line() == b'+OK'
    r.send('REPLCONF', 'capa', 'eof', 'capa', 'psync2')
    assert r.line() == b'+OK'
    r.send('PSYNC', '?', '-1')
    m = re.match(rb'\+FULLRESYNC ([0-9a-f]{40}) (\d+)$', r.line())
    assert m, m
    replid, offset = m.group(1).decode(), int(m.group(2))
    r.bulk_payload()
    a.call('SET', 'a', '1')
    info = wait_until(lambda: repl_info(a)['slave0'].find('port=6390') > 0 and repl_info(a))
    assert info['master_replid'] == replid
    got = r.stream(int(info['master_repl_offset']) - offset)
    assert commands(got) == [[b'SELECT', b'0'], [b'SET', b'a', b'1']]
    offset = int(info['master_repl_offset'])
    r.send('REPLCONF', 'ACK', str(offset))
    wait_until(lambda: 'offset=%d,' % offset in repl_info(a)['slave0'])
    assert a.call('ROLE') == [b'master', offset, [[b'127.0.0.1', b'6390', str(offset).encode()]]]
    r.close()
    # Written while the replica is away: it continues where it stopped.
    a.call('SET', 'b', '2')
    a.call('SET', 'c', '3')
    r = Replica(a.port)
    r.send('REPLCONF', 'capa', 'psync2')
    assert r.line() == b'+OK'
    r.send('PSYNC', replid, str(offset + 1))
    assert r.line() == ('+CONTINUE %s' % replid).encode()
    end = int(repl_info(a)['master_repl_offset'])
    assert commands(r.stream(end - offset)) == [[b'SET', b'b', b'2'], [b'SET', b'c', b'3']]
    stats = info_fields(a.call('INFO', 'stats'))['stats']
    assert (stats['sync_full'], stats['sync_partial_ok'], stats['sync_partial_err']) == \
        ('1', '1', '0')
    r.close()
    # Another ID, or an offset the backlog does not hold: a full resync.
    for rid, off in ((replid[::-1], offset + 1), (replid, end + 100)):
        r = Replica(a.port)
        r.send('PSYNC', rid, str(off))
        assert r.line().startswith(b'+FULLRESYNC ' + replid.encode())
        r.bulk_payload()
        r.close()
    assert info_fields(a.call('INFO', 'stats'))['stats']['sync_partial_err'] == '2'


@test
@xkv_only
def a_backlog_exceeded_means_a_full_resync(t):
    a = t.spawn('sut')
    a.call('CONFIG', 'SET', 'repl-backlog-size', '16384')
    r = Replica(a.port)
    r.send('PSYNC', '?', '-1')
    replid, offset = r.line().split()[1:]
    r.bulk_payload()
    r.close()
    wait_until(lambda: repl_info(a)['connected_slaves'] == '0')
    with a.client() as c:
        for i in range(200):
            c.call('SET', 'key%d' % i, 'x' * 500)
    info = repl_info(a)
    assert int(info['repl_backlog_histlen']) < 16384 + 16384 + 600
    assert int(info['repl_backlog_first_byte_offset']) > int(offset) + 1
    r = Replica(a.port)
    r.send('PSYNC', replid.decode(), str(int(offset) + 1))
    assert r.line().startswith(b'+FULLRESYNC')
    r.close()


@test
@xkv_only
def replconf_checks_its_arguments_as_redis(t):
    a = t.spawn('sut')
    with a.client() as c:
        assert c.call('REPLCONF', 'listening-port') == RespError('ERR syntax error')
        assert c.call('REPLCONF', 'nosuch', '1') == \
            RespError('ERR Unrecognized REPLCONF option: nosuch')
        assert c.call('REPLCONF', 'listening-port', 'x') == \
            RespError('ERR value is not an integer or out of range')
        assert c.call('REPLCONF', 'capa', 'whatever') == b'OK'
        # ACK and GETACK from a client that is not a replica: no reply at all.
        c.send('REPLCONF', 'ACK', '10')
        c.send('REPLCONF', 'GETACK', '*')
        assert c.call('PING') == b'PONG'
        assert c.call('PSYNC', 'x', 'notanumber') == \
            RespError('ERR value is not an integer or out of range')
        assert c.call('WAIT', '0', '-1') == RespError('ERR timeout is negative')
        assert c.call('WAIT', '0', '0') == 0
        assert c.call('WAITAOF', '1', '0', '0') == RespError(
            'ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.')
        assert c.call('WAITAOF', '2', '0', '0') == RespError(
            'ERR value is out of range, value must between 0 and 1')
        assert c.call('WAITAOF', '0', '0', '0') == [0, 0]
        # In a script WAIT answers at once (8.8 lets scripts call it).
        assert c.call('EVAL', "return redis.pcall('wait', '1', '0')", '0') == 0
        assert c.call('ROLE') == [b'master', 0, []]


def redis_replica_of(t, master):
    """A redis-server 7.0 replica of master, in sync."""
    rep = t.spawn('ref')
    rep.call('REPLICAOF', '127.0.0.1', master.port)
    wait_until(lambda: repl_info(rep).get('master_link_status') == 'up', timeout=20)
    return rep


def in_sync(master, rep, timeout=10):
    return wait_until(lambda: repl_info(master)['master_repl_offset'] ==
                      repl_info(rep).get('slave_repl_offset'), timeout=timeout)


def same_data(a, b):
    """Every key of databases 0-3, value by value (scores as numbers: 7.0
    prints 0.1 as 0.10000000000000001)."""
    def snapshot(srv):
        out = {}
        with srv.client() as c:
            for db in range(4):
                c.call('SELECT', db)
                for key in c.call('KEYS', '*'):
                    kind = c.call('TYPE', key)
                    if kind == b'string':
                        v = c.call('GET', key)
                    elif kind == b'list':
                        v = c.call('LRANGE', key, 0, -1)
                    elif kind == b'set':
                        v = sorted(c.call('SMEMBERS', key))
                    elif kind == b'zset':
                        r = c.call('ZRANGE', key, 0, -1, 'WITHSCORES')
                        v = [(r[i], float(r[i + 1])) for i in range(0, len(r), 2)]
                    else:
                        v = sorted(c.call('HGETALL', key))
                    out[(db, key)] = (kind, v, c.call('PTTL', key) >= 0)
        return out
    sa, sb = snapshot(a), snapshot(b)
    diff = [k for k in set(sa) | set(sb) if sa.get(k) != sb.get(k)]
    assert not diff, [(k, sa.get(k), sb.get(k)) for k in diff[:5]]
    return len(sa)


def workload(srv, n, seed):
    """Writes of every type, transactions, scripts, expiries, databases."""
    import random
    rnd = random.Random(seed)
    with srv.client() as c, srv.client() as c3:
        c3.call('SELECT', 3)
        for i in range(n):
            k = 'k%d' % rnd.randrange(100)
            op = rnd.randrange(16)
            steps = [
                ('SET', k, rnd.randrange(1000)), ('INCR', 'cnt'),
                ('RPUSH', 'l' + k, 1, 2, 3), ('LPOP', 'l' + k), ('SADD', 's' + k, rnd.randrange(40)),
                ('SPOP', 's' + k), ('HSET', 'h' + k, 'f%d' % rnd.randrange(5), i),
                ('ZADD', 'z' + k, rnd.random(), 'm%d' % rnd.randrange(9)),
                ('SET', 'e' + k, 'x', 'PX', rnd.randrange(1, 30)), ('EXPIRE', k, 1000),
                ('DEL', k), ('EVAL', "redis.call('set', KEYS[1], ARGV[1]) "
                             "redis.call('incr', 'scripted') return 1", 1, 'sc' + k, i),
                ('INCRBYFLOAT', 'fl', '1.5'), ('LMOVE', 'l' + k, 'lm', 'LEFT', 'RIGHT'),
                ('ZINCRBY', 'zz', '0.5', 'm'), ('SETRANGE', 'sr', rnd.randrange(20), 'ab'),
            ]
            if op == 15 and i % 3 == 0:
                c.call('MULTI')
                c.call('INCR', 't1')
                c.call('HSET', 'ht', 'f', i)
                c.call('EXEC')
            elif i % 7 == 0:
                c3.call(*steps[op])
            else:
                c.call(*steps[op])


@test
@xkv_only
def redis_7_replica_full_sync_live_stream_and_partial_resync(t):
    a = t.spawn('sut')
    with a.client() as c:
        for step in SETUP:
            c.call(*step)
        c.call('SET', 'ttl', 'v', 'PX', '100000000')
        c.call('SELECT', 2)
        c.call('SET', 'other', 'db2')
    rep = redis_replica_of(t, a)
    assert same_data(a, rep) > len(SETUP)
    workload(a, 2000, 1)
    time.sleep(0.1)                             # the PX keys of the last writes expire
    assert in_sync(a, rep)
    same_data(a, rep)
    info = repl_info(a)
    assert 'port=%d,state=online' % rep.port in info['slave0'], info
    with a.client() as c:
        c.call('SET', 'w', '1')
        assert c.call('WAIT', 1, 2000) == 1
        assert c.call('WAIT', 2, 200) == 1      # times out with the one it has
        # 7.0 replicas send no FACK (they have no AOF): none counts for WAITAOF.
        assert c.call('WAITAOF', 0, 1, 100) == [0, 0]
    # The link breaks: the replica comes back with PSYNC and continues.
    assert a.call('CLIENT', 'KILL', 'TYPE', 'replica') == 1
    workload(a, 300, 2)
    wait_until(lambda: repl_info(rep).get('master_link_status') == 'up' and
               info_fields(a.call('INFO', 'stats'))['stats']['sync_partial_ok'] == '1',
               timeout=20)
    assert b'Successful partial resynchronization' in rep.log_bytes()
    workload(a, 300, 3)
    time.sleep(0.1)
    assert in_sync(a, rep)
    same_data(a, rep)
    stats = info_fields(a.call('INFO', 'stats'))['stats']
    assert (stats['sync_full'], stats['sync_partial_ok']) == ('1', '1')


@test
@xkv_only
def min_replicas_to_write_refuses_writes_without_good_replicas(t):
    a = t.spawn('sut')
    a.call('CONFIG', 'SET', 'min-replicas-to-write', 1)
    assert a.call('SET', 'k', 'v') == RespError('NOREPLICAS Not enough good replicas to write.')
    assert a.call('GET', 'k') is None
    with a.client() as c:
        c.call('MULTI')
        assert c.call('SET', 'k', 'v') == RespError(
            'NOREPLICAS Not enough good replicas to write.')
        assert c.call('EXEC') == RespError(
            'EXECABORT Transaction discarded because of previous errors.')
    rep = redis_replica_of(t, a)
    # Good once the replica has acked (each second) and the cron counted it.
    assert wait_until(lambda: a.call('SET', 'k', 'v') == b'OK', timeout=5)
    assert repl_info(a)['min_slaves_good_slaves'] == '1'
    assert in_sync(a, rep) and rep.call('GET', 'k') == b'v'


@test
@xkv_only
def redis_cli_rdb_and_replica_work(t):
    a = t.spawn('sut')
    with a.client() as c:
        for step in SETUP:
            c.call(*step)
    path = os.path.join(a.dir, 'cli.rdb')
    out = subprocess.run([REDIS_CLI, '-p', str(a.port), '--rdb', path], capture_output=True,
                         timeout=30)
    assert out.returncode == 0, out
    check = subprocess.run(['redis-check-rdb', path], capture_output=True, timeout=30)
    assert check.returncode == 0 and b'%d keys read' % len({s[1] for s in SETUP}) in check.stdout, \
        check.stdout
    proc = subprocess.Popen([REDIS_CLI, '-p', str(a.port), '--replica'], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: repl_info(a).get('slave0', '').find('online') > 0)
        a.call('SET', 'seen', 'by-cli')
        time.sleep(0.5)
    finally:
        proc.terminate()
        text = proc.communicate(timeout=10)[0]
    assert b'"SELECT","0"' in text and b'"SET","seen","by-cli"' in text, text


def xkvd_replica_of_redis(t, diskless):
    m = t.spawn('ref', **{'repl-diskless-sync': 'yes' if diskless else 'no',
                          'repl-diskless-sync-delay': 0})
    with m.client() as c:
        for step in SETUP:
            c.call(*step)
        c.call('SET', 'ttl', 'v', 'PX', '100000000')
        c.call('SELECT', 2)
        c.call('SET', 'other', 'db2')
    rep = t.spawn('sut')
    rep.call('SET', 'mine', 'goes away')
    assert rep.call('REPLICAOF', '127.0.0.1', m.port) == b'OK'
    assert rep.call('REPLICAOF', '127.0.0.1', m.port) == b'OK Already connected to specified master'
    wait_until(lambda: repl_info(rep).get('master_link_status') == 'up', timeout=20)
    assert rep.call('EXISTS', 'mine') == 0
    assert same_data(m, rep) > len(SETUP)
    workload(m, 1500, 4)
    time.sleep(0.1)
    assert in_sync(m, rep)
    same_data(m, rep)
    info = repl_info(rep)
    assert (info['role'], info['master_host'], info['master_port'], info['slave_read_only']) == \
        ('slave', '127.0.0.1', str(m.port), '1')
    assert info['master_replid'] == repl_info(m)['master_replid']
    off = int(info['slave_repl_offset'])
    assert rep.call('ROLE')[:4] == [b'slave', b'127.0.0.1', m.port, b'connected']
    assert rep.call('SET', 'k', 'v') == RespError(
        'READONLY You can\'t write against a read only replica.')
    assert 'flags=M ' in rep.call('CLIENT', 'LIST').decode()
    # The master's WAIT is answered through REPLCONF GETACK.
    m.call('SET', 'acked', '1')
    assert m.call('WAIT', 1, 5000) == 1
    assert off <= int(repl_info(rep)['slave_repl_offset'])
    return m, rep


@test
@xkv_only
def xkvd_replica_of_redis_7_diskless_then_partial_resync(t):
    m, rep = xkvd_replica_of_redis(t, True)
    assert b'Full resync from master' in rep.log_bytes()
    # The link breaks: xkvd asks to continue and gets the writes it missed.
    assert m.call('CLIENT', 'KILL', 'TYPE', 'slave') == 1
    m.call('SET', 'while', 'away')
    wait_until(lambda: info_fields(m.call('INFO', 'stats'))['stats']['sync_partial_ok'] == '1',
               timeout=20)
    wait_until(lambda: repl_info(rep).get('master_link_status') == 'up', timeout=20)
    assert b'Successful partial resynchronization with master.' in rep.log_bytes()
    workload(m, 300, 5)
    time.sleep(0.1)
    assert in_sync(m, rep)
    same_data(m, rep)
    # Promoted: writable, a master of its own.
    assert rep.call('REPLICAOF', 'NO', 'ONE') == b'OK'
    assert rep.call('SET', 'k', 'v') == b'OK'
    assert repl_info(rep)['role'] == 'master'
    assert wait_until(lambda: repl_info(m)['connected_slaves'] == '0')


@test
@xkv_only
def xkvd_replica_of_redis_7_disk_based_and_a_chain(t):
    m, rep = xkvd_replica_of_redis(t, False)
    # A replica of the replica gets what the replica applies.
    sub = redis_replica_of(t, rep)
    m.call('SET', 'chained', 'yes')
    m.call('RPUSH', 'chainlist', 1, 2)
    assert wait_until(lambda: sub.call('GET', 'chained') == b'yes', timeout=10)
    # The RPUSH comes after the SET: it may not be there yet.
    assert wait_until(lambda: sub.call('LRANGE', 'chainlist', 0, -1) == [b'1', b'2'], timeout=10)
    same_data(m, sub)


@test
@xkv_only
def replicaof_checks_its_arguments(t):
    a = t.spawn('sut')
    with a.client() as c:
        assert c.call('REPLICAOF', '127.0.0.1', 'x') == RespError('ERR Invalid master port')
        assert c.call('REPLICAOF', 'NO', 'ONE') == b'OK'
        assert c.call('ROLE')[0] == b'master'
        # A master that is not there (a port bound, never listening: refused):
        # a replica whose link is down, retried.
        hole = socket.socket()
        hole.bind(('127.0.0.1', 0))
        assert c.call('SLAVEOF', '127.0.0.1', hole.getsockname()[1]) == b'OK'
        info = repl_info(a)
        assert info['role'] == 'slave' and info['master_link_status'] == 'down'
        assert c.call('ROLE')[0] == b'slave'
        assert c.call('WAIT', 0, 0) == RespError(
            'ERR WAIT cannot be used with replica instances. Please also note that since Redis '
            '4.0 if a replica is configured to be writable (which is not the default) writes to '
            'replicas are just local and are not propagated.')
        c.call('CONFIG', 'SET', 'replica-read-only', 'no')
        assert c.call('SET', 'k', 'v') == b'OK'
        assert c.call('REPLICAOF', 'NO', 'ONE') == b'OK'
        assert repl_info(a)['role'] == 'master'
        hole.close()


@test
@xkv_only
def shutdown_while_the_link_retries(t):
    a = t.spawn('sut')
    hole = socket.socket()
    hole.bind(('127.0.0.1', 0))
    try:
        assert a.call('REPLICAOF', '127.0.0.1', hole.getsockname()[1]) == b'OK'
        wait_until(lambda: b'Error condition on socket for SYNC' in a.log_bytes())
        start = time.monotonic()
        a.stop()
        # SIGTERM ends it at once (the link thread is stopped), not SIGKILL after 5 s.
        assert a.proc.returncode == 0 and time.monotonic() - start < 4, a.proc.returncode
    finally:
        hole.close()


def restart(srv):
    """Stops srv by PID and starts it again on its port, in its directory."""
    from harness import _die_with_parent
    srv.stop()
    for _ in range(3):      # the port may take a moment to be free again
        with open(srv.log_path, 'ab') as log:
            srv.proc = subprocess.Popen(srv.argv(), stdin=subprocess.DEVNULL, stdout=log,
                                        stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        if srv._wait_ready(10.0):
            return
        srv.stop()
        time.sleep(0.5)
    raise AssertionError(srv.log_tail())


def sync_stats(srv):
    s = info_fields(srv.call('INFO', 'stats'))['stats']
    return int(s['sync_full']), int(s['sync_partial_ok'])


@test
@xkv_only
def psync2_a_promoted_replica_continues_with_its_old_siblings_and_master(t):
    m = t.spawn('sut')
    a, b = t.spawn('sut'), t.spawn('sut')
    ref = redis_replica_of(t, m)                # a Redis 7.0 sibling too
    for r in (a, b):
        assert r.call('REPLICAOF', '127.0.0.1', m.port) == b'OK'
    wait_until(lambda: all(repl_info(r).get('master_link_status') == 'up' for r in (a, b)),
               timeout=20)
    workload(m, 800, 11)
    m.call('SELECT', 0)
    time.sleep(0.1)
    for r in (a, b, ref):
        assert in_sync(m, r)
    old = repl_info(m)
    # The replica's own stream is its master's: same ID, same offset.
    assert repl_info(a)['master_replid'] == old['master_replid']
    off = int(old['master_repl_offset'])
    assert a.call('REPLICAOF', 'NO', 'ONE') == b'OK'
    info = repl_info(a)
    assert info['role'] == 'master' and info['master_replid2'] == old['master_replid']
    assert info['second_repl_offset'] == str(off + 1) and info['master_replid'] != old[
        'master_replid']
    # The old siblings (xkvd and Redis 7.0) and the old master continue with it.
    for r in (b, ref, m):
        assert r.call('REPLICAOF', '127.0.0.1', a.port) == b'OK'
    wait_until(lambda: repl_info(a)['connected_slaves'] == '3' and all(
        repl_info(r).get('master_link_status') == 'up' for r in (b, ref, m)), timeout=20)
    assert sync_stats(a) == (0, 3), (sync_stats(a), a.log_tail())
    workload(a, 300, 12)
    time.sleep(0.1)
    for r in (b, ref, m):
        assert in_sync(a, r)
        same_data(a, r)
    assert repl_info(b)['master_replid'] == info['master_replid']


@test
@xkv_only
def a_replica_serves_the_masters_stream_to_its_replicas_as_it_came(t):
    m = t.spawn('sut')
    a = t.spawn('sut')
    a.call('REPLICAOF', '127.0.0.1', m.port)
    wait_until(lambda: repl_info(a).get('master_link_status') == 'up', timeout=20)
    with m.client() as c:
        c.call('SELECT', 5)
        c.call('SET', 'in5', 'x')
    assert in_sync(m, a)
    sub = Replica(a.port)
    sub.send('PSYNC', '?', '-1')
    head = sub.line()
    assert head.startswith(b'+FULLRESYNC ' + repl_info(m)['master_replid'].encode()), head
    assert int(head.split()[2]) == int(repl_info(m)['master_repl_offset'])
    rdb = sub.bulk_payload()
    assert b'repl-stream-db' in rdb and b'in5' in rdb
    m.call('SET', 'db0', 'y')                   # the master's SELECT 0 comes first
    with m.client() as c:
        c.call('SELECT', 5)
        c.call('INCR', 'n')
    assert in_sync(m, a)
    data = sub.stream(200, timeout=2)
    cmds = [x for x in commands(data) if x[0].upper() != b'PING']
    assert cmds == [[b'SELECT', b'0'], [b'SET', b'db0', b'y'], [b'SELECT', b'5'],
                    [b'INCR', b'n']], cmds
    sub.close()


@test
@xkv_only
def replicaof_at_start_up_and_a_partial_resync_after_a_restart(t):
    m = t.spawn('sut')
    m.call('SET', 'k', 'v')
    r = t.spawn('sut', replicaof='127.0.0.1 %d' % m.port)
    wait_until(lambda: repl_info(r).get('master_link_status') == 'up', timeout=20)
    assert r.call('GET', 'k') == b'v' and repl_info(r)['role'] == 'slave'
    workload(m, 300, 13)
    time.sleep(0.1)
    assert in_sync(m, r)
    restart(r)                                  # SIGTERM saves (save points), then loads
    wait_until(lambda: repl_info(r).get('master_link_status') == 'up', timeout=20)
    # No second full sync (the link may also come back once during the
    # shutdown itself: another partial one).
    full, partial = sync_stats(m)
    assert full == 1 and partial >= 1, (sync_stats(m), r.log_tail())
    assert b'Successful partial resynchronization' in r.log_bytes().split(b'DB loaded')[-1]
    workload(m, 100, 14)
    time.sleep(0.1)
    assert in_sync(m, r)
    same_data(m, r)
    # A master restarted from its file: its replica continues too.
    m.call('CONFIG', 'SET', 'save', '3600 1')
    restart(m)
    wait_until(lambda: repl_info(r).get('master_link_status') == 'up', timeout=20)
    full, partial = sync_stats(m)
    assert full == 0 and partial >= 1, (sync_stats(m), m.log_tail())
    m.call('SET', 'after', 'restart')
    assert wait_until(lambda: r.call('GET', 'after') == b'restart', timeout=10)


@test
@xkv_only
def publish_reaches_the_replicas_subscribers_and_not_the_aof(t):
    a = t.spawn('sut', appendonly='yes')
    ref = redis_replica_of(t, a)
    x = t.spawn('sut')
    x.call('REPLICAOF', '127.0.0.1', a.port)
    wait_until(lambda: repl_info(x).get('master_link_status') == 'up', timeout=20)
    subs = [srv.client() for srv in (ref, x)]
    try:
        for s in subs:
            assert s.call('SUBSCRIBE', 'news') == [b'subscribe', b'news', 1]
        with a.client() as c:
            c.call('SELECT', 2)
            assert c.call('PUBLISH', 'news', 'hello') == 0
            c.call('MULTI')
            c.call('SPUBLISH', 'news', 'sharded')
            c.call('PUBLISH', 'news', 'in-exec')
            c.call('SET', 'k', 'v')
            c.call('EXEC')
        for s in subs:
            got = decode(s.read_reply())
            assert got == [b"message", b"news", b"hello"], (s, got)
            assert decode(s.read_reply()) == [b"message", b"news", b"in-exec"]
    finally:
        for s in subs:
            s.close()
    assert in_sync(a, x) and x.call('SELECT', 2) == b'OK'
    incr = os.path.join(a.dir, 'appendonlydir', 'appendonly.aof.1.incr.aof')
    with open(incr, 'rb') as f:
        aof = f.read()
    assert b'PUBLISH' not in aof.upper() and b'$1\r\nk\r\n' in aof, aof


@test
@xkv_only
def waitaof_counts_the_local_fsync_and_xkvd_replicas_facks(t):
    a = t.spawn('sut')
    assert a.call('WAITAOF', 1, 0, 0) == RespError(
        'ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.')
    m = t.spawn('sut', appendonly='yes', appendfsync='always')
    with m.client() as c:
        assert c.call('WAITAOF', 1, 0, 0) == [1, 0]
        c.call('SET', 'k', 'v')
        assert c.call('WAITAOF', 1, 0, 0) == [1, 0]
    e = t.spawn('sut', appendonly='yes', appendfsync='everysec')
    with e.client() as c:
        c.call('SET', 'k', 'v')
        # Blocks until the once-a-second fsync has it.
        assert c.call('WAITAOF', 1, 0, 5000) == [1, 0]
    n = t.spawn('sut', appendonly='yes', appendfsync='no')
    with n.client() as c:
        c.call('SET', 'k', 'v')
        assert c.call('WAITAOF', 1, 0, 300) == [0, 0]     # never fsynced: times out
    # An xkvd replica with an AOF acks what its AOF holds (FACK).
    r = t.spawn('sut', appendonly='yes', appendfsync='always')
    r.call('REPLICAOF', '127.0.0.1', m.port)
    wait_until(lambda: repl_info(r).get('master_link_status') == 'up', timeout=20)
    plain = redis_replica_of(t, m)                        # 7.0 without AOF: no FACK
    with m.client() as c:
        c.call('SET', 'k2', 'v2')
        assert c.call('WAITAOF', 1, 1, 5000) == [1, 1]
        assert c.call('WAITAOF', 0, 2, 300) == [1, 1]
        assert c.call('WAIT', 2, 5000) == 2
    assert r.call('GET', 'k2') == b'v2' and plain.call('GET', 'k2') == b'v2'


@test
@xkv_only
def kill_9_of_the_primary_loses_no_write_that_wait_acknowledged(t):
    import signal
    import threading
    m = t.spawn('sut', save='')
    r = t.spawn('sut')
    r.call('REPLICAOF', '127.0.0.1', m.port)
    wait_until(lambda: repl_info(r).get('master_link_status') == 'up', timeout=20)
    acked, sent = [], [0]
    # Killed by PID from another thread while writes are in flight.
    killer = threading.Timer(0.5, lambda: os.kill(m.proc.pid, signal.SIGKILL))
    with m.client(timeout=3) as c, m.client(timeout=3) as c2:
        killer.start()
        try:
            for i in range(100000):
                sent[0] = i
                c.send('SET', 'w%d' % i, i)
                c.send('WAIT', 1, 1000)
                c2.send('INCR', 'other%d' % (i % 7))       # a second writer meanwhile
                if decode(c.read_reply()) == b'OK' and decode(c.read_reply()) == 1:
                    acked.append(i)
                c2.read_reply()
        except (ConnectionClosed, OSError):
            pass
        finally:
            killer.join()
    m.proc.wait()
    assert len(acked) > 20, (len(acked), sent)
    with r.client() as c:
        missing = [i for i in acked if c.call('GET', 'w%d' % i) != str(i).encode()]
    assert not missing, missing[:10]


def sentinel_start(t, master_port, name='mymaster'):
    """A redis-sentinel (Debian's) monitoring master_port, quorum 1."""
    import tempfile
    from harness import _die_with_parent, free_port
    exe = '/usr/bin/redis-sentinel'
    d = tempfile.mkdtemp(prefix='xkv-it-sentinel-')
    port = free_port()
    conf = os.path.join(d, 'sentinel.conf')
    with open(conf, 'w') as f:
        f.write('port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor %s 127.0.0.1 %d 1\n'
                'sentinel down-after-milliseconds %s 1000\n'
                'sentinel failover-timeout %s 10000\n' % (port, d, name, master_port, name, name))
    log = open(os.path.join(d, 'sentinel.log'), 'wb')
    args = [exe, conf] if os.path.exists(exe) else [REDIS_SERVER_BIN, conf, '--sentinel']
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
    return proc, port, d


REDIS_SERVER_BIN = '/usr/bin/redis-server'


@test
@xkv_only
def sentinel_fails_over_and_redis_py_follows_the_new_primary(t):
    import shutil
    import signal
    from redis.sentinel import Sentinel
    m = t.spawn('sut')
    reps = [t.spawn('sut'), t.spawn('sut')]
    for r in reps:
        r.call('REPLICAOF', '127.0.0.1', m.port)
    wait_until(lambda: all(repl_info(r).get('master_link_status') == 'up' for r in reps),
               timeout=20)
    proc, sport, sdir = sentinel_start(t, m.port)
    try:
        sen = Sentinel([('127.0.0.1', sport)], socket_timeout=2)
        # It finds the replicas through the primary's INFO.
        assert wait_until(lambda: len(sen.discover_slaves('mymaster')) == 2, timeout=20), \
            open(os.path.join(sdir, 'sentinel.log')).read()[-3000:]
        primary = sen.master_for('mymaster', socket_timeout=2)
        for i in range(100):
            primary.set('before%d' % i, i)
        assert primary.execute_command('WAIT', 2, 2000) == 2
        os.kill(m.proc.pid, signal.SIGKILL)
        m.proc.wait()
        ports = {r.port for r in reps}
        assert wait_until(lambda: _master_port(sen) in ports, timeout=40), \
            open(os.path.join(sdir, 'sentinel.log')).read()[-3000:]
        new = sen.discover_master('mymaster')[1]
        # redis-py reconnects to the new primary through Sentinel.
        assert wait_until(lambda: _try_set(primary, 'after', 'failover'), timeout=20)
        promoted = [r for r in reps if r.port == new][0]
        other = [r for r in reps if r.port != new][0]
        assert repl_info(promoted)['role'] == 'master'
        assert primary.get('before99') == b'99'
        # The other replica follows the new primary (Sentinel reconfigures it).
        assert wait_until(lambda: other.call('GET', 'after') == b'failover', timeout=30), \
            repl_info(other)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(sdir, ignore_errors=True)


def _master_port(sen):
    try:
        return sen.discover_master('mymaster')[1]
    except Exception:
        return None


def _try_set(client, k, v):
    try:
        return client.set(k, v) is True
    except Exception:
        return False


@test
@xkv_only
def failover_hands_over_to_a_synced_replica_as_redis_8_8(t):
    m, a = t.spawn('sut'), t.spawn('sut')
    with m.client() as c:
        assert c.call('FAILOVER') == RespError('ERR FAILOVER requires connected replicas.')
        assert c.call('FAILOVER', 'ABORT') == RespError('ERR No failover in progress.')
        assert c.call('FAILOVER', 'TIMEOUT', 0) == RespError(
            'ERR FAILOVER timeout must be greater than 0')
        assert c.call('FAILOVER', 'BOGUS') == RespError('ERR syntax error')
    a.call('REPLICAOF', '127.0.0.1', m.port)
    wait_until(lambda: repl_info(a).get('master_link_status') == 'up', timeout=20)
    assert a.call('FAILOVER') == RespError('ERR FAILOVER is not valid when server is a replica.')
    assert m.call('FAILOVER', 'TO', '127.0.0.1', 1) == RespError(
        'ERR FAILOVER target HOST and PORT is not a replica.')
    assert m.call('FAILOVER', 'FORCE') == RespError(
        'ERR FAILOVER with force option requires both a timeout and target HOST and IP.')
    workload(m, 300, 21)
    old = repl_info(m)['master_replid']
    assert m.call('FAILOVER', 'TO', '127.0.0.1', a.port) == b'OK'
    wait_until(lambda: repl_info(a)['role'] == 'master' and
               repl_info(m).get('master_link_status') == 'up', timeout=20)
    assert repl_info(m)['master_failover_state'] == 'no-failover'
    assert repl_info(a)['master_replid2'] == old
    assert sync_stats(a) == (0, 1), sync_stats(a)            # the old master continued
    assert b'Failover target 127.0.0.1:%d is synced, failing over.' % a.port in m.log_bytes()
    assert b'MASTER MODE enabled (failover request from' in a.log_bytes()
    a.call('SET', 'after', 'failover')
    assert wait_until(lambda: m.call('GET', 'after') == b'failover', timeout=10)
    same_data(a, m)
    assert m.call('SET', 'k', 'v') == RespError(
        'READONLY You can\'t write against a read only replica.')


@test
@xkv_only
def failover_waits_pauses_writes_times_out_and_aborts(t):
    import threading
    m = t.spawn('sut')
    # A replica that never acks: the failover can only wait for it.
    r = Replica(m.port)
    r.send('REPLCONF', 'listening-port', 1)
    assert r.line() == b'+OK'
    r.send('PSYNC', '?', '-1')
    assert r.line().startswith(b'+FULLRESYNC')
    r.bulk_payload()
    m.call('SET', 'k', '1')
    assert m.call('FAILOVER', 'TO', '127.0.0.1', 1, 'TIMEOUT', 300) == b'OK'
    assert repl_info(m)['master_failover_state'] == 'waiting-for-sync'
    assert m.call('FAILOVER') == RespError('ERR FAILOVER already in progress.')
    assert m.call('REPLICAOF', 'NO', 'ONE') == RespError(
        'ERR REPLICAOF not allowed while failing over.')
    assert m.call('GET', 'k') == b'1'                      # reads go on
    done = []
    writer = threading.Thread(target=lambda: done.append(m.call('SET', 'k', '2')))
    writer.start()
    time.sleep(0.1)
    assert not done                                        # the write is held
    assert wait_until(lambda: repl_info(m)['master_failover_state'] == 'no-failover', timeout=5)
    writer.join(5)
    assert done == [b'OK'] and repl_info(m)['role'] == 'master'
    assert b'FAILOVER to 127.0.0.1:1 aborted: Replica never caught up before timeout' in \
        m.log_bytes()
    # ABORT by hand; FORCE after the timeout turns it into the target's replica.
    assert m.call('FAILOVER', 'TO', '127.0.0.1', 1) == b'OK'
    assert m.call('FAILOVER', 'ABORT') == b'OK'
    assert repl_info(m)['master_failover_state'] == 'no-failover'
    assert m.call('FAILOVER', 'TO', '127.0.0.1', 1, 'TIMEOUT', 100, 'FORCE') == b'OK'
    assert wait_until(lambda: repl_info(m)['master_failover_state'] == 'failover-in-progress',
                      timeout=5)
    assert b'FAILOVER to 127.0.0.1:1 time out exceeded, failing over.' in m.log_bytes()
    assert repl_info(m)['role'] == 'slave'
    assert m.call('FAILOVER', 'ABORT') == b'OK'
    info = repl_info(m)
    assert (info['role'], info['master_failover_state']) == ('master', 'no-failover'), info
    assert m.call('SET', 'k', '3') == b'OK'
    r.close()


@test
@xkv_only
def a_redis_7_replica_loads_streams_with_groups_from_the_full_sync(t):
    a = t.spawn('sut')
    with a.client() as c:
        for i in range(50):
            c.call('XADD', 's', '%d-1' % (i + 1), 'f', i, 'g', 'x' * (i % 5))
        c.call('XDEL', 's', '3-1')
        c.call('XGROUP', 'CREATE', 's', 'g1', '0')
        c.call('XGROUP', 'CREATE', 's', 'g2', '$')
        c.call('XREADGROUP', 'GROUP', 'g1', 'alice', 'COUNT', 5, 'STREAMS', 's', '>')
        c.call('XREADGROUP', 'GROUP', 'g1', 'bob', 'COUNT', 3, 'STREAMS', 's', '>')
        c.call('XACK', 's', 'g1', '1-1', '2-1')
        c.call('HSET', 'h', 'a', 1)
    rep = redis_replica_of(t, a)
    assert b'Done loading RDB' in rep.log_bytes() or repl_info(rep)['master_link_status'] == 'up'

    def view(srv):
        with srv.client() as c:
            groups = [dict(zip(g[::2], g[1::2])) for g in c.call('XINFO', 'GROUPS', 's')]
            for g in groups:
                g.pop(b'lag', None)
            return (c.call('XRANGE', 's', '-', '+'), groups,
                    c.call('XPENDING', 's', 'g1', '-', '+', 100)[:],
                    sorted(x[1] for x in c.call('XINFO', 'CONSUMERS', 's', 'g1')),
                    c.call('HGETALL', 'h'))
    va, vr = view(a), view(rep)
    # XPENDING's idle times differ by the time between the two calls.
    strip = lambda v: (v[0], v[1], [(p[0], p[1], p[3]) for p in v[2]], v[3], v[4])
    assert strip(va) == strip(vr), (strip(va), strip(vr))
    # The stream goes on live.
    a.call('XADD', 's', '100-1', 'f', 'live')
    assert wait_until(lambda: rep.call('XLEN', 's') == 50, timeout=10)


@test
@xkv_only
def lazy_expiry_of_scan_and_getex_propagate_as_redis_88(t):
    """SCAN's lazy expiry goes as plain DELs (no MULTI, as Redis 8.8 does for
    commands that touch arbitrary keys); GETEX with a past deadline as DEL;
    with lazyexpire-nested-arbitrary-keys no, SCAN in MULTI deletes nothing."""
    a = t.spawn('sut')
    r = Replica(a.port)
    r.send('SYNC')
    r.bulk_payload()
    off0 = int(repl_info(a)['master_repl_offset'])
    with a.client() as c:
        c.call('DEBUG', 'SET-ACTIVE-EXPIRE', 0)
        c.call('SET', 'foo1', 'bar', 'PX', 1)
        c.call('SET', 'foo2', 'bar', 'PX', 1)
        time.sleep(0.01)
        start = int(repl_info(a)['master_repl_offset'])
        r.stream(start - off0)                  # the SETs before
        c.call('SCAN', 0)
        c.call('SET', 'g', 'v')
        c.call('GETEX', 'g', 'EXAT', 1)
        c.call('SET', 'n', 'v', 'PX', 1)
        assert c.call('CONFIG', 'SET', 'lazyexpire-nested-arbitrary-keys', 'no') == b'OK'
        time.sleep(0.01)
        c.call('MULTI')
        c.call('SCAN', 0)
        assert c.call('EXEC')[0][1] == []
        c.call('SET', 'x', '1')
        c.call('CONFIG', 'SET', 'lazyexpire-nested-arbitrary-keys', 'yes')
        c.call('DEBUG', 'SET-ACTIVE-EXPIRE', 1)
        end = int(repl_info(a)['master_repl_offset'])
    got = commands(r.stream(end - start))
    got = [[x.upper() if i == 0 else x for i, x in enumerate(cmd)] for cmd in got]
    assert sorted(got[:2]) == [[b'DEL', b'foo1'], [b'DEL', b'foo2']], got
    assert got[2:4] == [[b'SET', b'g', b'v'], [b'DEL', b'g']], got
    assert got[4][:3] == [b'SET', b'n', b'v'] and got[5:] == [[b'SET', b'x', b'1']], got
    r.close()


@test
@xkv_only
def redis_8_8_and_7_replicas_of_a_diskless_xkvd_master(t):
    m = t.spawn('sut', **{'repl-diskless-sync': 'yes', 'repl-diskless-sync-delay': 1})
    with m.client() as c:
        for i in range(300):
            c.call('SET', 'k%d' % i, 'v%d' % i)
        c.call('HSET', 'h', 'f', 'x')
    reps = [redis_replica_of(t, m)]
    if os.path.exists(REDIS_88):
        r88 = Server('redis', redis_binary=REDIS_88, label='redis-8.8',
                     directives={'repl-diskless-load': 'swapdb'}).start()
        t.spawned.append(r88)
        r88.call('REPLICAOF', '127.0.0.1', m.port)
        wait_until(lambda: repl_info(r88).get('master_link_status') == 'up', timeout=20)
        reps.append(r88)
    m.call('SET', 'after', 'sync')
    for rep in reps:
        assert in_sync(m, rep)
        assert rep.call('GET', 'k299') == b'v299' and rep.call('HGET', 'h', 'f') == b'x'
        assert rep.call('GET', 'after') == b'sync' and rep.call('DBSIZE') == 302


def _full_sync_start(port, capa_eof):
    """A replica's PSYNC ? -1; its +FULLRESYNC comes with the fork."""
    r = Replica(port)
    if capa_eof:
        r.send('REPLCONF', 'capa', 'eof', 'capa', 'psync2')
        assert r.line() == b'+OK'
    r.send('PSYNC', '?', '-1')
    return r


def _full_sync_file(r, want_eof):
    assert r.line().startswith(b'+FULLRESYNC ')
    return r.bulk_payload(want_eof=want_eof)


@test
@xkv_only
def diskless_sync_waits_for_more_replicas_and_frames_the_file_with_an_eof_mark(t):
    # A delay nobody waits out: the fork starts when the second replica is
    # there (repl-diskless-sync-max-replicas), both from the same child.
    a = t.spawn('sut', **{'repl-diskless-sync': 'yes', 'repl-diskless-sync-delay': 1000,
                          'repl-diskless-sync-max-replicas': 2})
    a.call('SET', 'before', '1')
    r1 = _full_sync_start(a.port, True)
    wait_until(lambda: 'slave0' in repl_info(a))
    assert 'state=wait_bgsave' in repl_info(a)['slave0']
    a.call('SET', 'during', '2')              # after the SYNC, before the fork
    r2 = _full_sync_start(a.port, True)
    f1, f2 = _full_sync_file(r1, True), _full_sync_file(r2, True)
    assert f1 == f2 and f1[:5] == b'REDIS' and b'before' in f1 and b'during' in f1
    wait_until(lambda: all('state=online' in repl_info(a).get('slave%d' % i, '')
                           for i in (0, 1)))
    a.call('SET', 'after', '3')
    end = int(repl_info(a)['master_repl_offset'])     # the file was at offset 0
    for r in (r1, r2):
        assert [b'SET', b'after', b'3'] in commands(r.stream(end))
        r.close()
    # A replica without capa eof gets the file by length, and at once.
    r3 = _full_sync_start(a.port, False)
    assert b'after' in _full_sync_file(r3, False)
    r3.close()
    # Disk-based sync: by length, capa eof or not.
    a.call('CONFIG', 'SET', 'repl-diskless-sync', 'no')
    r4 = _full_sync_start(a.port, True)
    assert b'after' in _full_sync_file(r4, False)
    r4.close()
