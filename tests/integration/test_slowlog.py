# SPDX-License-Identifier: GPL-2.0-only
"""SLOWLOG GET / LEN / RESET / HELP and the slowlog-* directives."""

import threading
import time

from harness import Unordered, encode, info_fields, test, wait_until, xkv_only

def same(pair, fn, what='result'):
    """fn(server) must give equal results on a spawned pair; returns it."""
    ref, sut = pair
    a, b = fn(ref), fn(sut)
    assert a == b, '%s differs\n  %-8s %r\n  %-8s %r' % (what, ref.label + ':', a,
                                                        sut.label + ':', b)
    return a



def entries(c, *count):
    return c.call('SLOWLOG', 'GET', *count)


def argvs(c, *count):
    """The argument lists of the newest entries, newest first."""
    return [e[3] for e in entries(c, *count)]


@test
def slowlog_help_and_errors(t):
    for proto in (2, 3):
        t.compare([
            ('SLOWLOG', 'HELP'), ('SLOWLOG',), ('SLOWLOG', 'FOO'), ('SLOWLOG', 'HELP', 'x'),
            ('SLOWLOG', 'GET', '-2'), ('SLOWLOG', 'GET', 'x'), ('SLOWLOG', 'GET', '1.5'),
            ('SLOWLOG', 'GET', '1', '2'), ('SLOWLOG', 'LEN', 'x'), ('SLOWLOG', 'RESET', 'x'),
            ('SLOWLOG', 'RESET'), ('SLOWLOG', 'LEN'), ('SLOWLOG', 'GET'),
            ('SLOWLOG', 'GET', '0'), ('SLOWLOG', 'GET', '-1'), ('slowlog', 'len'),
        ], proto=proto)


@test
def slowlog_config(t):
    pair = t.spawn_pair()
    t.compare([
        ('CONFIG', 'GET', 'slowlog-log-slower-than'), ('CONFIG', 'GET', 'slowlog-max-len'),
        Unordered('CONFIG', 'GET', 'slowlog-[lm]*'),
        ('CONFIG', 'SET', 'slowlog-log-slower-than', '-2'),
        ('CONFIG', 'SET', 'slowlog-log-slower-than', 'abc'),
        ('CONFIG', 'SET', 'slowlog-max-len', '-1'),
        ('CONFIG', 'SET', 'slowlog-log-slower-than', '-1'),
        ('CONFIG', 'SET', 'slowlog-max-len', '7'),
        Unordered('CONFIG', 'GET', 'slowlog-[lm]*'),
        ('CONFIG', 'SET', 'slowlog-log-slower-than', '0', 'slowlog-max-len', '0'),
        Unordered('CONFIG', 'GET', 'slowlog-[lm]*'),
    ], ref=pair[0], sut=pair[1])
    # Start-up directives.
    pair = t.spawn_pair(**{'slowlog-log-slower-than': 5, 'slowlog-max-len': 3})
    t.compare([Unordered('CONFIG', 'GET', 'slowlog-[lm]*')], ref=pair[0], sut=pair[1])


def sleep_entry(srv):
    """One DEBUG SLEEP logged with its client's name; the entry, checked."""
    with srv.client() as c:
        c.call('SLOWLOG', 'RESET')
        c.call('CLIENT', 'SETNAME', 'sleeper')
        before = int(time.time())
        assert c.call('DEBUG', 'SLEEP', '0.02') == b'OK'
        after = int(time.time())
        addr = '%s:%d' % c.sock.getsockname()
        log = entries(c)
        assert c.call('SLOWLOG', 'LEN') == 1, log
    assert len(log) == 1, log
    ident, when, duration, argv, peer, name = log[0]
    assert isinstance(ident, int) and isinstance(when, int) and isinstance(duration, int), log
    assert before - 1 <= when <= after + 1, (when, before, after)
    assert 20000 <= duration < 2000000, duration
    assert peer == addr.encode(), (peer, addr)
    return ident, argv, name


