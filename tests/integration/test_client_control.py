# SPDX-License-Identifier: GPL-2.0-only
"""CLIENT PAUSE / UNPAUSE, REPLY, UNBLOCK, NO-EVICT and NO-TOUCH. Clients
that wait (held by a pause, blocked in BLPOP) are observed through CLIENT
LIST, never through timing; several connections put them on both of xkvd's
workers. Scenarios run on both servers and must give the same bytes."""

import re
import time

from harness import encode, info_fields, test, wait_until, xkv_only


@test
def argument_errors(t):
    t.compare([
        ('CLIENT', 'PAUSE'), ('CLIENT', 'PAUSE', 'abc'), ('CLIENT', 'PAUSE', '-1'),
        ('CLIENT', 'PAUSE', '10', 'FOO'), ('CLIENT', 'PAUSE', 'abc', 'FOO'),
        ('CLIENT', 'PAUSE', '10', 'write', 'x'), ('CLIENT', 'PAUSE', '99999999999999999999'),
        ('CLIENT', 'PAUSE', '0'), ('CLIENT', 'PAUSE', '0', 'write'),
        ('CLIENT', 'PAUSE', '9223372036854775807'), ('GET', 'k'),
        ('CLIENT', 'UNPAUSE'), ('CLIENT', 'UNPAUSE', 'x'),
        ('CLIENT', 'REPLY'), ('CLIENT', 'REPLY', 'foo'), ('CLIENT', 'REPLY', 'ON', 'x'),
        ('CLIENT', 'REPLY', 'on'),
        ('CLIENT', 'UNBLOCK'), ('CLIENT', 'UNBLOCK', 'abc'), ('CLIENT', 'UNBLOCK', '999'),
        ('CLIENT', 'UNBLOCK', 'abc', 'foo'), ('CLIENT', 'UNBLOCK', '999', 'timeout'),
        ('CLIENT', 'UNBLOCK', '999', 'ERROR'), ('CLIENT', 'UNBLOCK', '-1'),
        ('CLIENT', 'UNBLOCK', '1', 'error', 'x'),
        ('CLIENT', 'NO-EVICT'), ('CLIENT', 'NO-EVICT', 'maybe'), ('CLIENT', 'NO-EVICT', 'on'),
        ('CLIENT', 'NO-EVICT', 'OFF'), ('CLIENT', 'NO-EVICT', 'on', 'x'),
        ('MONITOR', 'x'),
    ])


def flags_of(listing, cid):
    m = re.search(rb'id=%d .*? flags=(\S+) .*? cmd=(\S+)' % cid, listing)
    return m.groups() if m else None


def client_id(c):
    return int(c.call('CLIENT', 'ID'))


def unpause(srv):
    """Lifts any pause, even ALL: a monitor is never held."""
    with srv.client() as m:
        m.cmd('MONITOR')
        m.send('CLIENT', 'UNPAUSE')


def pause_write_scenario(srv):
    """PAUSE WRITE holds writes (even queued in MULTI, and PUBLISH) but not
    reads; UNPAUSE runs what was held, in order, with what followed it."""
    adm = srv.client(timeout=10)
    writers = [srv.client(timeout=10) for _ in range(6)]
    try:
        ids = [client_id(w) for w in writers]
        writers[5].cmd('MULTI')
        assert adm.cmd('CLIENT', 'PAUSE', '100000', 'WRITE') == b'+OK\r\n'
        for i, w in enumerate(writers[:4]):
            w.send_raw(encode(['SET', 'k%d' % i, '1']) + encode(['INCR', 'k%d' % i]) +
                       encode(['GET', 'k%d' % i]))
        writers[4].send('PUBLISH', 'ch', 'm')
        writers[5].send('SET', 'q', '1')
        held = lambda: [flags_of(adm.call('CLIENT', 'LIST'), i) for i in ids]
        assert wait_until(lambda: all(f and b'b' in f[0] for f in held())), held()
        states = held()
        reads = [adm.cmd('GET', 'k0'), adm.cmd('EXISTS', 'q'), adm.cmd('PING')]
        assert adm.cmd('CLIENT', 'UNPAUSE') == b'+OK\r\n'
        replies = [w.read_replies(3) for w in writers[:4]]
        replies += [writers[4].read_reply(), writers[5].read_reply(), writers[5].cmd('EXEC')]
        adm.cmd('FLUSHALL')
        return states, reads, replies
    finally:
        unpause(srv)
        for c in writers + [adm]:
            c.close()


@test
def pause_write_holds_writes_until_unpause(t):
    states, reads, replies = t.same(pause_write_scenario, 'PAUSE WRITE')
    assert states == [(b'b', b'set')] * 4 + [(b'b', b'publish'), (b'xb', b'set')], states
    assert reads == [b'$-1\r\n', b':0\r\n', b'+PONG\r\n'], reads
    assert replies[0] == b'+OK\r\n:2\r\n$1\r\n2\r\n', replies


