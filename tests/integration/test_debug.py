# SPDX-License-Identifier: GPL-2.0-only
"""DEBUG (enable-debug-command, DIGEST and DIGEST-VALUE against Redis's own
digests, OBJECT, PROTOCOL, SET-ACTIVE-EXPIRE, QUICKLIST-PACKED-THRESHOLD,
POPULATE, the errors), INFO's persistence/replication/modules/cluster
sections and section selection, and the replies the Redis test suite caught:
TTL/TYPE/EXISTS leave a key's idle time, CLIENT PAUSE-held writes count as
blocked clients, CLIENT LIST's fields, and MONITOR's redaction after a
connection that ran AUTH closes."""

import re
import time

import redis

from harness import Ignore, info_fields, test, wait_until, xkv_only

DIGEST = re.compile(rb'^\+[0-9a-f]{40}\r\n$')
OBJECT_LINE = re.compile(
    rb'^\+Value at:0x[0-9a-f]+ refcount:(\d+) encoding:(\S+) serializedlength:(\d+) '
    rb'lru:(\d+) lru_seconds_idle:(\d+)(.*)\r\n$')
REFUSED = (b'-ERR DEBUG command not allowed. If the enable-debug-command option is set to '
           b'"local", you can run it from a local connection, otherwise you need to set this '
           b'option in the configuration file, and then restart the server.\r\n')


def dataset(c):
    """Every type, small and large encodings, deadlines, two databases."""
    c.call('SET', 's', 'hello')
    c.call('SET', 'i', 12345)
    c.call('SET', 'big', 'x' * 100)
    c.call('RPUSH', 'l', 'a', 'b', 3, 'c')
    c.call('RPUSH', 'ql', *['e%d' % i for i in range(300)], 'y' * 200)
    c.call('SADD', 'si', 1, 2, 3, 100, -5)
    c.call('SADD', 'ss', 'x', 'y', 'z', 1)
    c.call('SADD', 'sh', *['m%d' % i for i in range(300)])
    c.call('HSET', 'h', 'f1', 'v1', 'f2', 2)
    c.call('HSET', 'hh', *[x for i in range(300) for x in ('f%d' % i, 'v%d' % i)])
    # Scores whose text is the same with %.17g (7.0) and Redis 8's shortest form.
    c.call('ZADD', 'z', 1, 'a', 2.5, 'b', -3, 'c', 100, 'm')
    c.call('ZADD', 'zz', *[x for i in range(300) for x in (i, 'z%d' % i)])
    c.call('SET', 'e', 'x', 'EX', 100)
    c.call('SELECT', 3)
    c.call('SET', 'k3', 'v')
    c.call('SELECT', 0)


KEYS = ['s', 'i', 'big', 'l', 'ql', 'si', 'ss', 'sh', 'h', 'hh', 'z', 'zz', 'e', 'nokey']


@test
def digest_is_redis_digest(t):
    def digests(srv):
        with srv.client() as c:
            empty = c.cmd('DEBUG', 'DIGEST')
            dataset(c)
            values = c.call('DEBUG', 'DIGEST-VALUE', *KEYS)
            whole = c.cmd('DEBUG', 'DIGEST')
            c.call('DEL', 'ss')
            less = c.cmd('DEBUG', 'DIGEST')
            c.call('FLUSHALL')
            return empty, values, whole, less
    empty, values, whole, less = t.same(digests, 'digests')
    assert empty == b'+' + b'0' * 40 + b'\r\n', empty
    assert DIGEST.match(whole) and whole != less, (whole, less)
    assert values[-1] == b'0' * 40 and len(set(values)) == len(values), values
    t.compare([('DEBUG', 'DIGEST-VALUE'), ('DEBUG', 'DIGEST', 'x'), ('DEBUG', 'DIGEST-VALUE', 'x')])


