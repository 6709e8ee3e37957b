# SPDX-License-Identifier: GPL-2.0-only
"""LATENCY LATEST / HISTORY / RESET / GRAPH / DOCTOR / HISTOGRAM / HELP,
latency-monitor-threshold, and INFO commandstats / errorstats / latencystats."""

import re
import threading
import time

from harness import info_fields, test, xkv_only

def same(pair, fn, what='result'):
    """fn(server) must give equal results on a spawned pair; returns it."""
    ref, sut = pair
    a, b = fn(ref), fn(sut)
    assert a == b, '%s differs\n  %-8s %r\n  %-8s %r' % (what, ref.label + ':', a,
                                                        sut.label + ':', b)
    return a


# Redis keys power-of-two nanosecond buckets by the largest microsecond
# value each holds (two significant digits).
BUCKET_KEYS = {((1 << k) + (1 << (k - 7)) - 1) // 1000 for k in range(10, 31)}
PERCENTILES = re.compile(r'^p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}$')
CMDSTAT = re.compile(r'^calls=(\d+),usec=(\d+),usec_per_call=(\d+\.\d\d),'
                     r'rejected_calls=(\d+),failed_calls=(\d+)$')


@test
def latency_help_and_errors(t):
    for proto in (2, 3):
        t.compare([
            ('LATENCY', 'HELP'), ('LATENCY',), ('LATENCY', 'FOO'), ('LATENCY', 'HELP', 'x'),
            ('LATENCY', 'HISTORY'), ('LATENCY', 'GRAPH'), ('LATENCY', 'LATEST', 'x'),
            ('LATENCY', 'DOCTOR', 'x'),
        ], proto=proto)


@test
def latency_monitor_disabled(t):
    pair = t.spawn_pair()
    for proto in (2, 3):
        t.compare([
            ('LATENCY', 'LATEST'), ('LATENCY', 'HISTORY', 'command'),
            ('LATENCY', 'RESET'), ('LATENCY', 'RESET', 'command', 'nosuch'),
            ('LATENCY', 'DOCTOR'), ('LATENCY', 'GRAPH', 'command'),
            ('CONFIG', 'GET', 'latency-monitor-threshold'),
            ('CONFIG', 'SET', 'latency-monitor-threshold', '-1'),
            ('CONFIG', 'SET', 'latency-monitor-threshold', 'x'),
            ('CONFIG', 'SET', 'latency-monitor-threshold', '100'),
            ('CONFIG', 'GET', 'latency-monitor-threshold'),
            ('LATENCY', 'DOCTOR'),          # enabled, nothing seen yet
            ('DEBUG', 'SLEEP', '0'), ('LATENCY', 'LATEST'),
            ('CONFIG', 'SET', 'latency-monitor-threshold', '0'),
        ], proto=proto, ref=pair[0], sut=pair[1])


def spikes(srv):
    """Two slow commands a second apart; the monitor's view of them. The
    threshold (200 ms) is far above what a command takes on a loaded
    machine, and the slow ones far above it, so scheduling noise cannot
    move a command across it."""
    with srv.client() as c:
        out = {}
        before = int(time.time())
        c.call('DEBUG', 'SLEEP', '0')               # under the threshold
        out['under'] = c.call('LATENCY', 'LATEST')
        c.call('DEBUG', 'SLEEP', '0.5')
        time.sleep(1.1)
        c.call('DEBUG', 'SLEEP', '0.4')
        after = int(time.time())
        latest = c.call('LATENCY', 'LATEST')
        assert len(latest) == 1 and latest[0][0] == b'command', latest
        name, when, last, worst = latest[0]
        assert before <= when <= after + 1 and 400 <= last < 5000 and 500 <= worst < 5000, latest
        out['latest'] = name
        history = c.call('LATENCY', 'HISTORY', 'command')
        assert len(history) == 2, history
        assert history[0][0] < history[1][0] and history[0][1] >= 500 and \
            history[1][1] >= 400, history
        out['history'] = len(history)
        graph = c.call('LATENCY', 'GRAPH', 'command')
        first = graph.split(b'\n')[0]
        assert re.match(rb'^command - high \d+ ms, low \d+ ms \(all time high \d+ ms\)$',
                        first), graph
        out['doctor'] = b'1. command: 2 latency spikes' in c.call('LATENCY', 'DOCTOR')
        out['reset'] = c.call('LATENCY', 'RESET', 'nosuch', 'command')
        out['after'] = (c.call('LATENCY', 'LATEST'), c.call('LATENCY', 'HISTORY', 'command'))
        return out


@test
def latency_monitor_records_spikes(t):
    pair = t.spawn_pair(**{'latency-monitor-threshold': 200})
    got = same(pair, spikes, 'the latency monitor')
    assert got == {'under': [], 'latest': b'command', 'history': 2, 'doctor': True,
                   'reset': 1, 'after': ([], [])}, got


def histograms(srv, proto=2):
    with srv.client(proto) as c:
        c.call('CONFIG', 'RESETSTAT')
        for i in range(3):
            c.call('SET', 'k', i)
        c.call('GET', 'k')
        c.call('GET', 'k')
        c.call('CLIENT', 'ID')
        reply = c.call('LATENCY', 'HISTOGRAM', 'set', 'GET', 'nosuch', 'client', 'set')
        if isinstance(reply, list):
            it = iter(reply)
            reply = dict(zip(it, it))
        out = {}
        for name, h in reply.items():
            if isinstance(h, list):
                h = dict(zip(h[::2], h[1::2]))
            buckets = h[b'histogram_usec']
            if isinstance(buckets, list):
                buckets = dict(zip(buckets[::2], buckets[1::2]))
            keys = sorted(buckets)
            counts = [buckets[k] for k in keys]
            assert set(keys) <= BUCKET_KEYS, keys
            assert counts == sorted(set(counts)) and counts[-1] == h[b'calls'], buckets
            out[name] = h[b'calls']
        everything = c.call('LATENCY', 'HISTOGRAM')
        n = len(everything) // 2 if isinstance(everything, list) else len(everything)
        return out, n >= 4
    

@test
def latency_histogram(t):
    for proto in (2, 3):
        got = t.same(lambda srv: histograms(srv, proto), 'LATENCY HISTOGRAM (RESP%d)' % proto)
        assert got == ({b'set': 3, b'get': 2, b'client|id': 1}, True), got
    t.compare([('LATENCY', 'HISTOGRAM', 'nosuch')])


@test
def info_commandstats_and_errorstats(t):
    def run(srv):
        with srv.client() as c:
            c.call('CONFIG', 'RESETSTAT')
            c.call('SET', 'n', 'x')
            c.cmd('INCR', 'n')                  # failed
            c.cmd('GET')                        # rejected (arity)
            c.call('LPUSH', 'l', 'a')
            c.cmd('GET', 'l')                   # WRONGTYPE
            c.cmd('NOSUCHCOMMAND', 'x')
            c.call('CLIENT', 'ID')
            stats = info_fields(c.call('INFO', 'commandstats'))['commandstats']
            out = {}
            for name, value in stats.items():
                m = CMDSTAT.match(value)
                assert m and name.startswith('cmdstat_'), (name, value)
                calls, usec, per_call, rejected, failed = m.groups()
                assert abs(float(per_call) - (int(usec) / int(calls) if int(calls) else 0)) < 0.01
                out[name] = (int(calls), int(rejected), int(failed))
            latency = info_fields(c.call('INFO', 'latencystats'))['latencystats']
            for name, value in latency.items():
                assert PERCENTILES.match(value), (name, value)
            return out, sorted(latency)
    stats, latency = t.same(run, 'INFO commandstats / latencystats')
    assert stats['cmdstat_incr'] == (1, 0, 1) and stats['cmdstat_get'] == (1, 1, 1), stats
    assert stats['cmdstat_client|id'] == (1, 0, 0), stats
    assert 'latency_percentiles_usec_client|id' in latency, latency
    t.compare([
        ('CONFIG', 'RESETSTAT'), ('INCR', 'nosuch', 'x'), ('NOSUCH', 'x'), ('SET', 's', 'v'),
        ('LPUSH', 's', 'a'), ('INFO', 'errorstats'), ('CONFIG', 'RESETSTAT'),
        ('INFO', 'errorstats'),
    ])


@test
def info_extra_sections_only_when_asked(t):
    def sections(srv):
        with srv.client() as c:
            c.call('PING')
            extra = {'commandstats', 'errorstats', 'latencystats'}
            return [sorted(extra & set(info_fields(c.call('INFO', *arg))))
                    for arg in [(), ('default',), ('all',), ('everything',),
                                ('server', 'errorstats')]]
    got = t.same(sections, 'INFO sections')
    # errorstats is a default section; the other two are not.
    assert got[0] == got[1] == ['errorstats'] and got[2] == got[3] == [
        'commandstats', 'errorstats', 'latencystats'], got


@test
@xkv_only
def latency_many_clients(t):
    """Histograms and the monitor fed from both workers at once."""
    srv = t.spawn('sut', **{'latency-monitor-threshold': 5})
    errors = []

    def worker(n):
        try:
            with srv.client() as c:
                for i in range(200):
                    c.call('INCR', 'c%d' % n)
                    if i % 50 == 0:
                        c.call('DEBUG', 'SLEEP', '0.006')
                        c.call('LATENCY', 'HISTOGRAM', 'incr')
                        c.call('LATENCY', 'LATEST')
                        c.call('INFO', 'latencystats')
        except Exception as e:          # reported by the main thread
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    with srv.client() as c:
        h = c.call('LATENCY', 'HISTOGRAM', 'incr', 'debug')
        h = dict(zip(h[::2], h[1::2]))
        assert h[b'incr'][1] == 1600 and h[b'debug'][1] == 32, h
        latest = c.call('LATENCY', 'LATEST')
        assert latest and latest[0][0] == b'command' and latest[0][3] >= 6, latest
