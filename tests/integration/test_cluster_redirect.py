# SPDX-License-Identifier: GPL-2.0-only
"""Cluster mode's data plane on a 3-node xkvd cluster made by redis-cli
--cluster create: MOVED to the owner (its address as CLUSTER NODES has it),
CROSSSLOT, a transaction refused by a redirect, COUNTKEYSINSLOT and
GETKEYSINSLOT; a slot migrated by hand (SETSLOT MIGRATING / IMPORTING): ASK
for a key already gone, TRYAGAIN for a multi-key command split between the
nodes, MOVED without ASKING on the target and service with it, MIGRATE with
RESTORE-ASKING, then SETSLOT NODE: MOVED and the keys deleted on the old
owner; redis-cli --cluster reshard of 200 slots with 2,000 keys, every key
read back through redis-py's RedisCluster; a reshard under a write load
(XKV_RESHARD_SLOTS slots and XKV_RESHARD_KEYS keys, 300 and 20,000 by default;
issue 17 asks 1,000 and 100,000): no acknowledged write lost, no error the
client did not follow; ioredis Cluster and node-redis
createCluster (tests/clients/cluster.js)."""

import os
import shutil
import socket
import struct
import subprocess
import sys
import threading

from redis.cluster import ClusterNode, RedisCluster

from harness import RespError, test, wait_until, xkv_only
from test_cluster import addr, all_agree, check_green, cli, cluster_node

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def three_nodes(ctx):
    a, b, c = (cluster_node(ctx) for _ in range(3))
    rc, out = cli('--cluster', 'create', addr(a), addr(b), addr(c), '--cluster-yes')
    assert rc == 0, out
    assert wait_until(lambda: all_agree([a, b, c], 3), timeout=20)
    return a, b, c


def owner_of(servers, slot):
    for s in servers:
        for start, end, *_ in s.call('CLUSTER', 'SLOTS'):
            if start <= slot <= end:
                return next(x for x in servers if x.port == _[0][1])
    raise AssertionError('slot %d not served' % slot)


def key_on(servers, srv, prefix='k'):
    """A key whose slot srv owns, and that slot."""
    for i in range(10000):
        k = '%s%d' % (prefix, i)
        slot = srv.call('CLUSTER', 'KEYSLOT', k)
        if owner_of(servers, slot) is srv:
            return k, slot
    raise AssertionError('no key for %s' % srv.port)


def err(srv, *args):
    got = srv.call(*args)
    assert isinstance(got, RespError), got
    return str(got)


@test
@xkv_only
def cluster_moved_crossslot_multi(ctx):
    a, b, c = servers = three_nodes(ctx)
    kb, slot_b = key_on(servers, b)
    assert err(a, 'SET', kb, 'v') == 'MOVED %d 127.0.0.1:%d' % (slot_b, b.port)
    assert err(a, 'GET', kb) == 'MOVED %d 127.0.0.1:%d' % (slot_b, b.port)
    assert b.call('SET', kb, 'v') == b'OK' and b.call('GET', kb) == b'v'
    ka, slot_a = key_on(servers, a)
    ka2, slot_a2 = key_on(servers, a, 'other')
    if slot_a2 != slot_a:
        assert err(a, 'MSET', ka, '1', ka2, '2') == \
            "CROSSSLOT Keys in request don't hash to the same slot"
    # Keys sharing a tag: one slot, served.
    assert a.call('MSET', '{%s}x' % ka, '1', '{%s}y' % ka, '2') == b'OK'
    tag_slot = a.call('CLUSTER', 'KEYSLOT', ka)
    assert a.call('CLUSTER', 'COUNTKEYSINSLOT', tag_slot) == 2
    assert sorted(a.call('CLUSTER', 'GETKEYSINSLOT', tag_slot, 10)) == \
        sorted([('{%s}x' % ka).encode(), ('{%s}y' % ka).encode()])
    # The owner of no such slot counts nothing (Redis 8).
    assert b.call('CLUSTER', 'COUNTKEYSINSLOT', tag_slot) == 0
    # A redirect while queueing dooms the transaction.
    with a.client() as x:
        assert x.call('MULTI') == b'OK'
        assert str(x.call('SET', kb, '1')).startswith('MOVED')
        assert x.call('SET', ka, '1') == b'QUEUED'
        assert str(x.call('EXEC')).startswith('EXECABORT')
    # Keyless commands run anywhere; shard channels are routed.
    assert c.call('PING') == b'PONG'
    assert err(a, 'SPUBLISH', kb, 'm').startswith('MOVED %d ' % slot_b)
    assert b.call('SPUBLISH', kb, 'm') == 0