@test
@xkv_only
def digest_of_scores_and_field_deadlines_as_redis_8(t):
    # Redis 8.8's values: scores in its shortest form ("0.1", "1e+21"), and a
    # field with a deadline marks its hash (HEXPIRE, which 7.0 lacks).
    with t.sut.client() as c:
        c.call('ZADD', 'zf', 0.1, 'a', '1e21', 'b', '1.5e-7', 'c', -0.25, 'd', 123456.789, 'e')
        c.call('HSET', 'hf', 'f1', 'v1', 'f2', 'v2')
        c.call('HEXPIRE', 'hf', 1000, 'FIELDS', 1, 'f1')
        got = c.call('DEBUG', 'DIGEST-VALUE', 'zf', 'hf'), c.call('DEBUG', 'DIGEST')
        c.call('FLUSHALL')
    assert got == ([b'1feaf302c45ff416c24a8d2026c8108291b6e580',
                    b'c0a4c76394f815dbaa91c1fd2331c14d8dd7df19'],
                   b'0a71b47a09e0acaca0574bd3d47a97f324a549a0'), got


@test
def debug_refused_unless_enabled(t):
    for value, allowed in (('no', False), ('local', True), ('yes', True)):
        ref, sut = t.spawn_pair(**{'enable-debug-command': value})
        for srv in (ref, sut):
            with srv.client() as c:
                got = c.cmd('DEBUG', 'SLEEP', 0)
                assert got == (b'+OK\r\n' if allowed else REFUSED), (srv.label, value, got)
                if not allowed:
                    # Refused before running: a transaction with it is doomed.
                    assert c.cmd('MULTI') == b'+OK\r\n'
                    assert c.cmd('DEBUG', 'SLEEP', 0) == REFUSED
                    assert c.cmd('EXEC').startswith(b'-EXECABORT'), srv.label
        t.cleanup()
    # The refusal comes before the authentication check, as in Redis.
    for srv in t.spawn_pair(**{'enable-debug-command': 'no', 'requirepass': 'pw'}):
        with srv.client() as c:
            assert c.cmd('DEBUG', 'SLEEP', 0) == REFUSED, srv.label
            assert c.cmd('GET', 'k') == b'-NOAUTH Authentication required.\r\n', srv.label


@test
def debug_errors_and_protocol(t):
    steps = [('DEBUG',), ('DEBUG', 'nosuch'), ('DEBUG', 'SET-ACTIVE-EXPIRE'),
             ('DEBUG', 'OBJECT', 'nokey'), ('DEBUG', 'LISTPACK', 'nokey'),
             ('SET', 'k', 'v'), ('DEBUG', 'LISTPACK', 'k'), ('HSET', 'h', 'f', 'v'),
             ('DEBUG', 'LISTPACK', 'h'), ('DEBUG', 'QUICKLIST-PACKED-THRESHOLD', '5gb'),
             ('DEBUG', 'QUICKLIST-PACKED-THRESHOLD', '-1'),
             ('DEBUG', 'QUICKLIST-PACKED-THRESHOLD', '0'), ('DEBUG', 'REPLYBUFFER', 'x'),
             ('DEBUG', 'ERROR', 'MYERR some\r\nthing'), ('DEBUG', 'POPULATE', 'x'),
             ('DEBUG', 'POPULATE', -1), ('DEBUG', 'POPULATE', 5), ('DEBUG', 'POPULATE', 3, 'p', 12),
             ('DEBUG', 'POPULATE', 2, 'p', 3), ('MGET', 'key:0', 'key:4', 'key:5', 'p:0', 'p:2'),
             ('DEBUG', 'SET-ACTIVE-EXPIRE', 1), ('DEBUG', 'PAUSE-CRON', 0),
             ('DEBUG', 'LOG', 'from the test'),
             Ignore('DEBUG', 'CHANGE-REPL-ID'), ('DEBUG', 'SLEEP', 0), ('FLUSHALL',)]
    steps += [('DEBUG', 'PROTOCOL', kind) for kind in
              ('string', 'integer', 'double', 'bignum', 'null', 'array', 'set', 'map', 'attrib',
               'verbatim', 'true', 'false', 'nosuch')]
    t.compare(steps)
    t.compare(steps, proto=3)
    t.compare([('DEBUG', 'PROTOCOL', 'push')])   # RESP2: an error


