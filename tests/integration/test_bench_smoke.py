# SPDX-License-Identifier: GPL-2.0-only
"""xkv-bench against xkvd: each mode (closed loop, open loop, sweep, --json,
prefill, pipeline, RESP3, UDP) runs for about a second; its output must parse,
report no errors and a plausible request count, and where the count can be
checked on the server (INCR, DBSIZE after a prefill) it must be exact. A run
the server answers with errors must say so and exit non-zero."""

import json
import os
import re
import subprocess

from harness import HOST, test, xkv_only

LIGHT = ['-t', '2', '-c', '4']     # a light load: the box also runs the server


def bench(t, *args, ok=True):
    """Runs xkv-bench on the server under test: (exit status, stdout)."""
    here = os.path.dirname(t.env.xkvd)
    # Next to xkvd; a sanitizer build's xkvd (OUTPUT/asan/xkvd) has it one level up.
    exe = next((p for p in (os.path.join(here, 'xkv-bench'),
                            os.path.join(os.path.dirname(here), 'xkv-bench'))
                if os.access(p, os.X_OK)), None)
    assert exe, 'no xkv-bench next to %s (make tools)' % t.env.xkvd
    argv = [exe, '-h', HOST, '-p', str(t.sut.port)] + [str(a) for a in args]
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    out = p.stdout.decode()
    if ok:
        assert p.returncode == 0, '%s: exit %d\n%s%s' % (
            ' '.join(argv), p.returncode, out, p.stderr.decode())
    return p.returncode, out


def bench_json(t, *args, ok=True):
    rc, out = bench(t, '--json', *args, ok=ok)
    return rc, json.loads(out)


def text_step(out):
    """The numbers of a human report's last step."""
    m = re.findall(r'^  requests +(\d+) in ([\d.]+) s, (\d+) req/s$', out, re.M)
    assert m, 'no requests line in:\n' + out
    assert re.search(r'^  errors +none$', out, re.M), 'errors reported:\n' + out
    lat = re.findall(r'^  latency +avg ([\d.]+)  p50 ([\d.]+)  p90 ([\d.]+)  p99 ([\d.]+)'
                     r'  p99\.9 ([\d.]+)  max ([\d.]+) ms$', out, re.M)
    assert lat, 'no latency line in:\n' + out
    n, secs, rate = m[-1]
    return int(n), float(secs), int(rate), [float(x) for x in lat[-1]]


def check_step(step, min_requests):
    assert step['errors'] == 0 and step['lost'] == 0 and step['conn_errors'] == 0, step
    assert step['first_error'] is None, step
    assert step['requests'] >= min_requests, step
    lat = step['latency_us']
    assert 0 < lat['min'] <= lat['p50'] <= lat['p90'] <= lat['p99'] <= lat['p99.9'] <= lat['max'], lat


@xkv_only
@test
def bench_closed_loop(t):
    _, out = bench(t, *LIGHT, '-T', 1)
    n, secs, rate, lat = text_step(out)
    assert n >= 200 and 0.9 <= secs <= 10 and rate > 0, out
    assert lat[1] <= lat[3] <= lat[5], out


@xkv_only
@test
def bench_open_loop(t):
    _, out = bench(t, *LIGHT, '-T', 1, '--rate', 2000)
    n, _, _, _ = text_step(out)
    m = re.search(r'^  rate +target 2000 req/s, achieved (\d+) \(([\d.]+)%\): (sustained|NOT sustained)$',
                  out, re.M)
    assert m, out
    # 2000 slots in the second; generous, as the machine is shared.
    assert 1000 <= n <= 2000 and int(m.group(1)) >= 1000, out


