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

from harness import ConnectionClosed, Server, test, wait_until, xkv_only
from test_replication import (REDIS_88, Replica, _full_sync_start, in_sync, repl_info)


def rss(srv):
    """The server's resident set (bytes), from /proc."""
    with open('/proc/%d/status' % srv.proc.pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) * 1024
    raise AssertionError('no VmRSS')


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
    before = rss(m)
    slow, fast = _full_sync_start(m.port, True), _full_sync_start(m.port, True)
    mark_s, mark_f = _head(slow), _head(fast)
    assert mark_s == mark_f                        # one child, one mark
    # The slow one reads nothing: the fast one stops short of the end, and
    # the master holds no copy of the file meanwhile.
    _read_until_idle(fast)
    assert mark_f not in fast.buf and len(fast.buf) < BIG_KEYS * BIG_SIZE
    grown = rss(m) - before
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