@test
@xkv_only
def debug_as_redis_8(t):
    # Redis 8 sends a command's pushes after its reply (7.0 before it).
    with t.sut.client(proto=3) as c:
        c.send('DEBUG', 'PROTOCOL', 'push')
        got = c.read_replies(2)
        assert got == (b'$40\r\nSome real reply following the push reply\r\n'
                       b'>2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n'), got
        assert c.cmd('PING') == b'+PONG\r\n'
    # Redis 8's (7.0 lacks DICT-RESIZING and listpack lists; JMAP is not
    # implemented).
    with t.sut.client() as c:
        c.call('RPUSH', 'l', 'a')
        assert c.cmd('DEBUG', 'LISTPACK', 'l') == b'+Listpack structure printed on stdout\r\n'
        assert c.cmd('DEBUG', 'DICT-RESIZING', 0) == b'+OK\r\n'
        assert c.cmd('DEBUG', 'DICT-RESIZING', 1) == b'+OK\r\n'
        assert c.cmd('DEBUG', 'JMAP') == (b"-ERR unknown subcommand or wrong number of "
                                          b"arguments for 'JMAP'. Try DEBUG HELP.\r\n")
        assert c.cmd('DEBUG', 'RELOAD') == b'+OK\r\n'
        assert c.call('LRANGE', 'l', 0, -1) == [b'a']
        c.call('FLUSHALL')


@test
def debug_object(t):
    def lines(srv):
        with srv.client() as c:
            c.call('SET', 'n', 20000)
            c.call('SET', 's', 'hello')
            c.call('HSET', 'h', 'f', 'v')
            got = [OBJECT_LINE.match(c.cmd('DEBUG', 'OBJECT', k)) for k in ('n', 's', 'h')]
            c.call('FLUSHALL')
        assert all(got), got
        # serializedlength: only strings are written as Redis's RDB would.
        return [(m.group(1), m.group(2), m.group(3) if i < 2 else b'', m.group(6))
                for i, m in enumerate(got)]
    got = t.same(lines, 'DEBUG OBJECT')
    assert [g[1] for g in got] == [b'int', b'embstr', b'listpack'], got


@test
@xkv_only
def debug_object_quicklist_and_packed_threshold(t):
    with t.sut.client() as c:
        # Quicklists carry their node details; with a 1-byte packed threshold
        # every element pushed once the list is a quicklist lives in a node of
        # its own (Redis's plain nodes): the first four stay in the listpack
        # that became the first node, as Redis 8.8 does for single pushes.
        c.call('CONFIG', 'SET', 'list-max-listpack-size', 4)
        try:
            for threshold, nodes in (('0', b'3'), ('1b', b'7')):
                assert c.call('DEBUG', 'QUICKLIST-PACKED-THRESHOLD', threshold) == b'OK'
                c.call('DEL', 'q')
                for i in range(10):
                    c.call('RPUSH', 'q', i)
                m = OBJECT_LINE.match(c.cmd('DEBUG', 'OBJECT', 'q'))
                assert m and m.group(2) == b'quicklist', m
                assert m.group(6).startswith(b' ql_nodes:%s ql_avg_node:' % nodes), m.group(6)
                assert c.call('LRANGE', 'q', 0, -1) == [b'%d' % i for i in range(10)]
        finally:
            c.call('DEBUG', 'QUICKLIST-PACKED-THRESHOLD', 0)
            c.call('CONFIG', 'SET', 'list-max-listpack-size', -2)
            c.call('FLUSHALL')



@test
@xkv_only
def debug_object_quicklist_compress_flag(t):
    # ql_compressed is Redis's "a compress depth is set" flag (sort.tcl's
    # SORT STORE check), not whether a node is compressed.
    with t.sut.client() as c:
        c.call('RPUSH', 'q', *range(200))
        c.call('CONFIG', 'SET', 'list-max-listpack-size', 4)
        try:
            c.call('SORT', 'q', 'STORE', 'd')
            for depth, flag in ((0, b'0'), (12, b'1')):
                c.call('CONFIG', 'SET', 'list-compress-depth', depth)
                m = OBJECT_LINE.match(c.cmd('DEBUG', 'OBJECT', 'd'))
                assert m and m.group(2) == b'quicklist', m
                assert b' ql_compressed:%s ' % flag in m.group(6), m.group(6)
        finally:
            c.call('CONFIG', 'SET', 'list-compress-depth', 0)
            c.call('CONFIG', 'SET', 'list-max-listpack-size', -2)
            c.call('FLUSHALL')