@test
def slowlog_records_slow_commands(t):
    pair = t.spawn_pair(**{'slowlog-log-slower-than': 10000})
    got = same(pair, lambda srv: sleep_entry(srv), 'the DEBUG SLEEP entry')
    assert got == (1, [b'debug', b'sleep', b'0.02'], b'sleeper') or \
        got[1:] == ([b'DEBUG', b'SLEEP', b'0.02'], b'sleeper'), got
    # Fast commands stay out; an unnamed client has an empty name.
    def fast(srv):
        with srv.client() as c:
            c.call('SLOWLOG', 'RESET')
            for i in range(20):
                c.call('SET', 'k%d' % i, i)
            c.call('DEBUG', 'SLEEP', '0.015')
            log = entries(c, -1)
            return [(e[0] >= 0, e[2] >= 15000, e[3], e[5]) for e in log]
    assert same(pair, fast) == [(True, True, [b'DEBUG', b'SLEEP', b'0.015'], b'')]


def normalized(c, *count):
    """Entries without their times, durations and addresses."""
    return [(e[0], e[3], e[5]) for e in entries(c, *count)]


@test
def slowlog_threshold_zero_and_off(t):
    def run(srv):
        with srv.client() as c:
            out = []
            c.call('CONFIG', 'SET', 'slowlog-log-slower-than', 0)
            c.call('SLOWLOG', 'RESET')
            out.append(c.call('SLOWLOG', 'LEN'))      # the RESET itself is logged
            c.call('SET', 'a', 1)
            c.call('GET', 'a')
            c.call('INCR', 'a')
            out.append(c.call('SLOWLOG', 'LEN'))
            out.append([e[1:] for e in normalized(c)])
            out.append([e[1:] for e in normalized(c, 2)])
            out.append(len(entries(c, 0)))
            c.call('CONFIG', 'SET', 'slowlog-log-slower-than', -1)
            c.call('SLOWLOG', 'RESET')
            c.call('DEBUG', 'SLEEP', '0.02')
            out.append(c.call('SLOWLOG', 'LEN'))
            ids = [e[0] for e in entries(c)]
            out.append(ids)
            return out
    pair = t.spawn_pair()
    got = same(pair, lambda srv: run(srv))
    assert got[0] == 1 and got[1] == 5, got


@test
def slowlog_argument_trimming(t):
    big = 'x' * 300
    many = ['k%d' % i for i in range(40)]

    def run(srv):
        with srv.client() as c:
            c.call('CONFIG', 'SET', 'slowlog-log-slower-than', 0)
            c.call('SLOWLOG', 'RESET')
            c.call('SET', 'big', big)
            c.call('DEL', *many)
            c.call('MSET', *[a for k in many[:31] for a in (k, k)])
            c.call('ECHO', 'y' * 128)
            c.call('ECHO', 'z' * 129)
            return argvs(c, 6)
    pair = t.spawn_pair()
    got = same(pair, run)
    assert got[4][2] == b'x' * 128 + b'... (172 more bytes)', got[4]
    assert len(got[3]) == 32 and got[3][-1] == b'... (10 more arguments)', got[3]


@test
def slowlog_redacts_passwords(t):
    def run(srv):
        with srv.client() as c:
            c.call('CONFIG', 'SET', 'slowlog-log-slower-than', 0)
            c.call('SLOWLOG', 'RESET')
            c.cmd('AUTH', 'secret')
            c.cmd('AUTH', 'user', 'secret')
            c.cmd('HELLO', '2', 'AUTH', 'user', 'secret')
            c.cmd('HELLO', '2', 'SETNAME', 'n')
            return argvs(c, 4)
    pair = t.spawn_pair()
    got = same(pair, run)
    assert b'secret' not in repr(got).encode(), got


