# SPDX-License-Identifier: GPL-2.0-only
"""Diskless replication: the master streams its child's file to the replicas
of one fork as it comes (back-pressure from the slowest, a replica leaving
mid-transfer, one that takes nothing for repl-timeout); the replica loads a
master's file straight from the socket (repl-diskless-load on-empty-db and
swapdb, the old data kept until the new file is whole); bad input on either
side ends a link, never a server."""

import os
import select
import socket
import time

from harness import (ConnectionClosed, RespError, Server, info_fields, test, wait_until,
                     xkv_only)
from test_replication import (REDIS_88, Replica, _full_sync_start, in_sync, repl_info)


def used_memory(srv):
    """What the server's allocations hold (INFO memory's used_memory: not
    its RSS, which a sanitizer's quarantine inflates)."""
    return int(info_fields(srv.call('INFO', 'memory'))['memory']['used_memory'])


def _read_for(r, seconds):
    """Reads what comes for that long, and whether anything did."""
    r.sock.settimeout(0.2)
    got = False
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            try:
                r._more()
                got = True
            except socket.timeout:
                pass
    finally:
        r.sock.settimeout(10)
    return got


def _read_until_idle(r, idle=1.0, limit=30.0):
    """Reads until nothing comes for idle seconds (or limit passes)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and _read_for(r, idle):
        pass


def _head(r):
    """+FULLRESYNC, then the $EOF:<mark> line: the mark."""
    assert r.line().startswith(b'+FULLRESYNC ')
    head = r.line()
    assert head.startswith(b'$EOF:') and len(head) == 45, head
    return head[5:]


def _rest_of_file(r, mark, limit=60.0):
    """The file up to its end mark (what follows stays in r.buf)."""
    return _rest_of_files([(r, mark)], limit)[0]


def _rest_of_files(pairs, limit=60.0):
    """Reads every (replica, mark) at once, as a group's transfer goes at
    its slowest replica's pace; their files, up to each mark."""
    bufs = [bytearray(r.buf) for r, _ in pairs]
    done = [None] * len(pairs)
    deadline = time.monotonic() + limit
    socks = {r.sock: i for i, (r, _) in enumerate(pairs)}
    for r, _ in pairs:
        r.sock.setblocking(False)
    try:
        while None in done and time.monotonic() < deadline:
            ready, _, _ = select.select([s for s, i in socks.items() if done[i] is None],
                                        [], [], 0.5)
            for sk in ready:
                i = socks[sk]
                r, mark = pairs[i]
                chunk = sk.recv(1 << 20)
                if not chunk:
                    raise ConnectionClosed()
                start = max(0, len(bufs[i]) - len(mark))
                bufs[i] += chunk
                at = bufs[i].find(mark, start)
                if at >= 0:
                    done[i] = bytes(bufs[i][:at])
                    r.buf = bytes(bufs[i][at + len(mark):])
    finally:
        for r, _ in pairs:
            r.sock.setblocking(True)
            r.sock.settimeout(10)
    assert None not in done, 'no end mark after %s bytes' % [len(b) for b in bufs]
    return done


# A file of about 45 MB (uncompressed): far more than the transfer's window (512 KiB) and
# than what loopback sockets buffer.
BIG_KEYS, BIG_SIZE = 200000, 200


def _big_master(t, **directives):
    m = t.spawn('sut', **dict({'repl-diskless-sync': 'yes', 'repl-diskless-sync-delay': 1000,
                               'repl-diskless-sync-max-replicas': 2, 'rdbcompression': 'no'},
                              **directives))
    m.call('DEBUG', 'POPULATE', BIG_KEYS, 'key', BIG_SIZE)
    return m