@test
def set_active_expire_off_keeps_expired_keys(t):
    def scenario(srv):
        with srv.client() as c:
            c.call('DEBUG', 'SET-ACTIVE-EXPIRE', 0)
            try:
                c.call('SET', 'k', 'v', 'PX', 20)
                time.sleep(0.3)
                kept = c.call('DBSIZE')                 # nobody touched it
                c.call('DEBUG', 'SET-ACTIVE-EXPIRE', 1)
                gone = wait_until(lambda: c.call('DBSIZE') == 0, timeout=10)
            finally:
                c.call('DEBUG', 'SET-ACTIVE-EXPIRE', 1)
            return kept, gone
    assert t.same(scenario, 'DBSIZE with active expiry off, then on') == (1, True)


@test
def ttl_type_exists_leave_the_idle_time(t):
    def idle(srv):
        with srv.client() as c:
            c.call('SET', 'foo', 'bar')
            # Redis's LRU clock has 1 s steps and lags up to a cron period.
            time.sleep(2.5)
            c.call('TTL', 'foo')
            c.call('PTTL', 'foo')
            c.call('TYPE', 'foo')
            c.call('EXISTS', 'foo')
            after_looks = c.call('OBJECT', 'IDLETIME', 'foo')
            c.call('TOUCH', 'foo')
            after_touch = c.call('OBJECT', 'IDLETIME', 'foo')
            c.call('FLUSHALL')
            return after_looks >= 2, after_touch < 2
    assert t.same(idle, 'idle time') == (True, True)


def blocked_count(c):
    return int(info_fields(c.call('INFO', 'clients'))['clients']['blocked_clients'])


@test
def paused_write_counts_as_blocked(t):
    def scenario(srv):
        with srv.client() as c, srv.client() as w:
            assert c.call('CLIENT', 'PAUSE', 10000, 'WRITE') == b'OK'
            try:
                w.send('SET', 'k', 'v')
                held = wait_until(lambda: blocked_count(c) == 1)
                flags = [line for line in c.call('CLIENT', 'LIST').split(b'\n')
                         if b'cmd=client|list' not in line and line]
            finally:
                c.call('CLIENT', 'UNPAUSE')
            assert w.read_reply() == b'+OK\r\n'
            released = wait_until(lambda: blocked_count(c) == 0)
            c.call('FLUSHALL')
            return held, [b'flags=b' in x for x in flags], released
    assert t.same(scenario, 'blocked_clients under CLIENT PAUSE') == (True, [True], True)


@test
def monitor_redaction_is_per_connection(t):
    # A freed client's memory is soon a new client's: a record of the AUTH
    # that the old one ran must not redact the new one's first command.
    def scenario(srv):
        with srv.client(timeout=10) as mon:
            assert mon.cmd('MONITOR') == b'+OK\r\n'
            for i in range(20):
                with srv.client() as a:
                    a.cmd('AUTH', 'secret%d' % i)
                with srv.client() as b:
                    b.cmd('SET', 'k%d' % i, 'v%d' % i)
            with srv.client() as b:
                b.cmd('ECHO', 'end')
            lines = []
            while b'"end"' not in (lines[-1] if lines else b''):
                lines.append(mon.read_reply())
        with srv.client() as c:
            c.call('FLUSHALL')
        sets = [x for x in lines if b'"SET"' in x]
        auths = [x for x in lines if b'"AUTH"' in x]
        return (len(sets), all(b'(redacted)' not in x for x in sets),
                all(x.endswith(b'"AUTH" "(redacted)"\r\n') for x in auths))
    assert t.same(scenario, 'monitor lines') == (20, True, True)


# Redis 8.8's CLIENT LIST fields, in its order.
CLIENT_FIELDS = ('id addr laddr fd name age idle flags db sub psub ssub multi watch qbuf '
                 'qbuf-free argv-mem multi-mem rbs rbp obl oll omem omem-shared omem-unshared '
                 'tot-mem events cmd user redir resp lib-name lib-ver io-thread tot-net-in '
                 'tot-net-out tot-cmds read-events avg-pipeline-len-sum '
                 'avg-pipeline-len-cnt').split()


