# SPDX-License-Identifier: GPL-2.0-only
"""Concurrent clients (each its own connection, so they spread over the
server's worker threads), the python `redis` client and redis-cli."""

import subprocess
import threading

import redis

from harness import REDIS_CLI, HOST, decode, encode, test


def run_threads(n, target, timeout=120):
    errors = []

    def wrap(i):
        try:
            target(i)
        except Exception as e:          # reported by the main thread
            errors.append('thread %d: %r' % (i, e))
    threads = [threading.Thread(target=wrap, args=(i,), daemon=True) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout)
    assert not any(th.is_alive() for th in threads), 'threads still running after %d s' % timeout
    assert not errors, errors


@test
def incr_8_clients(t):
    batch = encode(('INCR', 'counter')) * 100

    def worker(_):
        # 10,000 INCRs, pipelined 100 at a time; each client sees increasing values.
        with t.sut.client(timeout=30) as c:
            last = 0
            for _ in range(100):
                c.send_raw(batch)
                for _ in range(100):
                    v = decode(c.read_reply())
                    assert isinstance(v, int) and v > last, (v, last)
                    last = v
    run_threads(8, worker)
    assert t.sut.call('GET', 'counter') == b'80000'


@test
def mset_is_atomic(t):
    done = threading.Event()

    def worker(i):
        with t.sut.client(timeout=30) as c:
            if i < 2:                       # writers
                for n in range(2000):
                    v = '%d-%d' % (i, n)
                    assert c.cmd('MSET', 'a', v, 'b', v, 'c', v) == b'+OK\r\n'
            else:                           # readers: never see a half-applied MSET
                while not done.is_set():
                    a, b, c_ = c.call('MGET', 'a', 'b', 'c')
                    assert a == b == c_, (a, b, c_)
    readers = threading.Thread(target=lambda: run_threads(2, lambda i: worker(i + 2)))
    readers.start()
    try:
        run_threads(2, worker)
    finally:
        done.set()
        readers.join(60)


@test
def many_clients_distinct_keys(t):
    def worker(i):
        with t.sut.client(timeout=30) as c:
            for n in range(300):
                assert c.cmd('SET', 'c%d:%d' % (i, n), n) == b'+OK\r\n'
            got = c.call('MGET', *['c%d:%d' % (i, n) for n in range(300)])
            assert got == [str(n).encode() for n in range(300)]
    run_threads(16, worker)
    assert t.sut.call('DBSIZE') == 16 * 300


def redis_py_session(srv):
    r = redis.Redis(host=HOST, port=srv.port, db=1, client_name='it-client', socket_timeout=10)
    try:
        out = [r.ping(), r.set('k', 'v'), r.get('k'), r.set('k', 'w', nx=True),
               r.mset({'a': 1, 'b': 2}), r.mget('a', 'b', 'nokey'), r.incr('n', 5),
               r.incrbyfloat('f', 1.5), r.expire('k', 100), 98 <= r.ttl('k') <= 100,
               r.persist('k'), r.ttl('k'), r.exists('k', 'a', 'nokey'), r.delete('a', 'b'),
               r.client_getname(), r.dbsize(), r.config_get('timeout'),
               'redis_version' in r.info(), 'db1' in r.info('keyspace'),
               r.getex('k', persist=True), r.append('k', 'x'), r.getrange('k', 0, 0),
               r.rename('k', 'k2'), r.type('k2'), sorted(r.scan_iter(match='*')),
               r.echo('hi'), r.time()[0] > 0]
        pipe = r.pipeline(transaction=False)     # no MULTI: plain pipelining
        for _ in range(100):
            pipe.incr('p')
        out.append(pipe.execute())
        try:
            r.incr('k2')
        except redis.ResponseError as e:
            out.append(str(e))
        return out
    finally:
        r.close()


@test
def python_redis_client(t):
    out = t.same(redis_py_session, 'redis-py results')
    assert out[2] == b'v' and out[5] == [b'1', b'2', None] and out[-2] == list(range(1, 101)), out
    assert out[-1] == 'value is not an integer or out of range', out[-1]


CLI_RUNS = [
    (['SET', 'k', 'v'], b''), (['GET', 'k'], b''), (['--raw', 'GET', 'k'], b''),
    (['--no-raw', 'GET', 'k'], b''), (['--no-raw', 'MGET', 'k', 'nokey'], b''),
    (['-3', '--no-raw', 'MGET', 'k', 'nokey'], b''), (['-n', '2', 'SET', 'x', '1'], b''),
    (['-n', '2', '--no-raw', 'GET', 'x'], b''), (['--no-raw', 'TTL', 'k'], b''),
    (['--no-raw', 'INCRBYFLOAT', 'f', '1.5'], b''), (['--no-raw', 'CONFIG', 'GET', 'timeout'], b''),
    (['-e', 'INCR', 'k'], b''), (['--no-raw', 'foo', 'x'], b''),
    (['-x', 'SET', 'fromstdin'], b'line1\nline2\n'), (['GET', 'fromstdin'], b''),
    ([], b'SET a 1\nINCR a\nGET a\n'),
    (['--pipe'], b''.join(encode(('SET', 'p%d' % i, i)) for i in range(1000))),
    (['DBSIZE'], b''),
]


@test
def redis_cli(t):
    def session(srv):
        out = []
        for args, stdin in CLI_RUNS:
            p = subprocess.run([REDIS_CLI, '-h', HOST, '-p', str(srv.port)] + args, input=stdin,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
            out.append((args, p.returncode, p.stdout))
        return out
    out = t.same(session, 'redis-cli output')
    assert out[1][2] == b'v\n' and out[3][2] == b'"v"\n', out[:4]
    assert b'errors: 0, replies: 1000' in out[-2][2], out[-2]