@test
@xkv_only
def cluster_migration_ask_tryagain(ctx):
    a, b, c = servers = three_nodes(ctx)
    k, slot = key_on(servers, a)
    here, gone = '{%s}here' % k, '{%s}gone' % k
    assert a.call('SET', here, '1') == b'OK' and a.call('SET', gone, '2') == b'OK'
    a_id, b_id = a.call('CLUSTER', 'MYID').decode(), b.call('CLUSTER', 'MYID').decode()
    assert b.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', a_id) == b'OK'
    assert a.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', b_id) == b'OK'
    assert a.call('MIGRATE', '127.0.0.1', b.port, gone, 0, 5000) == b'OK'
    assert a.call('CLUSTER', 'COUNTKEYSINSLOT', slot) == 1
    # On the source: a key still here is served; a gone one is ASKed.
    assert a.call('GET', here) == b'1'
    ask = 'ASK %d 127.0.0.1:%d' % (slot, b.port)
    assert err(a, 'GET', gone) == ask
    assert err(a, 'MGET', here, gone) == 'TRYAGAIN Multiple keys request during rehashing of slot'
    # On the target: MOVED back without ASKING, served with it (once).
    moved = 'MOVED %d 127.0.0.1:%d' % (slot, a.port)
    assert err(b, 'GET', gone) == moved
    with b.client() as y:
        assert y.call('ASKING') == b'OK'
        assert y.call('GET', gone) == b'2'
        assert str(y.call('GET', gone)) == moved
        assert y.call('ASKING') == b'OK'
        assert str(y.call('MGET', gone, here)) == \
            'TRYAGAIN Multiple keys request during rehashing of slot'
    # The importing node lists the keys it has of the slot.
    assert b.call('CLUSTER', 'COUNTKEYSINSLOT', slot) == 1
    assert a.call('MIGRATE', '127.0.0.1', b.port, '', 0, 5000, 'KEYS', here) == b'OK'
    assert a.call('CLUSTER', 'COUNTKEYSINSLOT', slot) == 0
    for s in (b, a, c):
        assert s.call('CLUSTER', 'SETSLOT', slot, 'NODE', b_id) == b'OK'
    assert err(a, 'GET', here) == 'MOVED %d 127.0.0.1:%d' % (slot, b.port)
    assert b.call('MGET', here, gone) == [b'1', b'2']
    assert wait_until(lambda: all_agree([a, b, c], 3), timeout=20)
    check_green(a)


@test
@xkv_only
def cluster_reshard_with_keys_redis_py(ctx):
    a, b, c = three_nodes(ctx)
    rc_client = RedisCluster(startup_nodes=[ClusterNode('127.0.0.1', a.port)],
                             socket_timeout=10)
    try:
        for i in range(2000):
            assert rc_client.set('key:%d' % i, str(i))
        assert sum(s.call('DBSIZE') for s in (a, b, c)) == 2000
        src, dst = a.call('CLUSTER', 'MYID').decode(), b.call('CLUSTER', 'MYID').decode()
        rc, out = cli('--cluster', 'reshard', addr(a), '--cluster-from', src,
                      '--cluster-to', dst, '--cluster-slots', 200, '--cluster-yes',
                      timeout=300)
        assert rc == 0, out[-2000:]
        assert wait_until(lambda: all_agree([a, b, c], 3), timeout=30)
        check_green(a)
        assert sum(s.call('DBSIZE') for s in (a, b, c)) == 2000
        # The client follows the MOVED of the slots that moved.
        for i in range(2000):
            assert rc_client.get('key:%d' % i) == str(i).encode(), i
        assert rc_client.mget_nonatomic(['key:1', 'key:2']) == [b'1', b'2']
    finally:
        rc_client.close()


