# SPDX-License-Identifier: GPL-2.0-only
"""Cluster mode's control plane on real processes: redis-cli --cluster create,
check, add-node and del-node over xkvd primaries; a mixed cluster of two
redis-server 7.0.15 primaries and one xkvd (MEET both ways); nodes.conf
written and loaded back; failure detection (a node paused with SIGSTOP is
marked FAIL by the others, and is ok again once resumed); PUBLISH over the
bus; a malformed bus message closes only its link."""

import os
import re
import signal
import socket
import subprocess

from harness import REDIS_CLI, free_port, test, wait_until, xkv_only


def cluster_node(ctx, role='sut', **directives):
    # The bus port is chosen too: port + 10000 may not exist for a free port.
    d = {'cluster-enabled': 'yes', 'cluster-port': free_port(),
         'cluster-node-timeout': 2000}
    d.update(directives)
    return ctx.spawn(role, **d)


def cli(*args, timeout=60):
    p = subprocess.run([REDIS_CLI] + [str(a) for a in args], capture_output=True,
                       timeout=timeout)
    return p.returncode, (p.stdout + p.stderr).decode('utf-8', 'replace')


def info(srv):
    text = srv.call('CLUSTER', 'INFO').decode()
    return dict(line.split(':', 1) for line in text.split('\r\n') if ':' in line)


def nodes(srv):
    """CLUSTER NODES as {id: (addr, flags, slots)}."""
    out = {}
    for line in srv.call('CLUSTER', 'NODES').decode().splitlines():
        f = line.split(' ')
        out[f[0]] = (f[1], f[2], ' '.join(f[8:]))
    return out


def addr(srv):
    return '127.0.0.1:%d' % srv.port


def all_agree(servers, count):
    """Every server knows count nodes, none in handshake, and state ok."""
    views = []
    for s in servers:
        n = nodes(s)
        if len(n) != count or any('handshake' in v[1] for v in n.values()):
            return False
        if info(s)['cluster_state'] != 'ok':
            return False
        views.append(sorted((k, v[2]) for k, v in n.items()))
    return all(v == views[0] for v in views)


def slot_owners(srv):
    """Every slot's owner (a node id) as srv sees it, from CLUSTER NODES."""
    owners = [None] * 16384
    for line in srv.call('CLUSTER', 'NODES').decode().splitlines():
        f = line.split(' ')
        for r in f[8:]:
            if r.startswith('['):
                continue
            lo, _, hi = r.partition('-')
            for slot in range(int(lo), int(hi or lo) + 1):
                owners[slot] = f[0]
    return owners


def check_green(srv):
    rc, out = cli('--cluster', 'check', addr(srv))
    assert rc == 0, out
    assert '[OK] All nodes agree about slots configuration.' in out, out
    assert '[OK] All 16384 slots covered.' in out, out
    assert '[ERR]' not in out and '[WARNING]' not in out, out
    return out


@test
@xkv_only
def cluster_create_check_add_del_node(ctx):
    a, b, c, d = (cluster_node(ctx) for _ in range(4))
    rc, out = cli('--cluster', 'create', addr(a), addr(b), addr(c), '--cluster-yes')
    assert rc == 0, out
    assert '[OK] All 16384 slots covered.' in out, out
    assert wait_until(lambda: all_agree([a, b, c], 3), timeout=20), \
        [s.call('CLUSTER', 'NODES') for s in (a, b, c)]
    check_green(b)
    i = info(a)
    assert i['cluster_size'] == '3' and i['cluster_slots_assigned'] == '16384', i
    assert i['cluster_current_epoch'] == '3', i
    # Each primary's epoch is its own (set by create, SET-CONFIG-EPOCH).
    assert sorted(info(s)['cluster_my_epoch'] for s in (a, b, c)) == ['1', '2', '3']
    assert b'cluster_enabled:1' in a.call('INFO', 'cluster')

    rc, out = cli('--cluster', 'add-node', addr(d), addr(a))
    assert rc == 0, out
    assert '[OK] New node added correctly.' in out, out
    assert wait_until(lambda: all_agree([a, b, c, d], 4), timeout=20), \
        [s.call('CLUSTER', 'NODES') for s in (a, b, c, d)]
    check_green(d)

    d_id = d.call('CLUSTER', 'MYID').decode()
    rc, out = cli('--cluster', 'del-node', addr(a), d_id)
    assert rc == 0, out
    assert wait_until(lambda: all_agree([a, b, c], 3), timeout=20), \
        [s.call('CLUSTER', 'NODES') for s in (a, b, c)]
    # Forgotten everywhere, and not brought back by gossip.
    assert all(d_id.encode() not in s.call('CLUSTER', 'NODES') for s in (a, b, c))
    check_green(c)


