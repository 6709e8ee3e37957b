# SPDX-License-Identifier: GPL-2.0-only
"""Server commands: INFO TIME CONFIG DEBUG SHUTDOWN COMMAND, unknown
commands and arity errors."""

import fnmatch
import re
import time

from harness import Redis8, decode, encode, info_fields, pairs, test, wait_until, xkv_only

REQUIRED_INFO = {
    'server': ['redis_version', 'tcp_port', 'process_id', 'uptime_in_seconds'],
    'clients': ['connected_clients', 'maxclients', 'blocked_clients'],
    'memory': ['used_memory', 'used_memory_human', 'used_memory_peak'],
    'stats': ['total_connections_received', 'total_commands_processed', 'expired_keys'],
    'cpu': ['used_cpu_sys', 'used_cpu_user'],
    'keyspace': [],
}
KEYSPACE_LINE = re.compile(r'^keys=\d+,expires=\d+,avg_ttl=\d+$')


@test
def info_sections_and_fields(t):
    with t.sut.client() as c:
        c.call('SET', 'a', 1)
        c.call('SET', 'b', 2, 'EX', 100)
        c.call('SELECT', 3)
        c.call('SET', 'c', 3)
        text = c.call('INFO')
        assert text.endswith(b'\r\n'), text[-50:]
        info = info_fields(text)
        for section, fields in REQUIRED_INFO.items():
            assert section in info, 'INFO lacks section %r (has %s)' % (section, sorted(info))
            missing = [f for f in fields if f not in info[section]]
            assert not missing, 'INFO %s lacks %s' % (section, missing)
        assert info['server']['tcp_port'] == str(t.sut.port)
        assert re.match(r'^\d+\.\d+\.\d+$', info['server']['redis_version'])
        for sec, field in [('clients', 'connected_clients'), ('memory', 'used_memory'),
                           ('stats', 'total_commands_processed')]:
            assert info[sec][field].isdigit(), (field, info[sec][field])
        assert int(info['clients']['connected_clients']) >= 1
        float(info['cpu']['used_cpu_sys'])
        ks = info['keyspace']
        assert set(ks) == {'db0', 'db3'}, ks
        assert KEYSPACE_LINE.match(ks['db0']) and ks['db0'].startswith('keys=2,expires=1,'), ks
        assert ks['db3'] == 'keys=1,expires=0,avg_ttl=0', ks

        before = int(info_fields(c.call('INFO', 'stats'))['stats']['total_commands_processed'])
        for _ in range(5):
            c.call('PING')
        after = int(info_fields(c.call('INFO', 'stats'))['stats']['total_commands_processed'])
        assert after >= before + 5, (before, after)

        assert set(info_fields(c.call('INFO', 'server'))) == {'server'}
        assert set(info_fields(c.call('INFO', 'SERVER', 'clients'))) == {'server', 'clients'}
        assert set(info_fields(c.call('INFO', 'keyspace'))) == {'keyspace'}
        assert set(REQUIRED_INFO) <= set(info_fields(c.call('INFO', 'default')))
        assert set(REQUIRED_INFO) <= set(info_fields(c.call('INFO', 'all')))
    t.compare([('INFO', 'nosuchsection')])


@test
def time_command(t):
    with t.sut.client() as c:
        reply = c.call('TIME')
        now = time.time()
        assert isinstance(reply, list) and len(reply) == 2 and all(x.isdigit() for x in reply), reply
        assert abs(int(reply[0]) + int(reply[1]) / 1e6 - now) < 5, (reply, now)
        assert int(reply[1]) < 1000000, reply
    t.compare([('TIME', 'x')])


@test
def config_get(t):
    with t.sut.client() as c:
        assert c.call('CONFIG', 'GET', 'port') == [b'port', str(t.sut.port).encode()]
        found = pairs(c.call('CONFIG', 'GET', '*max*'))
        assert b'maxclients' in found, found
        bad = [k for k in found if not fnmatch.fnmatchcase(k.decode(), '*max*')]
        assert not bad, 'CONFIG GET *max* returned %r' % bad
        found = pairs(c.call('CONFIG', 'GET', 'p?rt', 'timeout'))
        assert found == {b'port': str(t.sut.port).encode(), b'timeout': b'0'}, found
    t.compare([
        ('CONFIG', 'GET', 'timeout'), ('CONFIG', 'GET', 'maxclients'), ('CONFIG', 'GET', 'nosuch'),
        ('CONFIG', 'GET', 'nosuch*'), ('CONFIG', 'GET'), ('CONFIG',), ('CONFIG', 'FOO'),
    ])