@test
@xkv_only
def cluster_reshard_under_write_load(ctx):
    """redis-cli --cluster reshard while 4 redis-py RedisCluster clients write
    (they follow MOVED and ASK); then every preloaded key and every
    acknowledged write is read back from the cluster."""
    keys = int(os.environ.get('XKV_RESHARD_KEYS', '20000'))
    slots = int(os.environ.get('XKV_RESHARD_SLOTS', '300'))
    a, b, c = three_nodes(ctx)
    load = RedisCluster(startup_nodes=[ClusterNode('127.0.0.1', a.port)], socket_timeout=10)
    pipe = load.pipeline(transaction=False)
    for i in range(keys):
        pipe.set('pre:%d' % i, i)
        if i % 1000 == 999:
            pipe.execute()
    pipe.execute()
    stop = threading.Event()
    acked = [[] for _ in range(4)]
    errors = []

    def writer(n):
        client = RedisCluster(startup_nodes=[ClusterNode('127.0.0.1', b.port)],
                              socket_timeout=10)
        try:
            i = 0
            while not stop.is_set() and i < 50000:
                k = 'w%d:%d' % (n, i)
                try:
                    if client.set(k, i):
                        acked[n].append(k)
                except Exception as e:  # anything the client did not follow
                    errors.append('%s: %r' % (k, e))
                i += 1
        finally:
            client.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    try:
        src, dst = a.call('CLUSTER', 'MYID').decode(), c.call('CLUSTER', 'MYID').decode()
        rc, out = cli('--cluster', 'reshard', addr(a), '--cluster-from', src,
                      '--cluster-to', dst, '--cluster-slots', slots, '--cluster-yes',
                      timeout=600)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert rc == 0, out[-2000:]
    assert not errors, errors[:5]
    assert wait_until(lambda: all_agree([a, b, c], 3), timeout=30)
    check_green(a)
    written = sum(len(x) for x in acked)
    assert written > 0
    assert sum(s.call('DBSIZE') for s in (a, b, c)) == keys + written
    try:
        expect = [('pre:%d' % i, str(i).encode()) for i in range(keys)]
        expect += [(k, k.split(':')[1].encode()) for x in acked for k in x]
        for at in range(0, len(expect), 1000):
            part = expect[at:at + 1000]
            got = load.mget_nonatomic([k for k, _ in part])
            assert got == [v for _, v in part], at
    finally:
        load.close()


@test
@xkv_only
def cluster_node_clients(ctx):
    """ioredis Cluster and node-redis createCluster (npm, clients/node)."""
    node = shutil.which('node')
    assert node, 'node is not installed (make deps)'
    mods = os.path.join(REPO, 'clients', 'node', 'node_modules')
    assert os.path.isdir(os.path.join(mods, 'ioredis')) and \
        os.path.isdir(os.path.join(mods, 'redis')), 'make deps runs npm ci in clients/node'
    a, b, c = three_nodes(ctx)
    p = subprocess.run([node, os.path.join(REPO, 'tests', 'clients', 'cluster.js'),
                        '--ports', '%d,%d,%d' % (a.port, b.port, c.port), '--keys', '1000'],
                       capture_output=True, timeout=300)
    out = (p.stdout + p.stderr).decode('utf-8', 'replace')
    assert p.returncode == 0 and 'ok 2000 keys' in out, out[-3000:]
    assert sum(s.call('DBSIZE') for s in (a, b, c)) == 2000 + 6
    assert all(s.call('DBSIZE') > 300 for s in (a, b, c))