def client_fields(line):
    return dict(f.split(b'=', 1) for f in line.strip().split(b' '))


@test
@xkv_only
def client_list_fields(t):
    with t.sut.client() as c, t.sut.client() as idle:
        idle.call('CLIENT', 'SETNAME', 'idle')
        idle.call('WATCH', 'a', 'b')
        idle.call('WATCH', 'a')                 # already watched: no change
        c.call('WATCH', 'b', 'c')
        clients = info_fields(c.call('INFO', 'clients'))['clients']
        assert (clients['watching_clients'], clients['total_watched_keys']) == ('2', '3'), clients
        c.call('UNWATCH')
        own = client_fields(c.call('CLIENT', 'INFO'))
        assert list(own) == [f.encode() for f in CLIENT_FIELDS], list(own)
        # The running CLIENT INFO's 26 bytes are still "qbuf", as in Redis
        # without I/O threads (io-threads 1); its arguments are argv-mem
        # ("client" "info").
        assert own[b'qbuf'] == b'26' and own[b'argv-mem'] == b'10', own
        assert own[b'multi'] == b'-1', own
        # A CLIENT INFO request is 26 bytes. (When the sends of its reply
        # complete is the engine's business: tot-net-out is not checked.)
        again = client_fields(c.call('CLIENT', 'INFO'))
        steps = {k: int(again[k]) - int(own[k]) for k in (b'tot-net-in', b'tot-cmds')}
        assert steps == {b'tot-net-in': 26, b'tot-cmds': 1}, steps
        listed = [client_fields(x) for x in c.call('CLIENT', 'LIST').split(b'\n') if x]
        other = [x for x in listed if x[b'name'] == b'idle'][0]
        # An idle connection has given its query buffer back.
        assert (other[b'qbuf'], other[b'qbuf-free'], other[b'argv-mem']) == (b'0', b'0', b'0')
        assert other[b'watch'] == b'2' and other[b'tot-cmds'] == b'3', other
        assert c.call('MULTI') == b'OK' and c.call('PING') == b'QUEUED'
        c.send('CLIENT', 'INFO')
        assert c.read_reply() == b'+QUEUED\r\n'
        inside = client_fields(c.call('EXEC')[1])
        assert inside[b'multi'] == b'2' and int(inside[b'multi-mem']) > 0, inside


@test
def info_sections(t):
    def names(srv, *args):
        with srv.client() as c:
            text = c.call('INFO', *args).decode()
        return [x[2:] for x in text.split('\r\n') if x.startswith('# ')]

    # Redis's order; xkvd adds Hotkeys and Keysizes (8.x) and its own Fastpath.
    for args in ((), ('default',), ('all',), ('everything',), ('cpu', 'all')):
        ref, sut = names(t.ref, *args), names(t.sut, *args)
        theirs = [x for x in sut if x not in ('Hotkeys', 'Keysizes', 'Fastpath')]
        assert theirs == [x for x in ref if x != 'Threads'], (args, ref, sut)
    assert names(t.sut, 'modules') == ['Modules'] == names(t.ref, 'modules')
    assert names(t.sut, 'module_list') == ['Modules']
    with t.sut.client() as c:
        info = info_fields(c.call('INFO', 'all'))
        assert 'master_repl_offset' in info['replication'], info['replication']
        assert 'rejected_calls' not in c.call('INFO', 'cpu', 'default').decode()
    for sec in ('persistence', 'replication', 'cluster'):
        ref = info_fields(t.ref.call('INFO', sec))[sec]
        sut = info_fields(t.sut.call('INFO', sec))[sec]
        assert set(ref) <= set(sut), (sec, sorted(set(ref) - set(sut)))
        # Every field 7.0 has, in 7.0's order.
        order = [k for k in sut if k in ref]
        assert order == list(ref), (sec, order, list(ref))
    rep = info_fields(t.sut.call('INFO', 'replication'))['replication']
    assert rep['role'] == 'master' and rep['connected_slaves'] == '0', rep
    assert re.match(r'^[0-9a-f]{40}$', rep['master_replid']) and rep['second_repl_offset'] == '-1'
    with t.sut.client() as c:
        c.call('DEBUG', 'CHANGE-REPL-ID')
        assert info_fields(c.call('INFO', 'replication'))['replication']['master_replid'] != \
            rep['master_replid']
    per = info_fields(t.sut.call('INFO', 'persistence'))['persistence']
    assert per['loading'] == '0' and per['aof_enabled'] == '0', per
    assert per['rdb_last_bgsave_status'] == 'ok' and per['rdb_bgsave_in_progress'] == '0', per