@test
@xkv_only
def a_diskless_transfer_goes_at_the_slowest_replicas_pace_in_bounded_memory(t):
    m = _big_master(t)
    before = used_memory(m)
    slow, fast = _full_sync_start(m.port, True), _full_sync_start(m.port, True)
    mark_s, mark_f = _head(slow), _head(fast)
    assert mark_s == mark_f                        # one child, one mark
    # The slow one reads nothing: the fast one stops short of the end, and
    # the master holds no copy of the file meanwhile.
    _read_until_idle(fast)
    assert mark_f not in fast.buf and len(fast.buf) < BIG_KEYS * BIG_SIZE
    grown = used_memory(m) - before
    assert grown < BIG_KEYS * BIG_SIZE // 4, 'master grew %d bytes' % grown
    assert 'state=send_bulk' in repl_info(m)['slave0']
    # Once it reads, both get the whole file, the same bytes.
    fs, ff = _rest_of_files([(slow, mark_s), (fast, mark_f)])
    assert fs == ff and fs[:5] == b'REDIS' and len(fs) > BIG_KEYS * BIG_SIZE
    wait_until(lambda: all('state=online' in repl_info(m).get('slave%d' % i, '')
                           for i in (0, 1)))
    m.call('SET', 'after', 'x')
    end = int(repl_info(m)['master_repl_offset'])
    for r in (slow, fast):
        assert b'after' in r.stream(end)
        r.close()


@test
@xkv_only
def a_replica_leaving_mid_transfer_does_not_stop_the_others(t):
    m = _big_master(t)
    quitter = _full_sync_start(m.port, True)
    rep = Server('redis', redis_binary=REDIS_88 if os.path.exists(REDIS_88) else None,
                 label='replica').start()
    t.spawned.append(rep)
    rep.call('REPLICAOF', '127.0.0.1', m.port)
    _head(quitter)
    while len(quitter.buf) < 1 << 20:
        quitter._more()
    quitter.close()
    wait_until(lambda: repl_info(rep).get('master_link_status') == 'up', timeout=60)
    assert rep.call('DBSIZE') == BIG_KEYS
    assert rep.call('GET', 'key:%d' % (BIG_KEYS - 1)) == m.call('GET', 'key:%d' % (BIG_KEYS - 1))
    m.call('SET', 'after', 'x')
    assert in_sync(m, rep)
    # The last target of a transfer leaving stops the child; the master
    # goes on, and syncs the next replica.
    lone = _full_sync_start(m.port, True)
    m.call('CONFIG', 'SET', 'repl-diskless-sync-max-replicas', 1)
    _head(lone)
    lone.close()
    wait_until(lambda: 'rdb_bgsave_in_progress:0' in m.call('INFO', 'persistence').decode(),
               timeout=30)
    again = _full_sync_start(m.port, True)
    mark = _head(again)
    assert _rest_of_file(again, mark)[:5] == b'REDIS'
    again.close()


@test
@xkv_only
def a_replica_taking_nothing_for_repl_timeout_is_closed_and_the_rest_finish(t):
    m = _big_master(t, **{'repl-timeout': 2})
    stuck, ok = _full_sync_start(m.port, True), _full_sync_start(m.port, True)
    _head(stuck)
    mark = _head(ok)
    assert _rest_of_file(ok, mark)[:5] == b'REDIS'
    # The stuck one was closed: after what its socket held, the end.
    try:
        while True:
            stuck._more()
            stuck.buf = b''
    except ConnectionClosed:
        pass
    assert b'Disconnecting timedout replica (full sync)' in m.log_bytes()
    ok.close()
    stuck.close()


# ---- the replica's side: repl-diskless-load ---------------------------------------------------

def _old_data(rep, n=100):
    with rep.client() as c:
        for i in range(n):
            c.call('SET', 'old:%d' % i, 'v%d' % i)


def _loaded_from_socket(rep):
    return b'MASTER <-> REPLICA sync: Loading DB in memory' in rep.log_bytes()


def _master_data(m):
    with m.client() as c:
        for i in range(500):
            c.call('SET', 'k:%d' % i, 'v%d' % i)
        c.call('RPUSH', 'list', 'a', 'b', 'c')
        c.call('HSET', 'hash', 'f', 'x')
        c.call('ZADD', 'zset', 1, 'one', 2, 'two')
        c.call('SELECT', 3)
        c.call('SET', 'in3', 'yes')