@test
def slowlog_max_len(t):
    def run(srv):
        with srv.client() as c:
            c.call('CONFIG', 'SET', 'slowlog-log-slower-than', 0)
            c.call('CONFIG', 'SET', 'slowlog-max-len', 5)
            c.call('SLOWLOG', 'RESET')
            for i in range(20):
                c.call('SET', 'k', i)
            n = c.call('SLOWLOG', 'LEN')
            log = normalized(c, -1)
            c.call('CONFIG', 'SET', 'slowlog-max-len', 0)
            c.call('PING')
            n0 = c.call('SLOWLOG', 'LEN')
            c.call('CONFIG', 'SET', 'slowlog-max-len', 2)
            c.call('PING')
            n2 = c.call('SLOWLOG', 'LEN')
            return n, log, n0, n2
    ref, sut = t.spawn_pair()
    a, b = run(ref), run(sut)
    # With slowlog-max-len 0 Redis 8.8 logs nothing and trims nothing (the
    # entries stay until the next one logged); 7.0 trimmed them all.
    assert a[2] == 0 and b[2] == 5, (a, b)
    assert a[:2] + a[3:] == b[:2] + b[3:], (a, b)
    n, log, _, n2 = b
    assert n == 5 and len(log) == 5 and n2 == 2, b
    assert [e[0] for e in log] == list(range(log[0][0], log[0][0] - 5, -1)), log


@test
@xkv_only
def slowlog_many_clients(t):
    """Clients on both workers log at once: ids stay unique and the log stays
    within slowlog-max-len."""
    srv = t.spawn('sut', **{'slowlog-log-slower-than': 0, 'slowlog-max-len': 50})
    errors = []

    def worker(n):
        try:
            with srv.client() as c:
                c.call('CLIENT', 'SETNAME', 'w%d' % n)
                for i in range(300):
                    c.call('SET', 'k%d' % n, i)
                    if i % 50 == 0:
                        assert c.call('SLOWLOG', 'LEN') <= 50
                        log = entries(c, -1)
                        assert len(log) <= 50, len(log)
                        ids = [e[0] for e in log]
                        assert ids == sorted(set(ids), reverse=True), ids
                    if n == 0 and i % 100 == 0:
                        c.call('SLOWLOG', 'RESET')
        except Exception as e:          # reported by the main thread
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    with srv.client() as c:
        log = entries(c, -1)
        assert len(log) == 50 == c.call('SLOWLOG', 'LEN'), len(log)
        names = {e[5] for e in log}
        assert names <= {b'w%d' % n for n in range(8)} | {b''}, names
        assert log[0][0] >= 8 * 300, log[0][0]


def blocked(srv):
    """INFO's blocked_clients, on a connection of its own."""
    return int(info_fields(srv.call('INFO', 'clients'))['clients']['blocked_clients'])


def cmdstat(c, name):
    """INFO commandstats' counters of name, without its times."""
    line = info_fields(c.call('INFO', 'commandstats'))['commandstats'].get('cmdstat_' + name)
    if line is None:
        return None
    fields = dict(kv.split('=') for kv in line.split(','))
    return {k: fields[k] for k in ('calls', 'rejected_calls', 'failed_calls')}


@test
def slowlog_blocked_command(t):
    """A blocked command is logged (and counted) once answered, served or
    timed out, after the command that served it, with the time it ran and
    not the time it waited."""
    def run(srv):
        out = []
        with srv.client(timeout=10) as w, srv.client() as c:
            c.call('CONFIG', 'SET', 'slowlog-log-slower-than', 0)
            c.call('CONFIG', 'RESETSTAT')
            w.send_raw(encode(('BLPOP', 'bl', '0')))
            assert wait_until(lambda: blocked(srv) == 1, timeout=5)
            c.call('SLOWLOG', 'RESET')
            out.append(argvs(c, -1))            # not logged while it waits
            out.append(cmdstat(c, 'blpop'))     # nor counted
            time.sleep(0.3)
            c.call('LPUSH', 'bl', 'x')
            out.append(w.call())
            assert wait_until(lambda: blocked(srv) == 0, timeout=5)
            # Newest first, the polls of blocked_clients left out.
            log = [e for e in entries(c, -1) if e[3][0] != b'INFO']
            out.append([e[3] for e in log])
            assert log[0][2] < 200000, log[0]   # its wait is not its time
            out.append(cmdstat(c, 'blpop'))
            # A timeout is logged and counted too.
            c.call('SLOWLOG', 'RESET')
            out.append(w.call('BLPOP', 'bl', '0.1'))
            out.append(argvs(c, 1))
            out.append(cmdstat(c, 'blpop'))
            # Served inside a transaction: logged after EXEC's commands.
            w.send_raw(encode(('BLPOP', 'bl', '0')))
            assert wait_until(lambda: blocked(srv) == 1, timeout=5)
            c.call('MULTI')
            c.call('LPUSH', 'bl', 'y')
            c.call('SLOWLOG', 'RESET')
            c.call('EXEC')
            out.append(w.call())
            assert wait_until(lambda: blocked(srv) == 0, timeout=5)
            out.append([a for a in argvs(c, -1) if a[0] != b'INFO'])
        return out
    ref, sut = t.spawn_pair()
    a, b = run(ref), run(sut)
    # Redis 8.8 (checked by hand against redis-server 8.8.0) counts a
    # blocked call when it is answered, and logs a timed-out one; 7.0 did
    # neither. The rest agrees.
    assert b[1] is None and b[6] == [[b'BLPOP', b'bl', b'0.1']], b
    for i in (1, 6):
        a[i] = b[i] = None
    assert a == b, 'result differs\n  redis: %r\n  xkvd:  %r' % (a, b)
    assert b[3][:2] == [[b'BLPOP', b'bl', b'0'], [b'LPUSH', b'bl', b'x']], b[3]