@test
def info_role_through_redis_py(t):
    for srv in (t.ref, t.sut):
        r = redis.Redis(host='127.0.0.1', port=srv.port)
        try:
            info = r.info()
            assert info['role'] == 'master' and info['loading'] == 0, srv.label
            assert info['cluster_enabled'] == 0 and info['aof_enabled'] == 0, srv.label
        finally:
            r.close()


@test
def rdb_changes_count_key_writes(t):
    def changes(srv):
        with srv.client() as c:
            def dirty():
                sec = info_fields(c.call('INFO', 'persistence'))['persistence']
                return int(sec['rdb_changes_since_last_save'])
            d0 = dirty()
            c.call('SET', 'a', 1)
            c.call('SET', 'b', 2)
            c.call('GET', 'a')
            d1 = dirty()
            c.call('SET', 'c', 3)
            c.call('DEL', 'nokey')             # no change
            d2 = dirty()
            c.call('FLUSHALL')
            return d1 - d0, d2 - d1
    assert t.same(changes, 'rdb_changes_since_last_save steps') == (2, 1)


@test
def debug_populate(t):
    # Existing keys are left alone; a size pads (or cuts) the value.
    t.compare([('SET', 'key:1', 'mine'), ('DEBUG', 'POPULATE', 3), ('MGET', 'key:0', 'key:1', 'key:2'),
               ('DBSIZE',), ('DEBUG', 'POPULATE', 2, 'pad', 20), ('STRLEN', 'pad:1'),
               ('GET', 'pad:0'), ('FLUSHALL',)])


@test
@xkv_only
def info_limit_disconnections(t):
    # Redis 7.2's counters (7.0 lacks them), as Redis's info.tcl drives them.
    srv = t.spawn('sut')

    def stats(c):
        return info_fields(c.call('INFO', 'stats'))['stats']

    with srv.client() as c:
        before = stats(c)
        assert int(before['total_reads_processed']) > 0, before
        c.call('CONFIG', 'SET', 'client-query-buffer-limit', '1mb')
        with srv.client() as big:
            big.send('SET', 'key', 'a' * 2048576)
            _, closed = big.read_until_close(timeout=10)
            assert closed
        assert stats(c)['client_query_buffer_limit_disconnections'] == '1'
        c.call('SET', 'key', 'a' * 100000)
        c.call('CONFIG', 'SET', 'client-output-buffer-limit', 'normal 10 0 0')
        with srv.client() as reader:
            reader.send('GET', 'key')
            _, closed = reader.read_until_close(timeout=10)
            assert closed
        c.call('CONFIG', 'SET', 'client-output-buffer-limit', 'normal 0 0 0')
        after = stats(c)
        assert after['client_output_buffer_limit_disconnections'] == '1', after
        assert int(after['total_writes_processed']) > int(before['total_writes_processed'])


@xkv_only
@test
def allow_access_expired_as_redis_88(t):
    """DEBUG SET-ALLOW-ACCESS-EXPIRED 1: lookups see keys and hash fields
    past their deadlines and delete nothing; 0 restores expiry on access."""
    with t.sut.client() as c:
        c.call('FLUSHALL')
        c.call('DEBUG', 'SET-ACTIVE-EXPIRE', 0)
        try:
            assert c.call('DEBUG', 'SET-ALLOW-ACCESS-EXPIRED', 1) == b'OK'
            c.call('SET', 'k', 'v', 'PX', 1)
            c.call('HSET', 'h', 'f', 1, 'g', 2)
            c.call('HPEXPIRE', 'h', 1, 'FIELDS', 1, 'f')
            time.sleep(0.01)
            assert c.call('KEYS', '*') in ([b'k', b'h'], [b'h', b'k'])
            assert c.call('GET', 'k') == b'v'
            assert c.call('HLEN', 'h') == 2 and c.call('HGET', 'h', 'f') == b'1'
            assert c.call('DEBUG', 'SET-ALLOW-ACCESS-EXPIRED', 0) == b'OK'
            assert c.call('GET', 'k') is None
            assert c.call('HGET', 'h', 'f') is None
            assert c.call('KEYS', '*') == [b'h']
        finally:
            c.call('DEBUG', 'SET-ALLOW-ACCESS-EXPIRED', 0)
            c.call('DEBUG', 'SET-ACTIVE-EXPIRE', 1)