def pause_all_scenario(srv):
    """PAUSE ALL holds reads too, and CLIENT commands; a monitor is never
    held (it observes and lifts the pause here). The deadline releases a
    pause nobody lifts; expiry waits for the end of a pause."""
    readers = [srv.client(timeout=10) for _ in range(4)]
    mon = srv.client(timeout=10)
    try:
        ids = [client_id(r) for r in readers]
        readers[0].cmd('SET', 'k', 'v')
        mon.cmd('MONITOR')
        assert readers[0].cmd('CLIENT', 'PAUSE', '100000') == b'+OK\r\n'
        readers[0].send('GET', 'k')
        readers[1].send('CLIENT', 'ID')
        readers[2].send('PING')
        readers[3].send_raw(encode(['MULTI']) + encode(['GET', 'k']) + encode(['EXEC']))
        held = lambda: [flags_of(mon.call('CLIENT', 'LIST'), i) for i in ids]
        assert wait_until(lambda: all(f and b'b' in f[0] for f in held())), held()
        states = held()
        assert mon.cmd('CLIENT', 'UNPAUSE') == b'+OK\r\n'
        replies = [readers[0].read_reply(), readers[1].read_reply()[:1],
                   readers[2].read_reply(), readers[3].read_replies(3)]
        lines = sorted(re.sub(rb'^\+\S+ \[\S+ \S+\] ', b'', mon.read_reply())
                       for _ in range(6))
        mon.cmd('RESET')

        # Nobody lifts this one: its deadline does.
        readers[0].cmd('SET', 'gone', 'v', 'PX', '50')
        assert readers[0].cmd('CLIENT', 'PAUSE', '1500', 'WRITE') == b'+OK\r\n'
        readers[1].send('SET', 'x', '1')
        assert wait_until(lambda: flags_of(readers[2].call('CLIENT', 'LIST'), ids[1]) ==
                          (b'b', b'set'))
        time.sleep(0.1)
        # Past its deadline the key reads as missing but stays counted.
        frozen = [readers[2].cmd('GET', 'gone'), readers[2].cmd('EXISTS', 'gone'),
                  readers[2].cmd('DBSIZE')]
        released = readers[1].read_reply()
        readers[2].cmd('FLUSHALL')
        return states, replies, lines, frozen, released
    finally:
        unpause(srv)
        for c in readers + [mon]:
            c.close()


@test
def pause_all_holds_everything_until_unpause_or_deadline(t):
    states, replies, lines, frozen, released = t.same(pause_all_scenario, 'PAUSE ALL')
    assert states == [(b'b', b'get'), (b'b', b'client|id'), (b'b', b'ping'),
                      (b'b', b'multi')], states
    assert replies[0] == b'$1\r\nv\r\n', replies
    assert frozen == [b'$-1\r\n', b':0\r\n', b':2\r\n'] and released == b'+OK\r\n', frozen


def reply_scenario(srv):
    with srv.client() as c, srv.client() as p:
        c.send_raw(b''.join(encode(x) for x in [
            ('CLIENT', 'REPLY', 'SKIP'), ('SET', 'x', '1'), ('GET', 'x'),
            ('CLIENT', 'REPLY', 'SKIP'), ('NOSUCH',), ('GET', 'x'),
            ('CLIENT', 'REPLY', 'SKIP'), ('CLIENT', 'REPLY', 'SKIP'), ('ECHO', '1'),
            ('ECHO', '2'), ('CLIENT', 'REPLY', 'OFF'), ('ECHO', '3'), ('INCR', 'nan'),
            ('CLIENT', 'REPLY', 'SKIP'), ('ECHO', '4'), ('CLIENT', 'REPLY', 'ON'), ('ECHO', '5'),
            ('CLIENT', 'REPLY', 'SKIP'), ('CLIENT', 'REPLY', 'ON'), ('ECHO', '6'),
            ('CLIENT', 'REPLY', 'SKIP'), ('MULTI',), ('ECHO', '7'), ('EXEC',),
            ('CLIENT', 'REPLY', 'SKIP'), ('CLIENT', 'REPLY', 'FOO'), ('ECHO', '8'),
            ('CLIENT', 'REPLY', 'SKIP'), ('BLPOP', 'nolist', '0.05'), ('ECHO', '9'),
            ('CLIENT', 'REPLY', 'OFF'), ('SUBSCRIBE', 'ch')]))
        got = c.read_replies(11)
        p.cmd('PUBLISH', 'ch', 'msg')
        got += c.read_reply()
        c.send('UNSUBSCRIBE')
        got += c.read_reply()
        c.send_raw(encode(['CLIENT', 'REPLY', 'ON']) + encode(['ECHO', 'end']))
        got += c.read_replies(2)
        p.cmd('FLUSHALL')
        return got


@test
def reply_off_skip_on(t):
    got = t.same(reply_scenario, 'CLIENT REPLY')
    assert got.startswith(b'$1\r\n1\r\n$1\r\n1\r\n$1\r\n2\r\n+OK\r\n$1\r\n5\r\n'), got


