# SPDX-License-Identifier: GPL-2.0-only
"""COMMAND GETKEYS and GETKEYSANDFLAGS over the whole command table, against
the reference servers: every command and subcommand, with argument vectors
shaped for fixed keys, numkeys arguments (first, after a timeout, after a
destination), keywords (SORT's STORE, BY and GET, SET's GET, BITFIELD's
operations, COPY's DB) and bad counts. Key specs are what the dispatcher locks
by, so a key these miss would be a command running on an unlocked shard.

The reference for a command is redis-server 7.0.15 when it has the command
with the same arity, else Redis 8.8 when built (/work/peers); commands
neither has with our arity are counted, not compared. COMMAND GETKEYS's own
arity is 8.8's (-3: a command alone), so vectors with no arguments are
compared with 8.8 only."""

import os

from harness import Client, Server, test

REDIS_88 = os.environ.get('XKV_REDIS_88',
                          '/work/peers/redis-8.8.0/src/redis-server')

WORDS = ['k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7', 'k8']
SHAPES = [
    [], ['2'], ['0', '2'], ['d', '2'], ['3'], ['1'], ['-1'], ['0'], ['x'],
    ['k', 'BY', 'w_*', 'LIMIT', '0', '1', 'STORE', 'd'],
    ['k', 'GET', '#', 'STORE', 'a', 'STORE', 'b'], ['k', 'v', 'GET'],
    ['k', 'v', 'EX', '10'], ['k', 'GET', 'u8', '0'], ['k', 'SET', 'u8', '0', '1'],
    ['k', 'OVERFLOW', 'SAT', 'GET', 'u8', '0'], ['k', 'd', 'DB', '1'],
    ['2', 'a', '1', 'b', '2'], ['k', 'FIELDS', '1', 'f'], ['STREAMS', 'a', 'b', '0', '0'],
]

# Numkeys commands: their keys are found by key specs, not fixed positions.
MOVABLE = ['zunionstore', 'zinterstore', 'zdiffstore', 'zunion', 'zinter', 'zdiff',
           'zintercard', 'lmpop', 'blmpop', 'zmpop', 'bzmpop', 'sintercard', 'sort',
           'sort_ro']


def vectors(name, arity):
    """Argument lists after the command's name (its subcommand first)."""
    sub = name.split('|')[1:]
    need = abs(arity) - 1 - len(sub)
    out = set()
    for shape in SHAPES:
        for extra in range(5):
            args = list(shape) + WORDS[:max(0, need - len(shape)) + extra]
            if (arity > 0 and len(args) != need) or len(args) < need:
                continue
            out.add(tuple(sub + args))
    return sorted(out)


def table(port):
    """{name: arity} of every command and subcommand."""
    with Client(port) as c:
        out = {}
        for e in c.call('COMMAND'):
            out[e[0].decode()] = e[1]
            for s in e[9]:
                out[s[0].decode()] = s[1]
        return out


def walk(ref, sut, names, args_ok):
    """Compares every vector of names on both servers, RESP2 and RESP3;
    returns the number compared, or raises on the first difference."""
    n = 0
    for proto in (2, 3):
        with Client(ref.port, proto) as a, Client(sut.port, proto) as b:
            for name, arity in names:
                top = name.split('|')[0]
                for v in vectors(name, arity):
                    if not args_ok(name, v):
                        continue
                    for sub in ('GETKEYS', 'GETKEYSANDFLAGS'):
                        cmd = ('COMMAND', sub, top) + v
                        ra, rb = a.cmd(*cmd), b.cmd(*cmd)
                        n += 1
                        assert ra == rb, 'RESP%d %r\n  %s: %r\n  xkvd: %r' % (
                            proto, cmd, ref.label, ra[:300], rb[:300])
    return n


@test
def getkeys_whole_table(t):
    ours = table(t.sut.port)
    ref70 = table(t.ref.port)
    # Redis 8.8 corrected SINTERSTORE's destination to OW; our key specs are
    # 7.0's (COMMAND INFO is compared with 7.0), so that one is 7.0's too.
    on70 = sorted((n, a) for n, a in ours.items() if ref70.get(n) == a)
    count = walk(t.ref, t.sut, on70, lambda name, v: len(v) > len(name.split('|')) - 1)
    assert count > 20000, count
    if not os.access(REDIS_88, os.X_OK):
        print('# Redis 8.8 not built: %d commands not compared' % (len(ours) - len(on70)))
        return
    r88 = Server('redis', redis_binary=REDIS_88, label='redis-8.8').start()
    try:
        ref88 = table(r88.port)
        on88 = sorted((n, a) for n, a in ours.items()
                      if ref88.get(n) == a and n != 'sinterstore'
                     )
        count = walk(r88, t.sut, on88, lambda name, v: True)
        assert count > 20000, count
        missing = sorted(n for n in ours if ref70.get(n) != ours[n] and ref88.get(n) != ours[n])
        print('# compared with 8.8: %d vectors; no reference with our arity: %s' % (
            count, ' '.join(missing) or 'none'))
    finally:
        r88.close()


@test
def movablekeys_for_numkeys_commands(t):
    """COMMAND INFO says movablekeys for every command whose keys follow a
    numkeys argument or a keyword, as Redis does."""
    for e in t.sut.call('COMMAND', 'INFO', *MOVABLE, 'msetex'):
        assert b'movablekeys' in e[2], (e[0], e[2])
    for e in t.sut.call('COMMAND', 'INFO', 'get', 'mset', 'rename', 'blpop'):
        assert b'movablekeys' not in e[2], (e[0], e[2])
    t.compare([('COMMAND', 'INFO') + tuple(MOVABLE)])