def _check_synced(m, rep):
    wait_until(lambda: repl_info(rep).get('master_link_status') == 'up', timeout=30)
    assert rep.call('EXISTS', 'old:1') == 0
    assert rep.call('DBSIZE') == m.call('DBSIZE') == 503
    assert rep.call('GET', 'k:499') == b'v499' and rep.call('LRANGE', 'list', 0, -1) == \
        [b'a', b'b', b'c']
    with rep.client() as c:
        c.call('SELECT', 3)
        assert c.call('GET', 'in3') == b'yes'
    m.call('SET', 'after', 'sync')
    assert in_sync(m, rep)
    assert rep.call('GET', 'after') == b'sync'


@test
@xkv_only
def each_repl_diskless_load_mode_against_redis_8_8_and_xkvd_masters(t):
    masters = [('xkvd', t.spawn('sut', **{'repl-diskless-sync': 'yes',
                                          'repl-diskless-sync-delay': 0}))]
    if os.path.exists(REDIS_88):
        r88 = Server('redis', redis_binary=REDIS_88, label='redis-8.8',
                     directives={'repl-diskless-sync': 'yes',
                                 'repl-diskless-sync-delay': 0}).start()
        t.spawned.append(r88)
        masters.append(('redis-8.8', r88))
        # A disk-based master sends $<len>: loaded from the socket too.
        r88d = Server('redis', redis_binary=REDIS_88, label='redis-8.8-disk',
                      directives={'repl-diskless-sync': 'no'}).start()
        t.spawned.append(r88d)
        masters.append(('redis-8.8-disk', r88d))
    for _, m in masters:
        _master_data(m)
    for name, m in masters:
        for mode, from_socket in (('swapdb', True), ('flushdb', True), ('on-empty-db', False),
                                  ('disabled', False)):
            rep = t.spawn('sut', **{'repl-diskless-load': mode})
            _old_data(rep)
            rep.call('REPLICAOF', '127.0.0.1', m.port)
            _check_synced(m, rep)
            assert _loaded_from_socket(rep) == from_socket, (name, mode)
            assert info_fields(rep.call('INFO', 'persistence'))['persistence']['loading'] == '0'
            m.call('DEL', 'after')
            rep.stop()
        # on-empty-db with nothing there: from the socket.
        rep = t.spawn('sut', **{'repl-diskless-load': 'on-empty-db'})
        rep.call('REPLICAOF', '127.0.0.1', m.port)
        _check_synced(m, rep)
        assert _loaded_from_socket(rep), name
        m.call('DEL', 'after')
        rep.stop()


# ---- bad input: a fake master -------------------------------------------------------------------

class FakeMaster:
    """Accepts a replica, answers its handshake, then sends what a test
    wants after +FULLRESYNC."""

    def __init__(self):
        self.lsock = socket.socket()
        self.lsock.bind(('127.0.0.1', 0))
        self.lsock.listen(4)
        self.lsock.settimeout(20)
        self.port = self.lsock.getsockname()[1]
        self.conn = None

    def handshake(self):
        self.conn, _ = self.lsock.accept()
        self.conn.settimeout(20)
        buf = b''
        while True:
            while True:
                cmd, rest = _parse_command(buf)
                if cmd is None:
                    break
                buf = rest
                name = cmd[0].upper()
                if name == b'PING':
                    self.conn.sendall(b'+PONG\r\n')
                elif name == b'PSYNC':
                    return
                else:
                    self.conn.sendall(b'+OK\r\n')
            chunk = self.conn.recv(65536)
            assert chunk, 'the replica left during the handshake'
            buf += chunk

    def full_resync(self):
        self.conn.sendall(b'+FULLRESYNC ' + b'a' * 40 + b' 0\r\n')

    def close(self):
        if self.conn:
            self.conn.close()
        self.lsock.close()


