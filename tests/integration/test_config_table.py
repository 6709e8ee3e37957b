# SPDX-License-Identifier: GPL-2.0-only
"""Every directive of Redis 8.8: CONFIG GET * lists each name (and alias) with
Redis's default, values are shown as Redis shows them, and CONFIG SET refuses
bad values with Redis's messages, all or nothing.

The 8.8 names and defaults come from a live redis-server 8.8 when one is
built (REDIS88_SERVER, default /work/peers/redis-8.8.0/src/redis-server), else
from data/redis-8.8-config.tsv (tools/gen-redis-config-list.py run against
one). Error strings are compared byte for byte with the reference 7.0.15."""

import os

from harness import REPO, Server, Unordered, pairs, test, xkv_only

REDIS88 = os.environ.get('REDIS88_SERVER', '/work/peers/redis-8.8.0/src/redis-server')
LIST88 = os.path.join(REPO, 'tests', 'integration', 'data', 'redis-8.8-config.tsv')
# xkv's own directives (docs/configuration.md).
XKV_OWN = {b'threads', b'io-engine', b'udp-port', b'fastpath', b'fastpath-interfaces',
           b'fastpath-mode', b'fastpath-slots', b'fastpath-allow', b'fastpath-token',
           b'fastpath-admit-threshold'}
# Values that are the environment's, not defaults (the harness passes --port,
# --dir, and --enable-debug-command yes to both servers).
# save: the harness starts redis-server with --save '' (xkvd keeps 8.8's default).
LIVE_SKIP = {b'port', b'dir', b'enable-debug-command', b'save'}
# The checked-in list has redis-server's own defaults: xkv's bind is the one of
# redis.conf, and xkv's save is "" because it takes no snapshots;
# enable-debug-command is the harness's, as above.
LIST_SKIP = {b'port', b'dir', b'bind', b'save', b'enable-debug-command'}


def checked_in_list():
    with open(LIST88, 'rb') as f:
        lines = [l.rstrip(b'\n') for l in f if not l.startswith(b'#')]
    return dict(l.split(b'\t', 1) for l in lines)


def redis88(t):
    """CONFIG GET * of a live 8.8 started as the harness starts its reference
    (and the names to skip), or of the checked-in list."""
    if os.access(REDIS88, os.X_OK):
        srv = Server('redis', binary=REDIS88, label='redis-8.8').start()
        t.spawned.append(srv)
        return pairs(srv.call('CONFIG', 'GET', '*')), LIVE_SKIP
    return checked_in_list(), LIST_SKIP


@test
@xkv_only
def config_get_all_matches_redis_8_8(t):
    want, skip = redis88(t)
    have = pairs(t.sut.call('CONFIG', 'GET', '*'))
    assert len(want) >= 200, len(want)
    missing = sorted(set(want) - set(have))
    assert not missing, 'not listed by xkvd: %s' % b' '.join(missing).decode()
    extra = sorted(set(have) - set(want) - XKV_OWN)
    assert not extra, 'not in Redis 8.8: %s' % b' '.join(extra).decode()
    differ = ['%s: redis %r, xkvd %r' % (k.decode(), want[k], have[k])
              for k in sorted(want) if k not in skip and want[k] != have[k]]
    assert not differ, 'defaults differ:\n  ' + '\n  '.join(differ)


@test
@xkv_only
def config_get_all_covers_redis_7_0(t):
    old = pairs(t.ref.call('CONFIG', 'GET', '*'))
    have = pairs(t.sut.call('CONFIG', 'GET', '*'))
    # 8.8 reads io-threads-do-reads no more (ignored in a file) and hides
    # aof-disable-auto-gc (named exactly, it answers).
    gone = {b'io-threads-do-reads', b'aof-disable-auto-gc'}
    missing = sorted(set(old) - set(have) - gone)
    assert not missing, 'not listed by xkvd: %s' % b' '.join(missing).decode()
    assert pairs(t.sut.call('CONFIG', 'GET', 'aof-disable-auto-gc')) == {
        b'aof-disable-auto-gc': b'no'}