@xkv_only
@test
def bench_sweep(t):
    _, out = bench(t, *LIGHT, '-T', 0.5, '--sweep', '1000,3000')
    rows = re.findall(r'^ +(\d+) +(\d+) +([\d.]+) +([\d.]+) +(\d+)  (sustained|not sustained .*)$',
                      out, re.M)
    assert [int(r[0]) for r in rows] == [1000, 3000], out
    for rate, achieved, p50, p99, errors, _ in rows:
        assert int(errors) == 0 and int(achieved) >= int(rate) // 2, out
        assert float(p50) <= float(p99), out
    _, doc = bench_json(t, *LIGHT, '-T', 0.5, '--sweep', '1000,3000')
    assert doc['mode'] == 'sweep' and doc['ok'] and doc['failures'] == 0, doc
    assert [s['rate'] for s in doc['steps']] == [1000, 3000], doc
    for s in doc['steps']:
        check_step(s, s['rate'] // 4)
        assert s['requests'] + s['unsent'] == s['rate'] // 2, s
        assert isinstance(s['sustained'], bool), s


@xkv_only
@test
def bench_json_output(t):
    _, doc = bench_json(t, *LIGHT, '-T', 1, '--key-pattern', 'zipf', '--data-size', 100)
    assert doc['tool'] == 'xkv-bench' and doc['mode'] == 'closed', doc
    assert doc['ok'] is True and doc['failures'] == 0 and doc['prefill'] is None, doc
    assert doc['config']['threads'] == 2 and doc['config']['connections'] == 4, doc
    assert doc['config']['command'] == 'SET:GET 1:10', doc
    (step,) = doc['steps']
    assert step['rate'] is None and step['sustained'] is None, step
    check_step(step, 200)
    assert step['achieved'] > 0 and step['bytes_in'] > 0, step


@xkv_only
@test
def bench_prefill(t):
    _, doc = bench_json(t, *LIGHT, '--prefill', '--keys', 3000, '--requests', 1000)
    check_step(doc['prefill'], 3000)
    assert doc['prefill']['requests'] == 3000, doc['prefill']
    (step,) = doc['steps']
    check_step(step, 1000)
    assert step['requests'] == 1000, step
    # Every key was SET once; the run's SETs stay inside the same key space.
    assert t.sut.call('DBSIZE') == 3000
    assert len(t.sut.call('GET', 'key:2999')) == 32
    # The human report shows the prefill as its own step.
    _, out = bench(t, *LIGHT, '--prefill', '--keys', 500, '--requests', 100)
    assert re.search(r'^prefill$', out, re.M) and re.search(r'^closed loop$', out, re.M), out


@xkv_only
@test
def bench_pipeline(t):
    # 4000 INCRs on one key, 16 in flight per connection: the server counts them too.
    _, doc = bench_json(t, *LIGHT, '-P', 16, '--command', 'incr', '--keys', 1, '-n', 4000)
    (step,) = doc['steps']
    check_step(step, 4000)
    assert step['requests'] == 4000 and doc['config']['pipeline'] == 16, step
    assert t.sut.call('GET', 'key:0') == b'4000'
    # And for a second, by time, with a template and RESP3.
    _, doc = bench_json(t, *LIGHT, '-P', 32, '-T', 1, '--resp', 3,
                        '--command', 'RPUSH __key__ __data__', '--keys', 10, '--key-prefix', 'l:')
    check_step(doc['steps'][0], 1000)
    total = sum(t.sut.call('LLEN', 'l:%d' % i) for i in range(10))
    assert total == doc['steps'][0]['requests'], (total, doc['steps'][0])


@xkv_only
@test
def bench_errors_exit_nonzero(t):
    # INCR on the prefilled letters: every INCR is an error reply.
    rc, doc = bench_json(t, *LIGHT, '--prefill', '--keys', 100, '--command', 'incr',
                         '-n', 500, ok=False)
    assert rc == 1, rc
    assert doc['ok'] is False and doc['failures'] == 500, doc
    (step,) = doc['steps']
    assert step['errors'] == 500 and step['requests'] == 500, step
    assert 'not an integer' in step['first_error'], step
    rc, out = bench(t, *LIGHT, '--prefill', '--keys', 100, '--command', 'incr', '-n', 200, ok=False)
    assert rc == 1 and re.search(r'^  errors +200 error replies', out, re.M), out
    assert 'FAILED' in out, out


@xkv_only
@test
def bench_udp(t):
    # xkvd serves UDP on its TCP port; the harness runs it without the fast
    # path, so the daemon answers every datagram and the kernel none.
    _, doc = bench_json(t, *LIGHT, '--transport', 'udp', '--prefill', '--keys', 200,
                        '--command', 'get', '--data-size', 64, '-n', 2000)
    assert doc['transport'] == 'udp' and doc['config']['udp_pad'] == 1200, doc
    assert doc['ok'] and doc['failures'] == 0, doc
    # The prefill's SETs went over TCP.
    check_step(doc['prefill'], 200)
    assert doc['prefill']['requests'] == 200 and 'kernel_answered' not in doc['prefill'], doc
    assert t.sut.call('DBSIZE') == 200
    (step,) = doc['steps']
    check_step(step, 2000)
    assert step['requests'] == 2000, step
    assert step['kernel_answered'] == 0 and step['kernel_answered_pct'] == 0, step
    # Every GET found its 64-byte value: "$64\r\n" + value + "\r\n".
    assert step['bytes_in'] == 2000 * 71, step
    # Pipelined PINGs by time, in the human report.
    _, out = bench(t, *LIGHT, '--transport', 'udp', '--command', 'ping', '-P', 8, '-T', 1)
    n, _, _, _ = text_step(out)
    assert n >= 200, out
    assert re.search(r'^  kernel answered: 0 \(0\.0%\)$', out, re.M), out
    assert re.search(r' over udp, .*pipeline 8', out), out


@xkv_only
@test
def bench_udp_refuses(t):
    # UDP serves GET and PING only: anything else is a bad command line.
    for args in (['--command', 'set'], ['--ratio', '1:10'], ['--command', 'get', '--resp', 3]):
        rc, _ = bench(t, '--transport', 'udp', '-n', 10, *args, ok=False)
        assert rc == 2, (args, rc)
    # A value larger than the padding comes back truncated: an error reply.
    t.sut.call('SET', 'big', 'x' * 2000)
    rc, doc = bench_json(t, '-t', 1, '-c', 1, '--transport', 'udp', '--command', 'GET big',
                         '-n', 10, ok=False)
    assert rc == 1 and doc['steps'][0]['errors'] == 10, doc
    assert 'raise --udp-pad' in doc['steps'][0]['first_error'], doc
    _, doc = bench_json(t, '-t', 1, '-c', 1, '--transport', 'udp', '--command', 'GET big',
                        '--udp-pad', 2100, '-n', 10)
    assert doc['steps'][0]['bytes_in'] == 10 * len('$2000\r\n' + 'x' * 2000 + '\r\n'), doc
