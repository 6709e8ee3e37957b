# SPDX-License-Identifier: GPL-2.0-only
"""COMMAND DOCS against Redis 8.8 (built in /work/peers, or XKV_REDIS_88):
every command and subcommand xkvd has answers byte for byte as Redis 8.8 does,
in RESP2 and RESP3 (summary, since, group, complexity, doc flags, history and
the full argument tree redis-cli builds its hints from). A container's
subcommands are xkvd's own and come in another order (Redis's is its dict's),
so a container is compared subcommand by subcommand. Without Redis 8.8 only
the shape is checked."""

import os

from harness import Client, Server, decode, pairs, test, xkv_only

REDIS_88 = os.environ.get('XKV_REDIS_88',
                          '/work/peers/redis-8.8.0/src/redis-server')

# Ours alone: described from the command table.
OURS_ONLY = {'fastpath', 'fastpath|attach', 'fastpath|detach', 'fastpath|stats',
             'vsim.createindex', 'vsim.search', 'vsim.set'}


def names(port):
    with Client(port) as c:
        return sorted(n.decode() for n in c.call('COMMAND', 'LIST'))


def containers(port):
    with Client(port) as c:
        return {e[0].decode() for e in c.call('COMMAND') if e[9]}


@test
@xkv_only
def command_docs_shape(t):
    with t.sut.client() as c:
        d = pairs(c.call('COMMAND', 'DOCS', 'set')[1])
        assert d[b'group'] == b'string' and d[b'complexity'] == b'O(1)', d
        assert b'arity' not in d, d
        args = [pairs(a) for a in d[b'arguments']]
        assert [a[b'name'] for a in args[:2]] == [b'key', b'value'], args
        assert args[0][b'key_spec_index'] == 0, args[0]
        cond = args[2]
        assert cond[b'type'] == b'oneof' and b'display_text' not in cond, cond
        assert decode(c.cmd('COMMAND', 'DOCS', 'nosuch')) == [], 'unknown name'
        # A subcommand by its full name, and inside its container.
        sub = c.call('COMMAND', 'DOCS', 'config|get')
        assert sub[0] == b'config|get', sub
        cont = pairs(pairs(c.call('COMMAND', 'DOCS', 'config')[1])[b'subcommands'])
        assert b'config|get' in cont, cont.keys()
        # FASTPATH has no Redis row: the table's summary, since and group.
        fp = pairs(c.call('COMMAND', 'DOCS', 'fastpath|stats')[1])
        assert set(fp) == {b'summary', b'since', b'group'}, fp


@test
@xkv_only
def command_docs_equal_redis_88(t):
    if not os.access(REDIS_88, os.X_OK):
        print('# Redis 8.8 not built: COMMAND DOCS not compared')
        return
    r88 = Server('redis', redis_binary=REDIS_88, label='redis-8.8').start()
    try:
        ours = names(t.sut.port)
        boxes = containers(t.sut.port)
        compared = 0
        for proto in (2, 3):
            with Client(t.sut.port, proto=proto) as a, Client(r88.port, proto=proto) as b:
                for name in ours:
                    if name in OURS_ONLY:
                        continue
                    if name in boxes:
                        key = name.encode()
                        mine = pairs(pairs(a.call('COMMAND', 'DOCS', name))[key])
                        theirs = pairs(pairs(b.call('COMMAND', 'DOCS', name))[key])
                        subs = pairs(mine.pop(b'subcommands'))
                        ref_subs = pairs(theirs.pop(b'subcommands'))
                        assert mine == theirs, (proto, name, mine, theirs)
                        for sub, doc in subs.items():
                            if sub.decode() not in OURS_ONLY:
                                assert doc == ref_subs[sub], (proto, sub, doc, ref_subs[sub])
                    else:
                        mine = a.cmd('COMMAND', 'DOCS', name)
                        theirs = b.cmd('COMMAND', 'DOCS', name)
                        assert mine == theirs, (proto, name, mine[:400], theirs[:400])
                    compared += 1
        assert compared > 400, compared
        print('# COMMAND DOCS equal to Redis 8.8 for %d commands (RESP2 and RESP3)' %
              (compared // 2))
    finally:
        r88.close()