@test
@xkv_only
def cluster_mixed_with_redis_7(ctx):
    r1, r2 = cluster_node(ctx, 'ref'), cluster_node(ctx, 'ref')
    x = cluster_node(ctx)
    for srv, (lo, hi), epoch in ((r1, (0, 5460), 1), (r2, (5461, 10922), 2),
                                 (x, (10923, 16383), 3)):
        assert srv.call('CLUSTER', 'ADDSLOTSRANGE', lo, hi) == b'OK'
        assert srv.call('CLUSTER', 'SET-CONFIG-EPOCH', epoch) == b'OK'
    # MEET both ways: redis-server meets xkvd, xkvd meets the other.
    assert r1.call('CLUSTER', 'MEET', '127.0.0.1', x.port,
                   x.directives['cluster-port']) == b'OK'
    assert x.call('CLUSTER', 'MEET', '127.0.0.1', r2.port,
                  r2.directives['cluster-port']) == b'OK'
    assert wait_until(lambda: all_agree([r1, r2, x], 3), timeout=30), \
        [s.call('CLUSTER', 'NODES') for s in (r1, r2, x)]
    check_green(x)
    check_green(r1)
    # redis-server sees xkvd's slots, epoch and address as xkvd does.
    x_id = x.call('CLUSTER', 'MYID').decode()
    seen = nodes(r2)[x_id]
    assert seen[0].startswith(addr(x) + '@'), seen
    assert seen[2] == '10923-16383', seen


@test
@xkv_only
def cluster_nodes_conf_saved_and_loaded(ctx):
    a = cluster_node(ctx)
    assert a.call('CLUSTER', 'ADDSLOTSRANGE', 0, 99) == b'OK'
    assert a.call('CLUSTER', 'ADDSLOTS', 200) == b'OK'
    assert a.call('CLUSTER', 'SET-CONFIG-EPOCH', 7) == b'OK'
    my_id = a.call('CLUSTER', 'MYID').decode()
    shard = a.call('CLUSTER', 'MYSHARDID').decode()
    path = os.path.join(a.dir, 'nodes.conf')
    with open(path) as f:
        lines = f.read().splitlines()
    assert lines[-1] == 'vars currentEpoch 7 lastVoteEpoch 0', lines
    assert re.fullmatch(r'%s :%d@%d,,tls-port=0,shard-id=%s myself,master - 0 0 7 connected '
                        r'0-99 200' % (my_id, a.port, a.directives['cluster-port'], shard),
                        lines[0]), lines
    # A second node with that file is that node again.
    saved = open(path).read()
    copy = os.path.join(ctx.sut.dir, 'nodes-copy-%d.conf' % os.getpid())
    with open(copy, 'w') as f:
        f.write(saved)
    try:
        b = cluster_node(ctx, **{'cluster-config-file': copy})
        assert b.call('CLUSTER', 'MYID').decode() == my_id
        i = info(b)
        assert i['cluster_my_epoch'] == '7' and i['cluster_slots_assigned'] == '101', i
    finally:
        os.unlink(copy)