@test
@xkv_only
def cluster_python_fastpath_client(ctx):
    """xkv.RedisCluster (clients/python): GETs and MGETs over UDP to each key's
    node; after a slot moves, the stale node's MOVED over UDP sends the call
    to TCP, where RedisCluster follows it and refreshes its table, and the
    next GET goes over UDP to the new owner."""
    sys.path.insert(0, os.path.join(REPO, 'clients', 'python'))
    import xkv
    a, b, c = servers = three_nodes(ctx)
    plain = RedisCluster(startup_nodes=[ClusterNode('127.0.0.1', a.port)])
    fast = xkv.RedisCluster(startup_nodes=[ClusterNode('127.0.0.1', a.port)])
    try:
        names = ['u:%d' % i for i in range(300)]
        for n in names:
            assert plain.set(n, n.upper())
        assert [fast.get(n) for n in names] == [n.upper().encode() for n in names]
        assert fast.get('u:missing') is None
        assert fast.mget_nonatomic(names[:50] + ['u:missing']) == \
            [n.upper().encode() for n in names[:50]] + [None]
        st = fast.stats.as_dict()
        assert st['udp'] >= 301 and st['fallbacks'] == 0 and st['tcp_only'] == 0, st
        # Move the slot of a key from its owner to another node, by hand.
        k = names[0]
        slot = a.call('CLUSTER', 'KEYSLOT', k)
        src = owner_of(servers, slot)
        dst = next(s for s in servers if s is not src)
        src_id, dst_id = (s.call('CLUSTER', 'MYID').decode() for s in (src, dst))
        assert dst.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', src_id) == b'OK'
        assert src.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', dst_id) == b'OK'
        keys = src.call('CLUSTER', 'GETKEYSINSLOT', slot, 100)
        assert src.call('MIGRATE', '127.0.0.1', dst.port, '', 0, 5000, 'KEYS', *keys) == b'OK'
        for s in servers:
            assert s.call('CLUSTER', 'SETSLOT', slot, 'NODE', dst_id) == b'OK'
        assert fast.get(k) == k.upper().encode()            # MOVED over UDP, then TCP
        st = fast.stats.as_dict()
        assert st['reasons'] == {'redirect': 1}, st
        assert fast.get(k) == k.upper().encode()            # UDP to the new owner
        assert fast.stats.as_dict()['udp'] == st['udp'] + 1
    finally:
        fast.close()
        plain.close()


@test
@xkv_only
def cluster_node_fastpath_client(ctx):
    """xkv-client's Cluster (clients/node): tests/clients/cluster_fastpath.js."""
    node = shutil.which('node')
    assert node, 'node is not installed (make deps)'
    a, b, c = three_nodes(ctx)
    p = subprocess.run([node, os.path.join(REPO, 'tests', 'clients', 'cluster_fastpath.js'),
                        '--ports', '%d,%d,%d' % (a.port, b.port, c.port), '--keys', '300'],
                       capture_output=True, timeout=300)
    out = (p.stdout + p.stderr).decode('utf-8', 'replace')
    assert p.returncode == 0 and out.startswith('ok '), out[-3000:]


def udp_call(port, *args):
    """One command over xkvd's UDP protocol (docs/udp-protocol.md): the reply."""
    body = b'*%d\r\n' % len(args) + b''.join(
        b'$%d\r\n%s\r\n' % (len(a), a) for a in (x.encode() for x in args))
    req = struct.pack('!HBBIHHIQ', 0x584b, 1, 0, 7, len(body), 0, 0, 0) + body
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(2)
        s.connect(('127.0.0.1', port))
        s.send(req + bytes(256))
        return s.recv(4096)[24:].split(b'\r\n')[:3]