# Bad values whose messages 7.0.15 and 8.8 share (checked against both).
BAD = [
    ('maxmemory', 'abc'), ('maxmemory', '-1'), ('maxmemory', '10xb'), ('maxmemory', '1.5gb'),
    ('hz', 'x'), ('hz', '1.5'), ('timeout', '-1'), ('timeout', '99999999999'),
    ('maxclients', '0'), ('maxclients', '-1'), ('activerehashing', 'maybe'),
    ('appendonly', 'maybe'), ('save', '1'), ('save', 'abc 1'), ('save', '0 1'),
    ('save', '100 -1'), ('client-output-buffer-limit', 'normal 1 2'),
    ('client-output-buffer-limit', 'master 1 2 3'),
    ('client-output-buffer-limit', 'normal x 2 3'),
    ('client-output-buffer-limit', 'normal 1 2 -3'), ('oom-score-adj-values', '1 2'),
    ('oom-score-adj-values', '1 2 3000'), ('oom-score-adj', 'nah'),
    ('enable-debug-command', 'yes'), ('daemonize', 'yes'), ('databases', '8'),
    ('nosuchconfig', '1'), ('NoSuchConfig', '1'), ('unixsocketperm', '777'),
    ('dir', '/nonexistent/dir'), ('dbfilename', 'a/b'), ('appendfilename', 'x'),
    ('shutdown-on-sigint', 'save nosave'), ('shutdown-on-sigint', 'bogus'),
    ('maxmemory-clients', '200%'), ('maxmemory-clients', 'abc'), ('maxmemory-clients', '-5'),
    ('proto-max-bulk-len', '10'), ('client-query-buffer-limit', '1'),
    ('list-max-listpack-size', 'x'), ('hash-max-listpack-entries', '-1'),
    ('hash-max-listpack-value', '1k2'), ('zset-max-ziplist-entries', 'x'),
    ('lua-time-limit', 'x'), ('repl-ping-replica-period', '0'),
    ('min-replicas-to-write', '-1'), ('latency-tracking-info-percentiles', '50 200'),
    ('latency-tracking-info-percentiles', 'a'), ('replicaof', 'localhost 1'),
    ('slaveof', 'no one'), ('proc-title-template', '{bogus}'), ('tcp-keepalive', 'x'),
    ('active-defrag-cycle-min', '0'), ('active-defrag-cycle-min', '100'),
    ('cluster-announce-hostname', 'a_b'), ('slowlog-max-len', '-1'),
    ('latency-monitor-threshold', '-1'), ('tls-port', '70000'), ('acllog-max-len', '-1'),
    ('lfu-log-factor', '-1'), ('repl-backlog-size', '0'), ('io-threads', '4'),
    ('requirepass',), ('maxmemory', '1', 'maxmemory', '2'),
    ('maxmemory', '1', 'MAXMEMORY', '2'), ('maxmemory', '10', 'hz', 'x'),
    ('hz', 'x', 'maxmemory', 'y'), ('maxmemory', '10', 'nosuch', '1'),
    ('daemonize', 'yes', 'nosuch', '1'), ('nosuch', '1', 'daemonize', 'yes'),
    ('hash-max-ziplist-entries', 'x'), ('slave-read-only', 'x'),
]


@test
def config_set_errors(t):
    ref, sut = t.spawn_pair()
    t.compare([('CONFIG', 'SET') + row for row in BAD] +
              [('CONFIG', 'GET', 'maxmemory'), ('CONFIG', 'GET', 'hz')], ref=ref, sut=sut)


@test
def config_set_is_all_or_nothing(t):
    ref, sut = t.spawn_pair()
    t.compare([
        ('CONFIG', 'SET', 'maxmemory', '10mb', 'timeout', '5', 'hz', 'x'),
        ('CONFIG', 'GET', 'maxmemory'), ('CONFIG', 'GET', 'timeout'),
        ('CONFIG', 'SET', 'maxmemory', '1mb', 'maxmemory-policy', 'allkeys-lru', 'save',
         '100 10 200 20'),
        ('CONFIG', 'GET', 'maxmemory'), ('CONFIG', 'GET', 'maxmemory-policy'),
        ('CONFIG', 'GET', 'save'),
    ], ref=ref, sut=sut)