@test
@xkv_only
def cluster_failure_detection_and_recovery(ctx):
    a, b, c = (cluster_node(ctx, **{'cluster-node-timeout': 1000}) for _ in range(3))
    rc, out = cli('--cluster', 'create', addr(a), addr(b), addr(c), '--cluster-yes')
    assert rc == 0, out
    assert wait_until(lambda: all_agree([a, b, c], 3), timeout=20)
    c_id = c.call('CLUSTER', 'MYID').decode()
    owners = slot_owners(a)
    key_of_c = next(k for k in ('k%d' % i for i in range(10000))
                    if owners[c.call('CLUSTER', 'KEYSLOT', k)] == c_id)
    os.kill(c.proc.pid, signal.SIGSTOP)
    try:
        failed = wait_until(lambda: all('fail' in nodes(s)[c_id][1].split(',')
                                        for s in (a, b)), timeout=20)
        assert failed, [nodes(s)[c_id] for s in (a, b)]
        assert info(a)['cluster_state'] == 'fail'
        assert a.call('CLUSTER', 'COUNT-FAILURE-REPORTS', c_id) in (0, 1)
        # The partition takes no slot from c: a and b still see c as the
        # owner of its slots, and refuse writes there (no failover without
        # replicas), so no slot has two owners that both accept writes.
        assert all(slot_owners(s) == owners for s in (a, b))
        for s in (a, b):
            got = s.call('SET', key_of_c, 'x')
            assert str(got).startswith(('MOVED', 'CLUSTERDOWN')), got
    finally:
        os.kill(c.proc.pid, signal.SIGCONT)
    # Back: FAIL is cleared (after twice the node timeout) and state is ok.
    assert wait_until(lambda: all_agree([a, b, c], 3), timeout=30), \
        [s.call('CLUSTER', 'NODES') for s in (a, b, c)]
    assert all(slot_owners(s) == owners for s in (a, b, c))
    assert c.call('SET', key_of_c, 'y') == b'OK'


@test
@xkv_only
def cluster_publish_reaches_every_node(ctx):
    a, b = cluster_node(ctx), cluster_node(ctx)
    assert a.call('CLUSTER', 'MEET', '127.0.0.1', b.port, b.directives['cluster-port']) == b'OK'
    assert wait_until(lambda: len(nodes(a)) == 2 and len(nodes(b)) == 2 and
                      not any('handshake' in v[1] for s in (a, b) for v in nodes(s).values()),
                      timeout=20)
    with b.client() as sub:
        assert sub.call('SUBSCRIBE', 'news')[0] == b'subscribe'
        # The count is of the publishing node's receivers, as Redis's.
        assert a.call('PUBLISH', 'news', 'hello') == 0
        assert sub.read_reply() == b'*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n'


@test
@xkv_only
def cluster_bus_malformed_message_closes_only_its_link(ctx):
    a, b = cluster_node(ctx), cluster_node(ctx)
    assert a.call('CLUSTER', 'MEET', '127.0.0.1', b.port, b.directives['cluster-port']) == b'OK'
    assert wait_until(lambda: len(nodes(a)) == 2 and len(nodes(b)) == 2, timeout=20)
    bus = a.directives['cluster-port']
    bad = [b'GET / HTTP/1.0\r\n\r\n',
           b'RCmb' + (100).to_bytes(4, 'big') + b'\0' * 92,           # shorter than a header
           b'RCmb' + (2256).to_bytes(4, 'big') + b'\0\x01\0\0\0\x03' + b'\0' * 2242]  # FAIL, no body
    for msg in bad:
        s = socket.create_connection(('127.0.0.1', bus), timeout=5)
        s.sendall(msg)
        s.settimeout(5)
        try:
            assert s.recv(1) == b''       # closed by a
        except ConnectionResetError:
            pass
        s.close()
    assert a.call('PING') == b'PONG'
    b_id = b.call('CLUSTER', 'MYID').decode()
    assert wait_until(lambda: nodes(a)[b_id][1] == 'master' and
                      'connected' in a.call('CLUSTER', 'NODES').decode(), timeout=10)


