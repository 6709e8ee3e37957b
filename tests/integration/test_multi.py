# SPDX-License-Identifier: GPL-2.0-only
"""Transactions: MULTI EXEC DISCARD WATCH UNWATCH."""

import threading
import time

from harness import free_port, test, xkv_only


@test
def multi_exec_basics(t):
    for proto in (2, 3):
        t.compare([
            ('MULTI',), ('SET', 'a', '1'), ('INCR', 'a'), ('LPUSH', 'a', 'x'), ('GET', 'a'),
            ('EXEC',), ('GET', 'a'),
            ('EXEC',), ('DISCARD',),
            ('MULTI',), ('MULTI',), ('SET', 'b', '1'), ('DISCARD',), ('GET', 'b'),
            ('MULTI',), ('WATCH', 'a'), ('EXEC',),
            ('MULTI',), ('EXEC',),
            ('FLUSHALL',),
        ], proto=proto)


@test
def exec_abort_on_queue_errors(t):
    t.compare([
        ('MULTI',), ('SET', 'a', '1'), ('NOSUCHCMD', 'x'), ('SET', 'b'), ('EXEC',),
        ('GET', 'a'), ('EXEC',),
        ('MULTI',), ('SET', 'a', '1'), ('GET',), ('EXEC',), ('GET', 'a'),
    ])


@test
def multi_with_select_and_keyspace_commands(t):
    t.compare([
        ('MULTI',), ('SET', 'k', 'v0'), ('SELECT', '1'), ('SET', 'k', 'v1'), ('KEYS', '*'),
        ('SELECT', '0'), ('DBSIZE',), ('EXEC',), ('GET', 'k'), ('SELECT', '1'), ('GET', 'k'),
        ('SELECT', '0'), ('MULTI',), ('FLUSHALL',), ('SET', 'x', '1'), ('EXEC',), ('KEYS', '*'),
    ])


def watch_steps(t, changer):
    """WATCH k on one connection, run changer on another, then EXEC."""
    def run(srv):
        with srv.client() as a, srv.client() as b:
            out = [a.cmd('SET', 'k', '1'), a.cmd('WATCH', 'k')]
            for cmd in changer:
                out.append(b.cmd(*cmd))
            out += [a.cmd('MULTI'), a.cmd('INCR', 'k'), a.cmd('EXEC'), a.cmd('GET', 'k')]
            b.cmd('FLUSHALL')
            return out
    return t.same(run, 'WATCH then %r' % (changer,))


@test
def watch_detects_changes(t):
    watch_steps(t, [])                                   # untouched: EXEC runs
    watch_steps(t, [('SET', 'k', '5')])                  # changed: EXEC is nil
    watch_steps(t, [('SET', 'k', '1')])                  # same value still counts
    watch_steps(t, [('DEL', 'k')])
    watch_steps(t, [('EXPIRE', 'k', '100')])
    watch_steps(t, [('RENAME', 'k', 'k2')])
    watch_steps(t, [('FLUSHALL',)])
    watch_steps(t, [('SWAPDB', '0', '1')])
    watch_steps(t, [('SET', 'other', '1')])              # another key: EXEC runs
    watch_steps(t, [('PEXPIRE', 'k', '1'), ('DEBUG', 'SLEEP', '0.01')])  # expired


@test
def unwatch_and_exec_forget_watches(t):
    def run(srv):
        with srv.client() as a, srv.client() as b:
            out = [a.cmd('SET', 'k', '1'), a.cmd('WATCH', 'k'), a.cmd('UNWATCH'),
                   b.cmd('SET', 'k', '2'), a.cmd('MULTI'), a.cmd('GET', 'k'), a.cmd('EXEC'),
                   a.cmd('WATCH', 'k'), a.cmd('MULTI'), a.cmd('EXEC'),
                   b.cmd('SET', 'k', '3'), a.cmd('MULTI'), a.cmd('GET', 'k'), a.cmd('EXEC')]
            b.cmd('FLUSHALL')
            return out
    t.same(run, 'UNWATCH / EXEC clear the watches')
    # UNWATCH queued inside the transaction (EXEC holds the watched shards).
    for proto in (2, 3):
        t.compare([('WATCH', 'c', 'k'), ('MULTI',), ('UNWATCH',), ('SET', 'c', 1), ('EXEC',),
                   ('WATCH', 'c'), ('MULTI',), ('UNWATCH',), ('WATCH', 'x'), ('EXEC',),
                   ('GET', 'c'), ('FLUSHALL',)], proto=proto)