@test
def config_values_as_redis_shows_them(t):
    ref, sut = t.spawn_pair()
    t.compare([
        # Aliases answer, and CONFIG GET * lists them next to the new names.
        Unordered('CONFIG', 'GET', 'zset-max-*'),
        ('CONFIG', 'SET', 'hash-max-ziplist-entries', '100'),
        ('CONFIG', 'GET', 'hash-max-listpack-entries'),
        ('CONFIG', 'GET', 'hash-max-ziplist-entries'),
        ('CONFIG', 'SET', 'lua-time-limit', '100'), ('CONFIG', 'GET', 'busy-reply-threshold'),
        ('CONFIG', 'GET', 'MAXMEMORY'), Unordered('CONFIG', 'GET', 'maxmemory', 'maxmemory*'),
        # Hidden directives answer only to their exact name.
        ('CONFIG', 'GET', 'key-load-delay'), ('CONFIG', 'GET', 'key-load-*'),
        # Memory in bytes, percentages, suffixes.
        ('CONFIG', 'SET', 'maxmemory', '1gb'), ('CONFIG', 'GET', 'maxmemory'),
        ('CONFIG', 'SET', 'maxmemory', '2k'), ('CONFIG', 'GET', 'maxmemory'),
        ('CONFIG', 'SET', 'maxmemory', ''), ('CONFIG', 'GET', 'maxmemory'),
        ('CONFIG', 'SET', 'maxmemory-clients', '10%'), ('CONFIG', 'GET', 'maxmemory-clients'),
        ('CONFIG', 'SET', 'maxmemory-clients', '1mb'), ('CONFIG', 'GET', 'maxmemory-clients'),
        # The special ones.
        ('CONFIG', 'SET', 'notify-keyspace-events', 'KEA'),
        ('CONFIG', 'GET', 'notify-keyspace-events'),
        ('CONFIG', 'SET', 'notify-keyspace-events', 'Ex$lgn'),
        ('CONFIG', 'GET', 'notify-keyspace-events'),
        ('CONFIG', 'SET', 'notify-keyspace-events', ''),
        ('CONFIG', 'GET', 'notify-keyspace-events'),
        ('CONFIG', 'SET', 'client-output-buffer-limit', 'normal 1mb 2mb 3 pubsub 1 2 3'),
        ('CONFIG', 'GET', 'client-output-buffer-limit'),
        ('CONFIG', 'SET', 'save', '0100 10 200 020'), ('CONFIG', 'GET', 'save'),
        ('CONFIG', 'SET', 'save', ''), ('CONFIG', 'GET', 'save'),
        ('CONFIG', 'SET', 'oom-score-adj-values', '1 2 3'),
        ('CONFIG', 'GET', 'oom-score-adj-values'),
        ('CONFIG', 'SET', 'oom-score-adj', 'relative'), ('CONFIG', 'GET', 'oom-score-adj'),
        ('CONFIG', 'SET', 'latency-tracking-info-percentiles', '1.5 99.90 100'),
        ('CONFIG', 'GET', 'latency-tracking-info-percentiles'),
        ('CONFIG', 'SET', 'shutdown-on-sigint', 'force now nosave'),
        ('CONFIG', 'GET', 'shutdown-on-sigint'),
        ('CONFIG', 'SET', 'hz', '0'), ('CONFIG', 'GET', 'hz'),
        ('CONFIG', 'SET', 'hz', '100000'), ('CONFIG', 'GET', 'hz'),
        ('CONFIG', 'GET', 'replicaof'), ('CONFIG', 'GET', 'unixsocketperm'),
        ('CONFIG', 'SET', 'list-compress-depth', '2'), ('CONFIG', 'GET', 'list-compress-depth'),
        ('CONFIG', 'SET', 'repl-ping-replica-period', '5'),
        ('CONFIG', 'GET', 'repl-ping-slave-period'),
        # dir is protected (enable-protected-configs no).
        ('CONFIG', 'SET', 'dir', '/tmp'),
    ], ref=ref, sut=sut)


@test
@xkv_only
def startup_values(t):
    srv = t.spawn('sut', **{'enable-debug-command': 'local', 'notify-keyspace-events': 'KEA',
                            'save': '60 1', 'maxmemory': '1mb', 'unixsocketperm': '770',
                            'hash-max-ziplist-entries': '7', 'list-max-ziplist-entries': '3'})
    got = pairs(srv.call('CONFIG', 'GET', 'enable-debug-command', 'notify-keyspace-events',
                         'save', 'maxmemory', 'unixsocketperm', 'hash-max-listpack-entries'))
    assert got == {b'enable-debug-command': b'local', b'notify-keyspace-events': b'AKE',
                   b'save': b'60 1', b'maxmemory': b'1048576', b'unixsocketperm': b'770',
                   b'hash-max-listpack-entries': b'7'}, got


# Where 8.8's messages differ from 7.0's (more values, other ranges).
BAD88 = [
    ('loglevel', 'loud'), ('maxmemory-policy', 'lru'), ('maxmemory-samples', '0'),
    ('maxmemory-samples', '65'), ('notify-keyspace-events', 'Q'),
    ('array-slice-size', '1000'), ('stream-idmp-duration', '0'),
    ('cluster-slot-stats-enabled', 'bogus'), ('slowlog-entry-max-argc', '1'),
]


@test
@xkv_only
def config_set_errors_match_redis_8_8(t):
    if not os.access(REDIS88, os.X_OK):
        return
    srv = Server('redis', binary=REDIS88, label='redis-8.8').start()
    t.spawned.append(srv)
    sut = t.spawn('sut')
    # tls-port 70000 is left out: it makes redis-server 8.8 (built without TLS) exit.
    rows = [row for row in BAD + BAD88 if row[0] != 'tls-port']
    t.compare([('CONFIG', 'SET') + row for row in rows], ref=srv, sut=sut)