@test
def commandstats_failed_call_in_exec(t):
    """A queued command that fails counts one failed call, as in Redis."""
    def run(srv):
        with srv.client() as c:
            c.call('CONFIG', 'RESETSTAT')
            c.call('SET', 's', 'abc')
            c.call('MULTI')
            c.call('INCR', 's')
            c.call('EXEC')
            return cmdstat(c, 'incr'), cmdstat(c, 'exec')
    got = same(t.spawn_pair(), run)
    assert got[0] == {'calls': '1', 'rejected_calls': '0', 'failed_calls': '1'}, got


@test
@xkv_only
def slowlog_metrics(t):
    """Redis 8.8's slowlog metrics (7.0 has none; checked by hand against
    redis-server 8.8.0): INFO stats slowlog_commands_* and the commandstats
    slowlog_* of the commands that were logged; SLOWLOG RESET keeps them,
    CONFIG RESETSTAT clears them."""
    srv = t.spawn('sut', **{'slowlog-log-slower-than': 10000})
    with srv.client() as c:
        stats = lambda: info_fields(c.call('INFO', 'stats'))['stats']
        line = lambda name: info_fields(c.call('INFO', 'commandstats'))['commandstats'][
            'cmdstat_' + name]
        s = stats()
        assert (s['slowlog_commands_count'], s['slowlog_commands_time_ms_max'],
                s['slowlog_commands_time_ms_sum']) == ('0', '0.00', '0.00'), s
        c.call('SET', 'a', 1)
        c.call('DEBUG', 'SLEEP', '0.02')
        c.call('DEBUG', 'SLEEP', '0.03')
        s = stats()
        assert s['slowlog_commands_count'] == '2', s
        assert float(s['slowlog_commands_time_ms_max']) >= 30, s
        assert float(s['slowlog_commands_time_ms_sum']) >= 50, s
        assert 'slowlog' not in line('set'), line('set')
        fields = dict(kv.split('=') for kv in line('debug').split(','))
        assert list(fields)[-3:] == ['slowlog_count', 'slowlog_time_ms_sum',
                                     'slowlog_time_ms_max'], fields
        assert fields['slowlog_count'] == '2' and float(fields['slowlog_time_ms_sum']) >= 50
        c.call('SLOWLOG', 'RESET')
        assert stats()['slowlog_commands_count'] == '2'
        c.call('CONFIG', 'SET', 'slowlog-max-len', 0)
        c.call('DEBUG', 'SLEEP', '0.02')        # no log: not counted, as Redis
        assert stats()['slowlog_commands_count'] == '2'
        c.call('CONFIG', 'RESETSTAT')
        s = stats()
        assert (s['slowlog_commands_count'], s['slowlog_commands_time_ms_max'],
                s['slowlog_commands_time_ms_sum']) == ('0', '0.00', '0.00'), s