@test
def config_set(t):
    try:
        t.compare([
            ('CONFIG', 'SET', 'timeout', 30), ('CONFIG', 'GET', 'timeout'),
            ('CONFIG', 'SET', 'maxclients', 500), ('CONFIG', 'GET', 'maxclients'),
            ('CONFIG', 'SET', 'timeout', 40, 'maxclients', 600), ('CONFIG', 'GET', 'timeout'),
            ('CONFIG', 'GET', 'maxclients'),
            ('CONFIG', 'SET', 'timeout', 'abc'), ('CONFIG', 'SET', 'timeout', -1),
            ('CONFIG', 'SET', 'timeout', '1.5'), ('CONFIG', 'SET', 'maxclients', 0),
            ('CONFIG', 'SET', 'maxclients', 'abc'), ('CONFIG', 'SET', 'timeout', 1, 'timeout', 2),
            ('CONFIG', 'SET', 'timeout', 1, 'maxclients'), ('CONFIG', 'SET', 'nosuch', 1),
            ('CONFIG', 'SET', 'timeout'), ('CONFIG', 'SET'),
            ('CONFIG', 'GET', 'timeout'),                    # failed SETs change nothing
        ])
    finally:
        for srv in (t.ref, t.sut):
            srv.call('CONFIG', 'SET', 'timeout', 0)
            srv.call('CONFIG', 'SET', 'maxclients', 10000)


@test
def debug_sleep(t):
    t.compare([('DEBUG', 'SLEEP', 0), ('DEBUG', 'SLEEP', '0.05'), ('PING',)])


@test
def shutdown_nosave(t):
    def shutdown(role):
        srv = t.spawn(role)
        with srv.client() as c:
            c.send_raw(encode(['SHUTDOWN', 'NOSAVE']))
            closed = c.read_until_close(timeout=10)
        return closed, srv.proc.wait(10)
    got = shutdown('ref'), shutdown('sut')
    assert got[0] == got[1] == ((b'', True), 0), 'SHUTDOWN NOSAVE: redis %r, %s %r' % (
        got[0], t.sut.label, got[1])
    t.compare([('SHUTDOWN', 'FOO'), ('SHUTDOWN', 'NOSAVE', 'SAVE'), ('PING',)])


def command_info_head(srv, *names):
    """name, arity, flags, first key, last key, step of each COMMAND INFO entry."""
    entries = srv.call('COMMAND', 'INFO', *names)
    return [e if e is None else (e[0], e[1], sorted(e[2]), e[3], e[4], e[5]) for e in entries]


@test
def command_info(t):
    got = t.same(lambda s: command_info_head(s, 'get', 'SET', 'mset', 'nosuch'), 'COMMAND INFO')
    get, set_, mset, nosuch = got
    assert get[:2] == (b'get', 2) and get[3:] == (1, 1, 1), get
    assert {b'readonly', b'fast'} <= set(get[2]), get
    assert set_[:2] == (b'set', -3) and b'write' in set_[2], set_
    assert mset[:2] == (b'mset', -3) and mset[3:] == (1, -1, 2), mset
    assert nosuch is None
    t.compare([('COMMAND', 'INFO', 'nosuch')])


@test
def command_count_and_list(t):
    with t.sut.client() as c:
        n = c.call('COMMAND', 'COUNT')
        assert isinstance(n, int) and n > 0, n
        names = {e[0] for e in c.call('COMMAND')}
        assert {b'get', b'set', b'ping', b'command', b'scan'} <= names, names
        assert len(names) == n, (len(names), n)
    t.compare([('COMMAND', 'COUNT', 'x'), ('COMMAND', 'NOSUCH')])