@test
@xkv_only
def startup_only_directives(t):
    # port, bind and xkv's own start-up directives take their current value
    # (as Redis's CONFIG sanity test sets every directive to itself), no other.
    srv = t.spawn('sut')
    with srv.client() as c:
        assert c.cmd('CONFIG', 'SET', 'port', str(srv.port), 'bind', '127.0.0.1',
                     'threads', '2', 'fastpath', 'no') == b'+OK\r\n'
        assert c.cmd('CONFIG', 'SET', 'maxmemory', '5mb', 'threads', '3') == (
            b"-ERR CONFIG SET failed (possibly related to argument 'threads') - can't set "
            b"immutable config\r\n")
        assert c.call('CONFIG', 'GET', 'maxmemory') == [b'maxmemory', b'0']
        # A port another socket holds fails as Redis's re-listen fails.
        assert c.cmd('CONFIG', 'SET', 'maxmemory', '5mb', 'port', str(t.ref.port)) == (
            b"-ERR CONFIG SET failed (possibly related to argument 'port') - Unable to "
            b"listen on this port. Check server logs.\r\n")


@test
@xkv_only
def latency_tracking_directives(t):
    import re
    srv = t.spawn('sut')
    with srv.client() as c:
        assert c.cmd('CONFIG', 'SET', 'latency-tracking-info-percentiles', '1.50 100') == \
            b'+OK\r\n'
        c.cmd('PING')
        info = c.call('INFO', 'latencystats').decode()
        assert re.search(r'^latency_percentiles_usec_ping:p1\.5=\d+\.\d{3},p100=\d+\.\d{3}\r?$',
                         info, re.M), info
        assert c.cmd('CONFIG', 'SET', 'latency-tracking', 'no') == b'+OK\r\n'
        assert c.cmd('CONFIG', 'RESETSTAT') == b'+OK\r\n'
        c.cmd('PING')
        info = c.call('INFO', 'latencystats').decode()
        assert 'latency_percentiles_usec' not in info, info


# Redis's "CONFIG sanity" test skips these (start-up only, or not settable to
# what CONFIG GET shows).
SANITY_SKIP = {
    'rdbchecksum', 'daemonize', 'tcp-backlog', 'always-show-logo', 'syslog-enabled',
    'cluster-enabled', 'disable-thp', 'aclfile', 'unixsocket', 'pidfile', 'syslog-ident',
    'appendfilename', 'appenddirname', 'supervised', 'syslog-facility', 'databases',
    'io-threads', 'logfile', 'unixsocketperm', 'replicaof', 'slaveof', 'requirepass',
    'server-cpulist', 'bio-cpulist', 'aof-rewrite-cpulist', 'bgsave-cpulist', 'server_cpulist',
    'bio_cpulist', 'aof_rewrite_cpulist', 'bgsave_cpulist', 'set-proc-title',
    'cluster-config-file', 'cluster-port', 'oom-score-adj', 'oom-score-adj-values',
    'enable-protected-configs', 'enable-debug-command', 'enable-module-command', 'dbfilename',
    'dir', 'socket-mark-id', 'vset-force-single-threaded-execution', 'tls-port',
    'tls-cert-file', 'tls-key-file', 'tls-client-cert-file', 'tls-client-key-file',
    'tls-dh-params-file', 'tls-ca-cert-file', 'tls-ca-cert-dir', 'tls-protocols',
    'tls-ciphers', 'tls-ciphersuites', 'tls-prefer-server-ciphers', 'tls-session-cache-timeout',
    'tls-session-cache-size', 'tls-session-caching'}


@test
@xkv_only
def every_directive_takes_its_own_value(t):
    # Redis's CONFIG sanity, in one CONFIG SET of every directive (200 or so
    # pairs): each takes the value CONFIG GET shows, and keeps it.
    srv = t.spawn('sut')
    with srv.client() as c:
        before = pairs(c.call('CONFIG', 'GET', '*'))
        args = []
        for k, v in sorted(before.items()):
            if k.decode() not in SANITY_SKIP:
                args += [k, v]
        assert len(args) > 300, len(args)
        assert c.cmd('CONFIG', 'SET', *args) == b'+OK\r\n'
        assert pairs(c.call('CONFIG', 'GET', '*')) == before


@test
@xkv_only
def protected_directives(t):
    for mode, ok in (('no', False), ('local', True), ('yes', True)):
        srv = t.spawn('sut', **{'enable-protected-configs': mode})
        with srv.client() as c:
            reply = c.cmd('CONFIG', 'SET', 'dir', srv.dir, 'dbfilename', 'x.rdb')
            if ok:
                assert reply == b'+OK\r\n', (mode, reply)
                assert c.call('CONFIG', 'GET', 'dbfilename') == [b'dbfilename', b'x.rdb']
            else:
                assert reply == (b"-ERR CONFIG SET failed (possibly related to argument "
                                 b"'dir') - can't set protected config\r\n"), (mode, reply)
