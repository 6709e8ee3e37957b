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

from harness import (REDIS_CLI, Client, ConnectionClosed, RespError, decode, encode, info_fields,
                     test, wait_until, xkv_only)
from test_dump import SETUP


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

    def bulk_payload(self):
        """$<len>\\r\\n and that many bytes: the RDB file."""
        head = self.line()
        assert head.startswith(b'$'), head
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
    assert sub.call('LRANGE', 'chainlist', 0, -1) == [b'1', b'2']
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
