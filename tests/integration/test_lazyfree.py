# SPDX-License-Identifier: GPL-2.0-only
"""Lazy freeing: UNLINK, FLUSHALL/FLUSHDB ASYNC (and SYNC as Redis 8.8's
blocking ASYNC), SCRIPT/FUNCTION FLUSH ASYNC, the lazyfree-lazy-* directives,
Redis's free-effort rule (a value of more than 64 allocations goes to the
background thread) and INFO's lazyfree_pending_objects / lazyfreed_objects.
What is checked is what Redis 8.8 reports (the counts were taken from it),
never a duration: a value freed in the background is seen through
lazyfreed_objects, which counts only what the background thread freed."""

from harness import RespError, decode, info_fields, test, wait_until, xkv_only


def memory(c):
    return info_fields(c.call('INFO', 'memory'))['memory']


def freed(c):
    return int(memory(c)['lazyfreed_objects'])


def settled(c):
    """Waits (bounded) until nothing is pending; returns lazyfreed_objects."""
    assert wait_until(lambda: memory(c)['lazyfree_pending_objects'] == '0', timeout=30)
    return freed(c)


def big_set(c, key, n, batch=10000):
    for start in range(0, n, batch):
        c.send('SADD', key, *[str(i) for i in range(start, min(n, start + batch))])
    for _ in range(0, n, batch):
        assert c.read_reply().startswith(b':')


def fresh(srv):
    c = srv.client(timeout=30)
    c.call('FLUSHALL')
    settled(c)
    c.call('CONFIG', 'RESETSTAT')
    return c


@test
@xkv_only
def unlink_of_a_million_member_set_frees_it_in_the_background(t):
    with fresh(t.sut) as c:
        base = int(memory(c)['used_memory'])
        big_set(c, 'big', 1000000)
        assert c.call('SCARD', 'big') == 1000000
        peak = int(memory(c)['used_memory'])
        assert peak > base + 20 * 1024 * 1024, (base, peak)
        assert c.call('UNLINK', 'big', 'nokey') == 1
        # Gone at once for every command, freed behind them.
        assert c.call('EXISTS', 'big') == 0
        assert settled(c) == 1
        # The accounting took in the other thread's frees.
        assert int(memory(c)['used_memory']) < base + 4 * 1024 * 1024
        assert c.call('SADD', 'big', 'a') == 1


@test
@xkv_only
def the_free_effort_rule_decides_what_leaves_the_command_path(t):
    with fresh(t.sut) as c:
        # Hash-table sets of 64 and 65 members: 64 is freed inline.
        c.call('CONFIG', 'SET', 'set-max-listpack-entries', '0', 'set-max-intset-entries', '0')
        try:
            c.call('SADD', 's64', *['m%d' % i for i in range(64)])
            c.call('SADD', 's65', *['m%d' % i for i in range(65)])
            assert c.call('OBJECT', 'ENCODING', 's64') == b'hashtable'
            assert c.call('UNLINK', 's64') == 1
            assert settled(c) == 0
            assert c.call('UNLINK', 's65') == 1
            assert settled(c) == 1
        finally:
            c.call('CONFIG', 'SET', 'set-max-listpack-entries', '128',
                   'set-max-intset-entries', '512')
        # A string is one allocation whatever its size; a packed value too.
        c.call('SET', 'str', 'x' * 1000000)
        c.call('RPUSH', 'small', *range(100))
        assert c.call('UNLINK', 'str', 'small') == 2
        assert settled(c) == 1
        # Quicklist nodes, skiplist members, hash fields.
        c.call('RPUSH', 'l', *['x' * 100 for _ in range(20000)])
        assert c.call('OBJECT', 'ENCODING', 'l') == b'quicklist'
        c.call('ZADD', 'z', *[x for i in range(200) for x in (i, 'm%d' % i)])
        c.call('HSET', 'h', *[x for i in range(600) for x in ('f%d' % i, i)])
        assert c.call('OBJECT', 'ENCODING', 'h') == b'hashtable'
        assert c.call('UNLINK', 'l', 'z', 'h') == 3
        assert settled(c) == 4