@test
@xkv_only
def cluster_mixed_reshard_from_redis_onto_xkvd(ctx):
    from redis.cluster import ClusterNode, RedisCluster

    r1, r2 = cluster_node(ctx, 'ref'), cluster_node(ctx, 'ref')
    x = cluster_node(ctx)
    assert r1.call('CLUSTER', 'ADDSLOTSRANGE', 0, 8191) == b'OK'
    assert r2.call('CLUSTER', 'ADDSLOTSRANGE', 8192, 16383) == b'OK'
    for srv, epoch in ((r1, 1), (r2, 2), (x, 3)):
        assert srv.call('CLUSTER', 'SET-CONFIG-EPOCH', epoch) == b'OK'
    assert x.call('CLUSTER', 'MEET', '127.0.0.1', r1.port, r1.directives['cluster-port']) == b'OK'
    assert r2.call('CLUSTER', 'MEET', '127.0.0.1', x.port, x.directives['cluster-port']) == b'OK'
    assert wait_until(lambda: all_agree([r1, r2, x], 3), timeout=30), \
        [s.call('CLUSTER', 'NODES') for s in (r1, r2, x)]
    rc_client = RedisCluster(startup_nodes=[ClusterNode('127.0.0.1', x.port)],
                             socket_timeout=10)
    try:
        for i in range(1000):
            assert rc_client.set('k:%d' % i, str(i))
        r1_id, x_id = r1.call('CLUSTER', 'MYID').decode(), x.call('CLUSTER', 'MYID').decode()
        # redis-server 7.0 MIGRATEs onto xkvd (RESTORE-ASKING here).
        rc, out = cli('--cluster', 'reshard', addr(r1), '--cluster-from', r1_id,
                      '--cluster-to', x_id, '--cluster-slots', 300, '--cluster-yes',
                      timeout=300)
        assert rc == 0, out[-2000:]
        assert wait_until(lambda: all_agree([r1, r2, x], 3), timeout=30)
        check_green(x)
        assert nodes(r2)[x_id][2] == '0-299', nodes(r2)[x_id]
        assert x.call('DBSIZE') > 0
        for i in range(1000):
            assert rc_client.get('k:%d' % i) == str(i).encode(), i
    finally:
        rc_client.close()


@test
@xkv_only
def cluster_rebalance_with_keys(ctx):
    from redis.cluster import ClusterNode, RedisCluster

    a, b = cluster_node(ctx), cluster_node(ctx)
    # 400 slots out of balance: rebalance moves 200 of them, with their keys.
    assert a.call('CLUSTER', 'ADDSLOTSRANGE', 0, 8391) == b'OK'
    assert b.call('CLUSTER', 'ADDSLOTSRANGE', 8392, 16383) == b'OK'
    for srv, epoch in ((a, 1), (b, 2)):
        assert srv.call('CLUSTER', 'SET-CONFIG-EPOCH', epoch) == b'OK'
    assert a.call('CLUSTER', 'MEET', '127.0.0.1', b.port, b.directives['cluster-port']) == b'OK'
    assert wait_until(lambda: all_agree([a, b], 2), timeout=30)
    rc_client = RedisCluster(startup_nodes=[ClusterNode('127.0.0.1', a.port)],
                             socket_timeout=10)
    try:
        for i in range(1000):
            assert rc_client.set('r:%d' % i, str(i))
        rc, out = cli('--cluster', 'rebalance', addr(a), '--cluster-threshold', 1,
                      timeout=300)
        assert rc == 0, out[-2000:]
        assert 'Moving 200 slots' in out, out[-2000:]
        assert wait_until(lambda: all_agree([a, b], 2), timeout=30)
        check_green(b)
        b_id = b.call('CLUSTER', 'MYID').decode()
        # redis-cli takes the source's first slots.
        assert nodes(a)[b_id][2] == '0-199 8392-16383', nodes(a)[b_id]
        assert a.call('DBSIZE') + b.call('DBSIZE') == 1000
        for i in range(1000):
            assert rc_client.get('r:%d' % i) == str(i).encode(), i
    finally:
        rc_client.close()
