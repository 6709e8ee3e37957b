# SPDX-License-Identifier: GPL-2.0-only
"""Cluster mode's data plane on one node (cluster-enabled yes, no slot
assigned yet): the redirect decision of every keyed command (a slot nobody
serves is -CLUSTERDOWN Hash slot not served; keyless commands run), inside
MULTI (the queue fails with EXECABORT) and for shard channels; ASKING,
READONLY, READWRITE; CLUSTER COUNTKEYSINSLOT and GETKEYSINSLOT's argument
errors. Byte for byte with redis-server 7.0.15 started the same way."""

from harness import free_port, test


def cluster_pair(t):
    """A 7.0.15 and an xkvd node, each with a bus port of its own (Redis's
    default, port + 10000, may not exist for a high free port)."""
    return tuple(t.spawn(role, **{'cluster-enabled': 'yes', 'cluster-port': free_port()})
                 for role in ('ref', 'sut'))

UNBOUND = [
    ('SET', 'a', '1'),
    ('GET', 'a'),
    ('MSET', 'a', '1', 'b', '2'),
    ('MGET', '{t}a', '{t}b'),
    ('DEL', 'x', 'y'),
    ('RPOPLPUSH', 'l', 'l'),
    ('EVAL', 'return 1', '1', 'k'),
    ('EVAL', 'return 1', '0'),
    ('SPUBLISH', 'ch', 'm'),
    ('PUBLISH', 'ch', 'm'),
    ('PING',),
    ('DBSIZE',),
    ('SORT', 'l', 'BY', 'nosort'),
    ('OBJECT', 'ENCODING', 'a'),
    ('XREAD', 'STREAMS', 's', '0'),
    ('ZUNIONSTORE', 'd', '2', 'a', 'b'),
]


@test
def cluster_unbound_slots(t):
    """Every keyed command names a slot no node serves: CLUSTERDOWN."""
    ref, sut = cluster_pair(t)
    for proto in (2, 3):
        t.compare(UNBOUND, proto, ref=ref, sut=sut)


@test
def cluster_multi_redirect_flags_transaction(t):
    """A keyed command refused while queueing dooms the transaction; a
    keyless one queues and EXEC runs it."""
    ref, sut = cluster_pair(t)
    t.compare([('MULTI',), ('PING',), ('SET', 'a', '1'), ('EXEC',),
               ('MULTI',), ('PING',), ('ECHO', 'x'), ('EXEC',),
               ('MULTI',), ('GET', 'k'), ('DISCARD',)], ref=ref, sut=sut)


@test
def cluster_connection_flags(t):
    """ASKING, READONLY, READWRITE in cluster mode (and READONLY's 'r' in
    CLIENT LIST), refused without it."""
    ref, sut = cluster_pair(t)
    t.compare([('ASKING',), ('READONLY',), ('READWRITE',), ('ASKING', 'x')], ref=ref, sut=sut)

    def flags(srv):
        with srv.client() as c:
            c.call('READONLY')
            line = c.call('CLIENT', 'INFO').decode()
            ro = [f for f in line.split() if f.startswith('flags=')][0]
            c.call('READWRITE')
            line = c.call('CLIENT', 'INFO').decode()
            rw = [f for f in line.split() if f.startswith('flags=')][0]
            c.call('READONLY')
            c.call('RESET')
            line = c.call('CLIENT', 'INFO').decode()
            reset = [f for f in line.split() if f.startswith('flags=')][0]
            return ro, rw, reset
    got = flags(ref), flags(sut)
    assert got[0] == got[1] == ('flags=r', 'flags=N', 'flags=N'), got
    t.compare([('ASKING',), ('READONLY',), ('READWRITE',),
               ('CLUSTER', 'COUNTKEYSINSLOT', '1'), ('CLUSTER', 'GETKEYSINSLOT', '1', '1')])


@test
def cluster_keysinslot_arguments(t):
    """COUNTKEYSINSLOT and GETKEYSINSLOT: their errors, and an empty slot."""
    ref, sut = cluster_pair(t)
    t.compare([('CLUSTER', 'COUNTKEYSINSLOT', '0'),
               ('CLUSTER', 'COUNTKEYSINSLOT', '16383'),
               ('CLUSTER', 'COUNTKEYSINSLOT', '16384'),
               ('CLUSTER', 'COUNTKEYSINSLOT', '-1'),
               ('CLUSTER', 'COUNTKEYSINSLOT', 'x'),
               ('CLUSTER', 'COUNTKEYSINSLOT'),
               ('CLUSTER', 'GETKEYSINSLOT', '0', '10'),
               ('CLUSTER', 'GETKEYSINSLOT', '0', '-1'),
               ('CLUSTER', 'GETKEYSINSLOT', '16384', '1'),
               ('CLUSTER', 'GETKEYSINSLOT', 'x', '1'),
               ('CLUSTER', 'GETKEYSINSLOT', '1', 'y'),
               ('CLUSTER', 'GETKEYSINSLOT', '1')], ref=ref, sut=sut)