@test
@xkv_only
def cluster_udp_get_redirected(ctx):
    """A GET or MGET over UDP for a slot served elsewhere gets TCP's MOVED."""
    a, b, c = servers = three_nodes(ctx)
    kb, slot_b = key_on(servers, b)
    ka, _ = key_on(servers, a)
    assert a.call('SET', ka, 'here') == b'OK' and b.call('SET', kb, 'there') == b'OK'
    assert udp_call(a.port, 'GET', ka)[:2] == [b'$4', b'here']
    assert udp_call(a.port, 'GET', kb)[0] == b'-MOVED %d 127.0.0.1:%d' % (slot_b, b.port)
    assert udp_call(b.port, 'GET', kb)[:2] == [b'$5', b'there']
    assert udp_call(a.port, 'MGET', ka, kb)[0].startswith(b'-CROSSSLOT') or \
        udp_call(a.port, 'MGET', ka, kb)[0].startswith(b'-MOVED')
    assert udp_call(a.port, 'PING')[0] == b'+PONG'


@test
@xkv_only
def cluster_blocked_client_moved(ctx):
    """A client blocked on a key whose slot moves away is answered MOVED."""
    a, b, c = servers = three_nodes(ctx)
    k, slot = key_on(servers, a)
    b_id = b.call('CLUSTER', 'MYID').decode()
    with a.client(timeout=10) as w:
        w.send('BLPOP', k, '0')
        assert wait_until(lambda: b'blocked_clients:1' in a.call('INFO', 'clients'))
        for s in (b, a, c):
            assert s.call('CLUSTER', 'SETSLOT', slot, 'NODE', b_id) == b'OK'
        got = w.read_reply()
        assert got == b'-MOVED %d 127.0.0.1:%d\r\n' % (slot, b.port), got
        assert w.call('PING') == b'PONG'


@test
@xkv_only
def cluster_script_keys(ctx):
    """Scripts on a cluster node: declared keys are routed; an undeclared key
    of another node's slot, or of another slot than the declared ones, is
    refused inside the script (Redis's messages), unless the script allows
    cross-slot keys or has no shebang; no-cluster scripts do not run."""
    a, b, c = servers = three_nodes(ctx)
    ka, slot_a = key_on(servers, a)
    kb, slot_b = key_on(servers, b)
    other = next('{%s}%d' % (ka, i) for i in range(1))  # same slot as ka
    far = next(k for k, s in (key_on(servers, a, 'z'),) if s != slot_a)
    set_ = "return redis.call('set', KEYS[1], '1')"
    assert a.call('EVAL', set_, 1, ka) == b'OK'
    assert str(a.call('EVAL', set_, 1, kb)).startswith('MOVED %d ' % slot_b)
    touch = "return redis.call('get', ARGV[1])"
    got = str(a.call('EVAL', '#!lua\n' + touch, 0, kb))
    assert 'Script attempted to access a non local key in a cluster node' in got, got
    got = str(a.call('EVAL', '#!lua\n' + touch, 1, ka, far))
    assert 'Script attempted to access keys that do not hash to the same slot' in got, got
    assert a.call('EVAL', '#!lua\n' + touch, 1, ka, other) is None
    assert a.call('EVAL', '#!lua flags=allow-cross-slot-keys\n' + touch, 1, ka, far) is None
    assert a.call('EVAL', touch, 1, ka, far) is None     # no shebang: allowed, as Redis
    got = str(a.call('EVAL', '#!lua flags=no-cluster\nreturn 1', 0))
    assert got == "ERR Can not run script on cluster, 'no-cluster' flag is set.", got
    got = str(a.call('EVAL', "return redis.call('mget', ARGV[1], ARGV[2])", 0, ka, far))
    assert "Command 'mget' in script attempted to access keys that don't hash to the same " \
        "slot" in got, got