def unblock_scenario(srv):
    """CLIENT UNBLOCK from another connection (often another worker) gives
    the timeout reply or the UNBLOCKED error; :0 for a client not blocked."""
    blocked = [srv.client(timeout=10) for _ in range(6)]
    try:
        with srv.client() as adm:
            ids = [client_id(b) for b in blocked]
            out = [adm.cmd('CLIENT', 'UNBLOCK', str(ids[0]))]
            cmds = [('BLPOP', 'l', '0'), ('BRPOPLPUSH', 'l', 'd', '0'),
                    ('BZPOPMIN', 'z', '0'), ('BLMOVE', 'l', 'd', 'LEFT', 'LEFT', '100'),
                    ('BLMPOP', '0', '1', 'l', 'LEFT'), ('BLPOP', 'l', '0')]
            for b, cmd in zip(blocked, cmds):
                b.send(*cmd)
            assert wait_until(lambda: int(info_fields(adm.call('INFO', 'clients'))['clients']
                                          ['blocked_clients']) == 6)
            for i, b in enumerate(blocked[:5]):
                how = ['TIMEOUT', 'ERROR'][i % 2]
                out.append(adm.cmd('CLIENT', 'UNBLOCK', str(ids[i]), how))
                out.append(b.read_reply())
                out.append(adm.cmd('CLIENT', 'UNBLOCK', str(ids[i]), how))
            # The last one still waits, and is served by a push.
            out.append(adm.cmd('RPUSH', 'l', 'x'))
            out.append(blocked[5].read_reply())
            out.append(adm.cmd('CLIENT', 'UNBLOCK', str(ids[5])))
            adm.cmd('FLUSHALL')
            return out
    finally:
        for b in blocked:
            b.close()


@test
def unblock_timeout_and_error(t):
    for proto in (2,):
        out = t.same(unblock_scenario, 'CLIENT UNBLOCK')
    assert out[:5] == [b':0\r\n', b':1\r\n', b'*-1\r\n', b':0\r\n', b':1\r\n'], out
    assert out[5] == b'-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n', out


def no_evict_scenario(srv):
    with srv.client() as c:
        flags = [flags_of(c.call('CLIENT', 'LIST'), client_id(c))[0]]
        c.cmd('CLIENT', 'NO-EVICT', 'on')
        flags.append(c.call('CLIENT', 'INFO').split(b' flags=')[1].split(b' ')[0])
        c.cmd('RESET')
        flags.append(c.call('CLIENT', 'INFO').split(b' flags=')[1].split(b' ')[0])
        c.cmd('CLIENT', 'NO-EVICT', 'off')
        flags.append(c.call('CLIENT', 'INFO').split(b' flags=')[1].split(b' ')[0])
        return flags


@test
def no_evict_flag(t):
    assert t.same(no_evict_scenario, 'NO-EVICT flags') == [b'N', b'e', b'e', b'N']


def idle(c, key):
    return int(c.call('OBJECT', 'IDLETIME', key))


@xkv_only
@test
def no_touch_leaves_access_time(t):
    with t.sut.client() as nt, t.sut.client() as c:
        assert nt.cmd('CLIENT', 'NO-TOUCH', 'on') == b'+OK\r\n'
        assert b' flags=T ' in nt.call('CLIENT', 'INFO')
        c.cmd('MSET', 'a', '1', 'b', '1', 'c', '1')
        assert wait_until(lambda: idle(c, 'a') >= 1 and idle(c, 'b') >= 1, timeout=10)
        nt.cmd('GET', 'a')
        nt.cmd('MULTI')
        nt.cmd('GET', 'a')
        nt.cmd('EXEC')
        c.cmd('GET', 'b')
        assert idle(c, 'a') >= 1 and idle(c, 'b') == 0
        # TOUCH always touches.
        assert nt.cmd('TOUCH', 'a') == b':1\r\n' and idle(c, 'a') == 0
        assert nt.cmd('CLIENT', 'NO-TOUCH', 'maybe') == b'-ERR syntax error\r\n'
        # RESET ends NO-TOUCH (as Redis 7.2, the version that has it).
        nt.cmd('RESET')
        assert b' flags=N ' in nt.call('CLIENT', 'INFO')
        # LFU: the counter of a fresh key rises on a normal read only.
        c.cmd('CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lfu')
        try:
            c.cmd('SET', 'f', '1')
            nt.cmd('CLIENT', 'NO-TOUCH', 'on')
            before = int(c.call('OBJECT', 'FREQ', 'f'))
            for _ in range(20):
                nt.cmd('GET', 'f')
            assert int(c.call('OBJECT', 'FREQ', 'f')) == before
            c.cmd('GET', 'f')
            assert int(c.call('OBJECT', 'FREQ', 'f')) > before
        finally:
            c.cmd('CONFIG', 'SET', 'maxmemory-policy', 'noeviction')
            c.cmd('FLUSHALL')


@xkv_only
@test
def help_lists_the_new_subcommands(t):
    text = b'\n'.join(t.sut.call('CLIENT', 'HELP'))
    for sub in (b'PAUSE <timeout> [WRITE|ALL]', b'UNPAUSE', b'REPLY (ON|OFF|SKIP)',
                b'UNBLOCK <clientid> [TIMEOUT|ERROR]', b'NO-EVICT (ON|OFF)',
                b'NO-TOUCH (ON|OFF)'):
        assert sub in text, sub
