# SPDX-License-Identifier: GPL-2.0-only
"""Vector sets (VADD, VSIM, ...) against Redis 8.8. The reference
redis-server (7.0) has none, so the replies are compared with those
recorded from redis-server 8.8.0 (data/vset-redis-8.8.json, written by
tools/record-vset-redis.py): small sets of well-separated vectors, every
option, every error, RESP2 and RESP3. Each step's kind says what of the
reply is deterministic (the recorder's docstring lists them): most are
compared byte for byte; VRANDMEMBER by membership, VINFO without its random
fields, VLINKS by its layer 0. Skipped while xkvd has no VADD."""

import json
import os
import re

from harness import REPO, Skip, test, xkv_only

STEPS = os.path.join(REPO, 'tests', 'integration', 'data', 'vset-redis-8.8.json')
MAX_SHOWN = 25


def _node(raw, i):
    """(node, next): a leaf is its exact bytes, an aggregate is
    (header bytes, [children]); attribute (|) prefixes are kept in place."""
    j = raw.index(b'\r\n', i)
    kind, head = raw[i:i + 1], raw[i:j + 2]
    if kind in b'$!=':
        n = int(raw[i + 1:j])
        end = j + 2 if n < 0 else j + 2 + n + 2
        return raw[i:end], end
    if kind not in b'*~>%|':
        return head, j + 2
    n = int(raw[i + 1:j])
    k, kids = j + 2, []
    for _ in range(max(n, 0) * (2 if kind in b'%|' else 1)):
        kid, k = _node(raw, k)
        kids.append(kid)
    return (head, kids), k


def parse(raw):
    node, end = _node(raw, 0)
    assert end == len(raw), 'trailing bytes: %r' % raw
    return node


def pairs_of(node):
    head, kids = node
    return head[:1], sorted(zip(kids[::2], kids[1::2]))


def members(c, key):
    head, kids = parse(c.cmd('VRANGE', key, '-', '+'))
    return set(kids)


VINFO_RANDOM = re.compile(rb'(\+(?:max-level|vset-uid)\r\n):-?\d+\r\n')


def same(kind, args, want, got, c):
    """Whether got satisfies the recorded reply want for this kind."""
    if kind == 'exact':
        return want == got
    if kind == 'vinfo':
        return VINFO_RANDOM.sub(rb'\1:?\r\n', want) == VINFO_RANDOM.sub(rb'\1:?\r\n', got)
    if want[:1] in b'-$_' or got[:1] in b'-$_':
        if kind != 'member':
            return want == got
    if kind == 'member':
        return got[:1] == b'$' and parse(got) in members(c, args[1])
    w, g = parse(want), parse(got)
    if isinstance(w, bytes) or isinstance(g, bytes):
        return want == got
    if kind == 'sorted':
        return w[0] == g[0] and sorted(w[1]) == sorted(g[1])
    if kind == 'count':
        ok = w[0] == g[0] and set(g[1]) <= members(c, args[1])
        return ok and (int(args[2]) < 0 or len(set(g[1])) == len(g[1]))
    if kind == 'pairs':
        return pairs_of(w) == pairs_of(g) if w[0][:1] == b'%' else \
            w[0] == g[0] and sorted(zip(w[1][::2], w[1][1::2])) == \
            sorted(zip(g[1][::2], g[1][1::2]))
    if kind == 'vlinks':
        # the layers' count is random; layer 0 (the last) holds the same links
        if not g[1] or isinstance(g[1][-1], bytes):
            return False
        w0, g0 = w[1][-1], g[1][-1]
        if 'WITHSCORES' in [a.upper() for a in args]:
            if w0[0][:1] == b'%':
                return pairs_of(w0) == pairs_of(g0)
            return w0[0] == g0[0] and sorted(zip(w0[1][::2], w0[1][1::2])) == \
                sorted(zip(g0[1][::2], g0[1][1::2]))
        return w0[0] == g0[0] and sorted(w0[1]) == sorted(g0[1])
    raise AssertionError('unknown step kind %s' % kind)


@test
@xkv_only
def replies_match_redis_88(t):
    data = json.load(open(STEPS))
    steps = data['steps']
    with t.sut.client(2) as c2, t.sut.client(3) as c3:
        if c2.cmd('VADD').startswith(b'-ERR unknown command'):
            raise Skip('xkvd has no vector sets yet (VADD: unknown command)')
        bad = []
        for group, proto, kind, args, want in steps:
            args = [a.encode('latin-1') for a in args]
            c = c3 if proto == 3 else c2
            want = want.encode('latin-1')
            got = c.cmd(*args)
            if not same(kind, [a.decode('latin-1') for a in args], want, got, c):
                bad.append('%s RESP%d %s: %s\n  redis 8.8: %r\n  xkvd:      %r' % (
                    group, proto, kind, ' '.join(repr(a)[2:-1] for a in args)[:200],
                    want[:300], got[:300]))
    if bad:
        raise AssertionError('%d of %d steps differ from %s:\n%s%s' % (
            len(bad), len(steps), data['server'], '\n'.join(bad[:MAX_SHOWN]),
            '\n... %d more' % (len(bad) - MAX_SHOWN) if len(bad) > MAX_SHOWN else ''))