@test
def exec_is_isolated(t):
    """One client moves a unit between a and b (different shards) in MULTI
    loops; readers on other connections must never see the sum change."""
    srv = t.sut
    srv.call('MSET', 'a', '1000', 'b', '0')
    stop, bad = threading.Event(), []

    def writer():
        with srv.client() as c:
            for _ in range(2000):
                c.send_raw(b'MULTI\r\nDECR a\r\nINCR b\r\nEXEC\r\n')
                c.read_replies(4)
        stop.set()

    def reader():
        with srv.client() as c:
            while not stop.is_set():
                a, b = c.call('MGET', 'a', 'b')
                if int(a) + int(b) != 1000:
                    bad.append((a, b))

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader)
                                                     for _ in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert not bad, bad[:5]
    assert srv.call('MGET', 'a', 'b') == [b'-1000', b'2000'], srv.call('MGET', 'a', 'b')


@test
@xkv_only
def swapdb_bringing_stale_keys_touches_nothing(t):
    """Redis 8.8: SWAPDB that puts a key past its deadline where the watched
    key was missing (or stale too) is no logical change; a live one is."""
    with t.sut.client() as c:
        c.call('DEBUG', 'SET-ACTIVE-EXPIRE', '0')
        try:
            for stale_in_watched_db in (False, True):
                c.call('FLUSHALL')
                c.call('SELECT', 0)
                c.call('SET', 'x', 'foo', 'PX', 1)
                c.call('SELECT', 1)
                if stale_in_watched_db:
                    c.call('SET', 'x', 'bar', 'PX', 1)
                time.sleep(0.01)
                c.call('WATCH', 'x')
                c.call('SWAPDB', 0, 1)
                c.call('MULTI')
                c.call('PING')
                assert c.call('EXEC') == [b'PONG'], stale_in_watched_db
            c.call('FLUSHALL')
            c.call('SELECT', 0)
            c.call('SET', 'x', 'live')
            c.call('SELECT', 1)
            c.call('WATCH', 'x')
            c.call('SWAPDB', 0, 1)
            c.call('MULTI')
            c.call('PING')
            assert c.call('EXEC') is None
        finally:
            c.call('DEBUG', 'SET-ACTIVE-EXPIRE', '1')
            c.call('FLUSHALL')
            c.call('SELECT', 0)


@test
def exec_refused_whole_without_enough_replicas(t):
    """min-replicas-to-write set after the queue was built: EXEC of a queue
    that writes is discarded whole with NOREPLICAS as its reason, and the
    queued INCR never ran (Redis's execCommandAbort)."""
    def run(srv):
        with srv.client() as a, srv.client() as b:
            out = [a.cmd('SET', 'xx', '1'), a.cmd('MULTI'), a.cmd('INCR', 'xx')]
            b.cmd('CONFIG', 'SET', 'min-replicas-to-write', '2')
            try:
                out += [a.cmd('EXEC'), a.cmd('GET', 'xx'), a.cmd('EXEC')]
            finally:
                b.cmd('CONFIG', 'SET', 'min-replicas-to-write', '0')
            return out
    out = t.same(run, 'EXEC under min-replicas-to-write')
    assert out[3].startswith(b'-EXECABORT') and b'NOREPLICAS' in out[3], out


@test
def exec_refused_whole_on_oom_or_stale_replica(t):
    """EXEC of a queue holding a denyoom command past maxmemory, and of a
    queue with a non-stale command on a replica whose link is down under
    replica-serve-stale-data no: discarded whole, the reason in the
    EXECABORT (OOM, MASTERDOWN); plain commands get the bare errors."""
    def run(srv):
        out = []
        with srv.client() as a, srv.client() as b:
            out += [a.cmd('SET', 'k', 'v'), a.cmd('MULTI'), a.cmd('SET', 'x', 'y')]
            b.cmd('CONFIG', 'SET', 'maxmemory', '1')
            try:
                out += [a.cmd('EXEC'), a.cmd('SET', 'x', 'y'), a.cmd('GET', 'k')]
            finally:
                b.cmd('CONFIG', 'SET', 'maxmemory', '0')
            out.append(a.cmd('GET', 'x'))
        with srv.client() as a, srv.client() as b:
            dead = str(free_port())
            out += [a.cmd('CONFIG', 'SET', 'replica-serve-stale-data', 'no'), a.cmd('MULTI'),
                    a.cmd('GET', 'k')]
            b.cmd('REPLICAOF', '127.0.0.1', dead)
            try:
                out += [a.cmd('EXEC'), a.cmd('GET', 'k'), a.cmd('PING')]
            finally:
                b.cmd('REPLICAOF', 'NO', 'ONE')
                b.cmd('CONFIG', 'SET', 'replica-serve-stale-data', 'yes')
            out.append(a.cmd('GET', 'k'))
        return out
    out = t.same(run, 'EXEC under OOM and a stale replica')
    assert out[3].startswith(b'-EXECABORT') and b'OOM' in out[3], out
    assert out[-4].startswith(b'-EXECABORT') and b'MASTERDOWN' in out[-4], out