@test
@xkv_only
def debug_mallctl_as_redis_8(t):
    with t.sut.client() as c:
        allocator = info_fields(c.call('INFO', 'memory'))['memory']['mem_allocator']
        if not allocator.startswith('jemalloc'):
            # As Redis built without jemalloc: no such subcommand.
            assert c.cmd('DEBUG', 'MALLCTL', 'opt.narenas').startswith(
                b"-ERR unknown subcommand or wrong number of arguments for 'MALLCTL'")
            return
        # Redis 8.8's tcache tuning (its suite checks both).
        assert c.call('DEBUG', 'MALLCTL', 'opt.tcache_nslots_small_max') == 1000
        assert c.call('DEBUG', 'MALLCTL', 'opt.lg_tcache_nslots_mul') == 3
        assert c.cmd('DEBUG', 'MALLCTL', 'no.such.key') == b'-ERR No such file or directory\r\n'
        assert c.cmd('DEBUG', 'MALLCTL', 'opt.narenas', 'x') == (
            b'-ERR value is not an integer or out of range\r\n')
        assert c.cmd('DEBUG', 'MALLCTL', 'thread.tcache.flush', 1) == (
            b'-ERR Operation not permitted\r\n')
        assert c.call('DEBUG', 'MALLCTL-STR', 'opt.dss') == b'secondary'
        assert c.call('DEBUG', 'MALLCTL-STR', 'version').startswith(b'5.')


def reply_buffer_size(c, name):
    for line in c.call('CLIENT', 'LIST').decode().splitlines():
        if ' name=%s ' % name in line:
            return int(re.search(r' rbs=(\d+) ', line).group(1))
    raise AssertionError('no client named %s' % name)


@test
@xkv_only
def reply_buffer_shrinks_when_idle_and_grows_when_busy(t):
    with t.sut.client() as c, t.sut.client() as busy:
        try:
            assert c.cmd('DEBUG', 'REPLYBUFFER', 'PEAK-RESET-TIME', 100) == b'+OK\r\n'
            busy.call('CLIENT', 'SETNAME', 'busy')
            assert reply_buffer_size(c, 'busy') == 16384
            # Idle: its peak is reset and the buffer halves down to 1 KiB.
            assert wait_until(lambda: reply_buffer_size(c, 'busy') == 1024), \
                reply_buffer_size(c, 'busy')
            c.call('SET', 'big', 'x' * 8192)
            assert c.cmd('DEBUG', 'REPLYBUFFER', 'PEAK-RESET-TIME', 'never') == b'+OK\r\n'

            def grown():
                busy.call('MGET', 'big', 'big', 'big', 'big')
                return reply_buffer_size(c, 'busy') == 16384
            assert wait_until(grown), reply_buffer_size(c, 'busy')
            info = info_fields(c.call('INFO', 'stats'))['stats']
            assert int(info['reply_buffer_shrinks']) >= 1
            assert int(info['reply_buffer_expands']) >= 4
            assert c.cmd('DEBUG', 'REPLYBUFFER', 'RESIZING', 0) == b'+OK\r\n'
            assert c.cmd('DEBUG', 'REPLYBUFFER', 'BOGUS', 0).startswith(
                b"-ERR unknown subcommand or wrong number of arguments for 'REPLYBUFFER'")
            assert c.cmd('DEBUG', 'REPLYBUFFER', 'PEAK-RESET-TIME', 'x') == (
                b'-ERR value is not an integer or out of range\r\n')
        finally:
            c.call('DEBUG', 'REPLYBUFFER', 'PEAK-RESET-TIME', 'reset')
            c.call('DEBUG', 'REPLYBUFFER', 'RESIZING', 1)