@test
@xkv_only
def flushall_async_empties_at_once_and_new_writes_work(t):
    with fresh(t.sut) as c:
        for i in range(0, 1000, 100):
            c.call('MSET', *[x for j in range(i, i + 100) for x in ('k%d' % j, j)])
        c.call('SELECT', '9')
        big_set(c, 'big', 100000)
        c.call('SELECT', '0')
        assert c.call('FLUSHALL', 'ASYNC') == b'OK'
        assert c.call('DBSIZE') == 0
        assert c.call('GET', 'k1') is None
        assert c.call('SET', 'k1', 'new') == b'OK'
        assert c.call('GET', 'k1') == b'new'
        c.call('SELECT', '9')
        assert c.call('DBSIZE') == 0
        assert c.call('SADD', 'big', 'x') == 1
        # Every key counts once, as Redis counts a flushed database.
        assert settled(c) == 1001
        assert c.call('FLUSHDB', 'ASYNC') == b'OK'
        assert c.call('DBSIZE') == 0
        assert settled(c) == 1002
        assert c.call('FLUSHALL', 'bogus') == RespError('ERR syntax error')


@test
@xkv_only
def flush_sync_runs_as_blocking_async_outside_multi(t):
    """Redis 8.8: FLUSHALL/FLUSHDB SYNC answer once the background thread
    freed the keys (so lazyfreed_objects counts them at the reply); inside
    MULTI they free the keys themselves."""
    with fresh(t.sut) as c:
        c.call('MSET', 'a', 1, 'b', 2, 'c', 3)
        assert c.call('FLUSHALL') == b'OK'
        assert freed(c) == 3
        c.call('MSET', 'a', 1, 'b', 2)
        assert c.call('FLUSHDB', 'SYNC') == b'OK'
        assert freed(c) == 5
        # Pipelined: the commands after it wait for its answer, in order.
        c.call('SET', 'x', 1)
        c.send_raw(b'FLUSHALL\r\nFLUSHALL\r\nFLUSHDB\r\nPING\r\nSET y 1\r\nDBSIZE\r\n')
        assert [decode(c.read_reply()) for _ in range(6)] == [b'OK', b'OK', b'OK', b'PONG', b'OK', 1]
        assert freed(c) == 6
        c.call('FLUSHALL')
        c.call('CONFIG', 'RESETSTAT')
        c.call('MSET', 'a', 1, 'b', 2)
        c.call('MULTI')
        c.call('FLUSHALL')
        assert c.call('EXEC') == [b'OK']
        assert c.call('DBSIZE') == 0
        assert memory(c)['lazyfree_pending_objects'] == '0'
        assert freed(c) == 0
        # A client that leaves while it waits: the keys are freed all the same.
        big_set(c, 'big', 100000)
        other = t.sut.client()
        other.send('FLUSHALL')
        other.close()
        assert wait_until(lambda: freed(c) == 1, timeout=30)


@test
@xkv_only
def lazyfree_directives_change_what_is_freed_where(t):
    with fresh(t.sut) as c:
        def run(directive, value, setup, act):
            c.call('CONFIG', 'SET', directive, value)
            try:
                before = settled(c)
                setup()
                act()
                return settled(c) - before
            finally:
                c.call('CONFIG', 'SET', directive, 'no')

        def mkset():
            c.call('DEL', 'big')
            big_set(c, 'big', 1000)

        # DEL is UNLINK under lazyfree-lazy-user-del.
        assert run('lazyfree-lazy-user-del', 'no', mkset, lambda: c.call('DEL', 'big')) == 0
        assert run('lazyfree-lazy-user-del', 'yes', mkset, lambda: c.call('DEL', 'big')) == 1
        # A value overwritten or deleted by the server: SET over it, RENAME
        # onto it, and a pop that empties it (not big by then).
        for act in (lambda: c.call('SET', 'big', 'v'),
                    lambda: (c.call('SET', 'src', 'v'), c.call('RENAME', 'src', 'big'))):
            assert run('lazyfree-lazy-server-del', 'no', mkset, act) == 0
            assert run('lazyfree-lazy-server-del', 'yes', mkset, act) == 1
        c.call('DEL', 'big')

        # Expiry, found by a lookup after the deadline.
        def expiring():
            mkset()
            c.call('PEXPIRE', 'big', 1)
            assert wait_until(lambda: c.call('EXISTS', 'big') == 0, timeout=5)
        assert run('lazyfree-lazy-expire', 'no', expiring, lambda: None) == 0
        assert run('lazyfree-lazy-expire', 'yes', expiring, lambda: None) == 1

        # FLUSHDB without an argument inside MULTI (where SYNC is really
        # synchronous) follows lazyfree-lazy-user-flush.
        def flush_in_multi():
            c.call('MULTI')
            c.call('FLUSHDB')
            assert c.call('EXEC') == [b'OK']
        assert run('lazyfree-lazy-user-flush', 'no', mkset, flush_in_multi) == 0
        assert run('lazyfree-lazy-user-flush', 'yes', mkset, flush_in_multi) == 1