def _parse_command(buf):
    """One RESP array of bulk strings from buf: (args, rest) or (None, buf)."""
    if not buf.startswith(b'*') or b'\r\n' not in buf:
        return None, buf
    i = buf.index(b'\r\n')
    n, pos, args = int(buf[1:i]), i + 2, []
    for _ in range(n):
        j = buf.find(b'\r\n', pos)
        if j < 0:
            return None, buf
        ln = int(buf[pos + 1:j])
        if len(buf) < j + 2 + ln + 2:
            return None, buf
        args.append(buf[j + 2:j + 2 + ln])
        pos = j + 2 + ln + 2
    return args, buf[pos:]


def _an_rdb(t):
    """A valid file (Redis 7.0's SAVE) of 2000 keys."""
    src = t.spawn('ref')
    with src.client() as c:
        for i in range(2000):
            c.call('SET', 'new:%d' % i, 'x' * 100)
    src.call('SAVE')
    with open(os.path.join(src.dir, 'dump.rdb'), 'rb') as f:
        return f.read()


MARK = b'0123456789abcdef0123456789abcdef01234567'


def _feed(t, mode, payload, pause_at=None):
    """An xkvd replica (repl-diskless-load mode, 100 keys of its own) of a
    fake master sending +FULLRESYNC and payload (closed after it, or held
    open at pause_at bytes until the test closes it). Returns the replica,
    the fake master, and what the replica said while loading (if paused)."""
    rep = t.spawn('sut', **{'repl-diskless-load': mode})
    _old_data(rep)
    fm = FakeMaster()
    rep.call('REPLICAOF', '127.0.0.1', fm.port)
    fm.handshake()
    fm.full_resync()
    during = None
    if pause_at is not None:
        fm.conn.sendall(payload[:pause_at])
        wait_until(lambda: int(info_fields(rep.call('INFO', 'persistence'))['persistence']
                               .get('loading_loaded_bytes', 0)) > 0, timeout=10)
        during = (info_fields(rep.call('INFO', 'persistence'))['persistence'],
                  rep.call('GET', 'old:1'), rep.call('PING'), rep.call('CONFIG', 'GET', 'port'))
    else:
        fm.conn.sendall(payload)
    fm.close()
    # Done: the link is up, or the attempt failed and loading is over.
    wait_until(lambda: repl_info(rep).get('master_link_status') == 'up' or
               ((b'Failed trying to load' in rep.log_bytes() or
                 b'Bad protocol from MASTER' in rep.log_bytes()) and
                info_fields(rep.call('INFO', 'persistence'))['persistence']['loading'] == '0'),
               timeout=10)
    return rep, fm, during


def _kept_old_data(rep):
    assert rep.alive()
    got = (rep.call('DBSIZE'), rep.call('GET', 'old:99'))
    assert got == (100, b'v99'), got
    assert rep.call('EXISTS', 'new:1') == 0
    assert repl_info(rep)['master_link_status'] == 'down'
    assert info_fields(rep.call('INFO', 'persistence'))['persistence']['loading'] == '0'