@test
@xkv_only
def cluster_slot_lost_deletes_as_redis(ctx):
    """A node that loses a slot with keys to a higher epoch's claim deletes
    them as Redis's clusterDelKeysInSlot does: a "del" keyspace event each,
    and a DEL each in the propagation stream (the AOF here)."""
    a, b, c = servers = three_nodes(ctx)
    k, slot = key_on(servers, a)
    other = '{%s}2' % k
    assert a.call('CONFIG', 'SET', 'appendonly', 'yes') == b'OK'
    assert wait_until(lambda: b'aof_rewrite_in_progress:0' in a.call('INFO', 'persistence')
                      and b'aof_rewrite_scheduled:0' in a.call('INFO', 'persistence'))
    assert a.call('CONFIG', 'SET', 'notify-keyspace-events', 'Eg') == b'OK'
    assert a.call('SET', k, 'v') == b'OK' and a.call('SET', other, 'w') == b'OK'
    a_id, b_id = a.call('CLUSTER', 'MYID').decode(), b.call('CLUSTER', 'MYID').decode()
    with a.client(timeout=10) as sub:
        sub.send('SUBSCRIBE', '__keyevent@0__:del')
        sub.read_reply()
        # b takes the slot over (SETSLOT NODE myself on an importing slot
        # bumps its epoch): a hears of it by gossip and loses the slot.
        assert b.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', a_id) == b'OK'
        assert b.call('CLUSTER', 'SETSLOT', slot, 'NODE', b_id) == b'OK'
        assert wait_until(lambda: a.call('DBSIZE') == 0, timeout=20), a.call('DBSIZE')
        got = sorted(sub.read_reply() for _ in range(2))
    want = sorted(b'*3\r\n$7\r\nmessage\r\n$18\r\n__keyevent@0__:del\r\n$%d\r\n%s\r\n'
                  % (len(key), key.encode()) for key in (k, other))
    assert got == want, got
    aof_dir = os.path.join(a.dir, 'appendonlydir')
    text = b''.join(open(os.path.join(aof_dir, f), 'rb').read()
                    for f in sorted(os.listdir(aof_dir)) if '.incr.' in f)
    for key in (k, other):
        assert b'*2\r\n$3\r\nDEL\r\n$%d\r\n%s\r\n' % (len(key), key.encode()) in text, text


@test
@xkv_only
def cluster_slot_lost_unsubscribes_shard_channels(ctx):
    """A node that loses a slot unsubscribes the subscribers of the slot's
    shard channels, each with a sunsubscribe message (Redis's
    removeChannelsInSlot); other slots' channels stay."""
    a, b, c = servers = three_nodes(ctx)
    ch, slot = key_on(servers, a, 'ch')
    kept, kept_slot = next((k, s) for k, s in (key_on(servers, a, 'keep'),) if s != slot)
    a_id, b_id = a.call('CLUSTER', 'MYID').decode(), b.call('CLUSTER', 'MYID').decode()
    with a.client(timeout=10) as sub, a.client(timeout=10, proto=3) as sub3:
        # One slot per SSUBSCRIBE, as in Redis.
        sub.send('SSUBSCRIBE', ch, '{%s}x' % ch)
        sub.read_reply()
        sub.read_reply()
        sub.send('SSUBSCRIBE', kept)
        sub.read_reply()
        sub3.send('SSUBSCRIBE', ch)
        sub3.read_reply()
        assert b.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', a_id) == b'OK'
        assert b.call('CLUSTER', 'SETSLOT', slot, 'NODE', b_id) == b'OK'
        got = sorted(sub.read_reply() for _ in range(2))
        assert got == sorted(b'*3\r\n$12\r\nsunsubscribe\r\n$%d\r\n%s\r\n:%d\r\n'
                             % (len(name), name.encode(), n)
                             for name, n in ((ch, 2), ('{%s}x' % ch, 1))) or \
            got == sorted(b'*3\r\n$12\r\nsunsubscribe\r\n$%d\r\n%s\r\n:%d\r\n'
                          % (len(name), name.encode(), n)
                          for name, n in ((ch, 1), ('{%s}x' % ch, 2))), got
        assert sub3.read_reply() == b'>3\r\n$12\r\nsunsubscribe\r\n$%d\r\n%s\r\n:0\r\n' % (
            len(ch), ch.encode())
        # Still subscribed to the other slot's channel.
        assert a.call('SPUBLISH', kept, 'hi') == 1
        assert sub.read_reply() == b'*3\r\n$8\r\nsmessage\r\n$%d\r\n%s\r\n$2\r\nhi\r\n' % (
            len(kept), kept.encode())