@test
def command_docs(t):
    def docs(srv):
        with srv.client() as c:
            raw = c.cmd('COMMAND', 'DOCS', 'get')
            reply = decode(raw)
            assert raw[:1] == b'*' and len(reply) == 2 and reply[0] == b'get', raw
            d = pairs(reply[1])
            assert {b'summary', b'since', b'group'} <= set(d), d
            return d[b'group'], d[b'since']
    # The summaries are 8.8's (test_command_docs.py compares them with 8.8).
    group, since = t.same(docs, 'COMMAND DOCS get')
    assert group == b'string' and since == b'1.0.0'
    t.compare([('COMMAND', 'DOCS', 'nosuch')])


@test
def command_getkeys(t):
    t.compare([
        ('COMMAND', 'GETKEYS', 'MSET', 'a', 1, 'b', 2), ('COMMAND', 'GETKEYS', 'SET', 'k', 'v', 'EX', 10),
        ('COMMAND', 'GETKEYS', 'GET', 'k'), ('COMMAND', 'GETKEYS', 'get', 'k'),
        ('COMMAND', 'GETKEYS', 'DEL', 'a', 'b', 'c'), ('COMMAND', 'GETKEYS', 'RENAME', 'a', 'b'),
        ('COMMAND', 'GETKEYS', 'nosuch', 'x'), ('COMMAND', 'GETKEYS', 'PING', 'x'),
        ('COMMAND', 'GETKEYS', 'GET', 'a', 'b'), ('COMMAND', 'GETKEYS', 'MSET', 'a'),
        ('COMMAND', 'GETKEYS'),
    ])
    # Redis 8 takes a command alone (arity -3; 7.0: -4): test_command_keys.py
    # compares those with 8.8.
    with t.sut.client() as c:
        assert c.cmd('COMMAND', 'GETKEYS', 'GET') == \
            b'-ERR Invalid number of arguments specified for command\r\n'
        assert c.cmd('COMMAND', 'GETKEYS', 'EXEC') == b'-ERR The command has no key arguments\r\n'



# Containers list their subcommands in hash order in Redis (and we lack some
# of them); ZRANK/ZREVRANK take Redis 7.2's WITHSCORE (arity -3); COMMAND
# GETKEYS(ANDFLAGS) takes Redis 8's arity (-3: a command alone); WAIT has Redis
# 8's flags (blocking, so scripts may call it; 7.0: noscript); the subscribing
# commands are denyoom in Redis 8.8 (test_pubsub checks them). CLUSTER's
# read-only subcommands have Redis 8.8's flags (loading; 7.0: not).
# ACL: its subcommands come in the reference's hash order.
INFO_EXCEPTIONS = {b'acl', b'client', b'cluster', b'command', b'config', b'latency', b'memory', b'module',
                   b'object', b'subscribe', b'psubscribe', b'ssubscribe',
                   b'function', b'pubsub', b'script', b'slowlog', b'xgroup', b'xinfo', b'zrank',
                   b'zrevrank', b'command|getkeys',
                   b'command|getkeysandflags', b'wait'} | {
                       b'cluster|' + s for s in (b'count-failure-reports', b'info', b'keyslot',
                                                 b'links', b'myid', b'nodes', b'replicas',
                                                 b'shards', b'slaves', b'slots')}


@test
def command_info_every_shared_command(t):
    """COMMAND INFO of every command both servers have (subcommands one by one):
    flags, ACL categories, tips and key specs byte for byte, RESP2 and RESP3."""
    def names(srv):
        with srv.client() as c:
            return set(c.call('COMMAND', 'LIST'))
    shared = sorted((names(t.ref) & names(t.sut)) - INFO_EXCEPTIONS)
    assert len(shared) > 150, len(shared)
    for proto in (2, 3):
        t.compare([('COMMAND', 'INFO', n) for n in shared], proto)