@test
@xkv_only
def lazyfree_lazy_eviction_frees_the_evicted_value_in_the_background(t):
    srv = t.spawn('sut')
    with srv.client(timeout=30) as c:
        c.call('CONFIG', 'SET', 'maxmemory-policy', 'allkeys-random',
               'lazyfree-lazy-eviction', 'yes')
        big_set(c, 'big', 100000)
        used = int(memory(c)['used_memory'])
        c.call('CONFIG', 'SET', 'maxmemory', str(used - 1024 * 1024))
        c.call('SET', 'k', 'v')
        assert c.call('EXISTS', 'big') == 0
        assert settled(c) == 1
        c.call('CONFIG', 'SET', 'maxmemory', '0')


@test
@xkv_only
def script_and_function_flush_async_count_as_redis_does(t):
    with fresh(t.sut) as c:
        for i in range(100):
            c.call('SCRIPT', 'LOAD', 'return %d' % i)
        assert c.call('SCRIPT', 'FLUSH', 'ASYNC') == b'OK'
        assert c.call('SCRIPT', 'EXISTS', 'e0e1f9fabfc9d4800c877a703b823ac0578ff8db') == [0]
        assert settled(c) == 100
        for i in range(10):
            c.call('SCRIPT', 'LOAD', 'return %d' % i)
        assert c.call('SCRIPT', 'FLUSH', 'ASYNC') == b'OK'
        assert settled(c) == 100
        code = '#!lua name=lib\n' + ''.join(
            "redis.register_function('f%d', function() return %d end)\n" % (i, i)
            for i in range(70))
        assert c.call('FUNCTION', 'LOAD', code) == b'lib'
        assert c.call('FUNCTION', 'FLUSH', 'ASYNC') == b'OK'
        assert c.call('FUNCTION', 'LIST') == []
        # 70 functions and the engine.
        assert settled(c) == 171
        assert c.call('FUNCTION', 'LOAD', code) == b'lib'
        assert c.call('FCALL', 'f7', 0) == 7


@test
def info_reports_lazyfree_fields_and_resetstat_clears_them(t):
    def fields(srv):
        with srv.client(timeout=30) as c:
            c.call('FLUSHALL')
            settled(c)
            c.call('CONFIG', 'RESETSTAT')
            big_set(c, 'big', 1000)
            c.call('UNLINK', 'big')
            n = settled(c)
            m = memory(c)
            c.call('CONFIG', 'RESETSTAT')
            return (n, 'lazyfree_pending_objects' in m, freed(c))
    assert t.same(fields) == (1, True, 0)


@test
@xkv_only
def shutdown_with_frees_pending_drains_the_pool_and_exits_cleanly(t):
    """Exit with frees queued (or just done): the pool is stopped after the
    workers and before their mailboxes go, and the server exits 0 with no
    sanitizer report (the lazyfree-asan tier). That stop drains the queue is
    test_bgjob's to show: a job left queued is still reachable from the
    queue, so LeakSanitizer would not report it."""
    srv = t.spawn('sut')
    with srv.client(timeout=30) as c:
        for k in range(4):
            big_set(c, 'big%d' % k, 100000)
        c.send('UNLINK', 'big0', 'big1', 'big2', 'big3')
        c.send('SELECT', '1')
        c.send('SADD', 'other', *range(1000))
        c.send('FLUSHALL', 'ASYNC')
        assert [decode(c.read_reply()) for _ in range(4)] == [4, b'OK', 1000, b'OK']
    srv.stop()
    assert srv.proc.returncode == 0, srv.proc.returncode
    assert b'ready to exit' in srv.log_bytes()
    assert not srv.sanitizer_reports()