@test
@xkv_only
def swapdb_keeps_the_old_data_through_truncated_and_badly_marked_files(t):
    rdb = _an_rdb(t)
    eof = b'$EOF:' + MARK + b'\r\n'
    cases = {
        'cut mid-file': eof + rdb[:len(rdb) // 2],
        'cut before the mark': eof + rdb,
        'wrong mark': eof + rdb + b'f' * 40,
        'cut $len file': b'$%d\r\n' % len(rdb) + rdb[:len(rdb) - 100],
        'garbage file': eof + b'REDIS0010' + os.urandom(5000) + MARK,
        'file shorter than its $len': b'$%d\r\n' % (len(rdb) + 50) + rdb + b'x' * 10,
    }
    for what, payload in cases.items():
        rep, _, _ = _feed(t, 'swapdb', payload)
        assert b'Failed trying to load the MASTER synchronization DB from socket' in \
            rep.log_bytes(), what
        _kept_old_data(rep)
        rep.stop()
    # The master dies mid-transfer: clients got -LOADING meanwhile, INFO
    # said loading, then the old data is back.
    rep, _, during = _feed(t, 'swapdb', eof + rdb, pause_at=len(eof) + len(rdb) // 3)
    persistence, get, ping, config = during
    assert persistence['async_loading'] == '0' and int(persistence['loading_loaded_bytes']) > 0
    assert persistence['loading_total_bytes'] == '0'          # a file framed by a mark
    # As Redis: PING is refused too, CONFIG (flagged loading) is not.
    loading = RespError('LOADING Redis is loading the dataset in memory')
    assert get == loading and ping == loading and config == [b'port', str(rep.port).encode()]
    _kept_old_data(rep)
    rep.stop()
    # Stopped mid-load: nothing half-loaded is saved (as Redis, no save
    # while loading), and it exits.
    rep = t.spawn('sut', **{'repl-diskless-load': 'swapdb'})
    _old_data(rep)
    rep.call('SAVE')
    dump = os.path.join(rep.dir, 'dump.rdb')
    saved = open(dump, 'rb').read()
    fm = FakeMaster()
    rep.call('REPLICAOF', '127.0.0.1', fm.port)
    fm.handshake()
    fm.full_resync()
    fm.conn.sendall(eof + rdb[:len(rdb) // 2])
    wait_until(lambda: int(info_fields(rep.call('INFO', 'persistence'))['persistence']
                           .get('loading_loaded_bytes', 0)) > 0, timeout=10)
    rep.proc.terminate()
    assert rep.proc.wait(10) == 0
    assert open(dump, 'rb').read() == saved
    assert b'not saving' in rep.log_bytes()
    fm.close()
    # A whole file with the right mark: loaded, the old data gone.
    rep, fm, _ = _feed(t, 'swapdb', eof + rdb + MARK)
    wait_until(lambda: b'Swapping active DB with loaded DB' in rep.log_bytes())
    assert rep.call('DBSIZE') == 2000 and rep.call('EXISTS', 'old:1') == 0
    rep.stop()


@test
@xkv_only
def bad_headers_and_other_modes_fail_cleanly(t):
    rdb = _an_rdb(t)
    eof = b'$EOF:' + MARK + b'\r\n'
    # Garbage where $<len> goes: nothing is loaded or flushed, whatever the mode.
    for mode in ('swapdb', 'flushdb', 'disabled'):
        for head in (b'$12x4\r\n', b'$-5\r\n', b'hello\r\n', b'$EOF:short\r\n'):
            rep, _, _ = _feed(t, mode, head + rdb)
            assert b'Bad protocol from MASTER' in rep.log_bytes(), (mode, head)
            _kept_old_data(rep)
            rep.stop()
    # flushdb: flushed first, so a cut file leaves nothing (as Redis).
    rep, _, _ = _feed(t, 'flushdb', eof + rdb[:len(rdb) // 2])
    assert b'Failed trying to load' in rep.log_bytes()
    assert rep.alive() and rep.call('DBSIZE') == 0
    rep.stop()
    # disabled: the file is read whole first; a cut one changes nothing.
    rep, _, _ = _feed(t, 'disabled', eof + rdb[:len(rdb) // 2])
    wait_until(lambda: repl_info(rep).get('master_link_status') == 'down')
    time.sleep(0.2)
    _kept_old_data(rep)
    rep.stop()


@test
@xkv_only
def the_master_survives_replicas_sending_garbage(t):
    m = t.spawn('sut', **{'repl-diskless-sync': 'yes', 'repl-diskless-sync-delay': 0})
    _master_data(m)
    good = t.spawn('sut')
    good.call('REPLICAOF', '127.0.0.1', m.port)
    wait_until(lambda: repl_info(good).get('master_link_status') == 'up', timeout=20)
    for junk in (os.urandom(4096), b'*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$999999\r\n',
                 b'*-7\r\n', b'$5\r\nhello\r\n' * 100, b'REPLCONF ACK notanumber\r\n'):
        r = _full_sync_start(m.port, True)
        r.sock.sendall(junk)           # mid-transfer, or as the stream's ACKs
        try:
            _read_for(r, 0.3)
        except ConnectionClosed:
            pass
        r.close()
    assert m.alive() and m.call('PING') == b'PONG'
    m.call('SET', 'still', 'here')
    assert in_sync(m, good)
    assert good.call('GET', 'still') == b'here'