@test
def command_getkeys_by_key_spec(t):
    """Keys after a numkeys argument, keyword searches and SORT's STORE."""
    t.compare([
        ('COMMAND', 'GETKEYS', 'ZUNIONSTORE', 'd', 2, 'a', 'b'),
        ('COMMAND', 'GETKEYS', 'ZUNIONSTORE', 'd', 2, 'a', 'b', 'WEIGHTS', 1, 2),
        ('COMMAND', 'GETKEYS', 'ZINTER', 3, 'a', 'b'), ('COMMAND', 'GETKEYS', 'ZDIFF', 'x', 'a'),
        ('COMMAND', 'GETKEYS', 'ZINTERCARD', 2, 'a', 'b', 'LIMIT', 1),
        ('COMMAND', 'GETKEYS', 'SINTERCARD', 0, 'a'),
        ('COMMAND', 'GETKEYS', 'LMPOP', 2, 'a', 'b', 'LEFT'),
        ('COMMAND', 'GETKEYS', 'BLMPOP', 0, 1, 'a', 'RIGHT', 'COUNT', 2),
        ('COMMAND', 'GETKEYS', 'BZMPOP', 1, 2, 'a', 'b', 'MIN'),
        ('COMMAND', 'GETKEYS', 'ZMPOP', -1, 'a', 'MIN'),
        ('COMMAND', 'GETKEYS', 'SORT', 'k', 'BY', 'w_*', 'LIMIT', 0, 1, 'STORE', 'd'),
        ('COMMAND', 'GETKEYS', 'SORT', 'k', 'GET', 'store', 'STORE', 'a', 'STORE', 'b'),
        ('COMMAND', 'GETKEYS', 'SORT_RO', 'k', 'GET', '#'),
        ('COMMAND', 'GETKEYS', 'BLPOP', 'a', 'b', 0), ('COMMAND', 'GETKEYS', 'BITOP', 'AND', 'd', 'a'),
        ('COMMAND', 'GETKEYS', 'ECHO', 'x'),
        ('COMMAND', 'GETKEYS', 'OBJECT', 'ENCODING', 'k'),
    ])


@test
def unknown_command(t):
    t.compare([
        # Without arguments Redis 8 leaves out ", with args beginning with: ".
        ('foo', 'x'), Redis8(b"-ERR unknown command 'foo'\r\n", 'foo'), ('FOO', 'a b', 'c'),
        ('foo', 'a\r\nb'), Redis8(b"-ERR unknown command ''\r\n", ''),
        ('foo', 'a' * 200, 'b' * 200), Redis8(b"-ERR unknown command '" + b'f' * 128 + b"'\r\n",
                                              'f' * 200),
        ('foo',) + tuple('abcdefghijklmnopqrstuvwxyz'),
        ('foo', "it's"), ('PING',),
    ])


@test
def arity_errors(t):
    t.compare([
        ('GET',), ('gEt',), ('SET', 'k'), ('MGET',), ('DEL',), ('PING', 'a', 'b'), ('ECHO',),
        ('SELECT',), ('TTL',), ('EXPIRE', 'k'), ('KEYS',), ('SCAN',), ('DBSIZE', 'x'),
        ('TIME', 'x'), ('RANDOMKEY', 'x'), ('FLUSHDB', 'a', 'b', 'c'), ('CLIENT',),
        ('CONFIG', 'GET'), ('ECHO', 'a', 'b'), ('INCR',), ('GETEX',), ('SUBSTR', 'k', 1),
        ('SWAPDB', 0), ('MOVE', 'k'), ('COPY', 'k'), ('RENAMENX', 'k'), ('HELLO', 3, 'AUTH', 'x'),
    ])


@test
@xkv_only
def expired_keys_active_counts_the_cycle_only(t):
    """INFO stats expired_keys_active (Redis 8.8): keys the active cycle
    expired; a lazy expiry counts in expired_keys alone."""
    def stats(c):
        return info_fields(c.call('INFO', 'stats'))['stats']
    with t.sut.client() as c:
        c.call('FLUSHALL')
        c.call('CONFIG', 'RESETSTAT')
        for k in ('a', 'b', 'c'):
            c.call('SET', k, 'v', 'PX', 1)
        assert wait_until(lambda: stats(c)['expired_keys'] == '3', timeout=10)
        assert stats(c)['expired_keys_active'] == '3'
        c.call('DEBUG', 'SET-ACTIVE-EXPIRE', '0')
        try:
            c.call('SET', 'x', 'v', 'PX', 1)
            time.sleep(0.01)
            assert c.call('GET', 'x') is None
            s = stats(c)
            assert (s['expired_keys'], s['expired_keys_active']) == ('4', '3'), s
        finally:
            c.call('DEBUG', 'SET-ACTIVE-EXPIRE', '1')
