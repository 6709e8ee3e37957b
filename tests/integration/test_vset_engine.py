# SPDX-License-Identifier: GPL-2.0-only
"""Vector sets beyond the recorded Redis replies (test_vset.py): recall of
the graph against TRUTH, two connections loading one set while a third
searches it, DEL under running searches, the graph kept whole through DUMP /
RESTORE, DEBUG RELOAD and COPY, MULTI, the absence of keyspace events, and
the VSIM.* front end (docs/vectors.md) with its L2 and IP metrics."""

import random
import struct
import threading

from harness import RespError, test, xkv_only

DIM = 16


def blob(v):
    return struct.pack('<%df' % len(v), *v)


def rand_vec(rng, dim=DIM):
    return [rng.uniform(-1, 1) for _ in range(dim)]


def load(c, key, rng, n, start=0, extra=()):
    for i in range(start, start + n):
        c.send('VADD', key, 'FP32', blob(rand_vec(rng)), 'e%d' % i, *extra)
    for _ in range(n):
        r = c.read_reply()
        assert r == b':1\r\n', r


@test
@xkv_only
def vset_recall_against_truth(t):
    rng = random.Random(7)
    with t.sut.client() as c:
        c.call('DEL', 'rv')
        load(c, 'rv', rng, 1500, extra=('NOQUANT',))
        hit = total = 0
        for _ in range(50):
            q = blob(rand_vec(rng))
            got = c.call('VSIM', 'rv', 'FP32', q, 'COUNT', 10, 'EF', 100)
            want = c.call('VSIM', 'rv', 'FP32', q, 'COUNT', 10, 'TRUTH')
            hit += len(set(got) & set(want))
            total += len(want)
        assert hit / total >= 0.95, 'recall@10 %.3f' % (hit / total)
        # 30% deleted: recall holds.
        for i in range(0, 1500, 3):
            assert c.call('VREM', 'rv', 'e%d' % i) == 1
        hit = total = 0
        for _ in range(50):
            q = blob(rand_vec(rng))
            got = c.call('VSIM', 'rv', 'FP32', q, 'COUNT', 10, 'EF', 100)
            want = c.call('VSIM', 'rv', 'FP32', q, 'COUNT', 10, 'TRUTH')
            hit += len(set(got) & set(want))
            total += len(want)
        assert hit / total >= 0.95, 'recall@10 after deletes %.3f' % (hit / total)
        assert c.call('VCARD', 'rv') == 1000
        c.call('DEL', 'rv')


@test
@xkv_only
def vset_parallel_load_and_search(t):
    """Two loaders on one set and a searcher: every VADD acknowledged, the
    count exact, and each search answers COUNT names from the set."""
    with t.sut.client() as c:
        c.call('DEL', 'pl')
        load(c, 'pl', random.Random(1), 50)
    errors = []

    def loader(k):
        try:
            with t.sut.client() as c:
                load(c, 'pl', random.Random(10 + k), 600, start=1000 * (k + 1))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def searcher():
        try:
            rng = random.Random(3)
            with t.sut.client() as c:
                for _ in range(200):
                    r = c.call('VSIM', 'pl', 'FP32', blob(rand_vec(rng)), 'COUNT', 5)
                    assert len(r) == 5 and all(x.startswith(b'e') for x in r), r
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    th = [threading.Thread(target=loader, args=(k,)) for k in range(2)]
    th.append(threading.Thread(target=searcher))
    for x in th:
        x.start()
    for x in th:
        x.join(60)
    assert not errors, errors
    with t.sut.client() as c:
        assert c.call('VCARD', 'pl') == 1250
        assert c.call('VISMEMBER', 'pl', 'e1599') == 1
        c.call('DEL', 'pl')


@test
@xkv_only
def vset_del_during_searches(t):
    with t.sut.client() as c:
        rng = random.Random(5)
        errors = []

        def searcher():
            try:
                rng2 = random.Random(9)
                with t.sut.client() as s:
                    for _ in range(300):
                        r = s.call('VSIM', 'ds', 'FP32', blob(rand_vec(rng2)), 'COUNT', 3)
                        assert isinstance(r, list), r
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        for _ in range(5):
            load(c, 'ds', rng, 200)
            th = threading.Thread(target=searcher)
            th.start()
            c.call('DEL', 'ds')
            load(c, 'ds', rng, 100)
            th.join(60)
            c.call('DEL', 'ds')
        assert not errors, errors
        assert c.call('PING') == b'PONG'


def graph(c, key):
    names = c.call('VRANGE', key, '-', '+')
    return {n: (c.call('VEMB', key, n, 'RAW'), sorted(c.call('VLINKS', key, n)[-1]),
                c.call('VGETATTR', key, n)) for n in names}


@test
@xkv_only
def vset_graph_survives_dump_reload_copy(t):
    rng = random.Random(11)
    with t.sut.client() as c:
        c.call('DEL', 'gk', 'gk2', 'gk3')
        for quant in ('NOQUANT', 'Q8', 'BIN'):
            c.call('DEL', 'gk')
            for i in range(120):
                attr = ('SETATTR', '{"i":%d}' % i) if i % 3 else ()
                assert c.call('VADD', 'gk', 'FP32', blob(rand_vec(rng)), 'e%d' % i, quant,
                              *attr) == 1
            before = graph(c, 'gk')
            info = c.call('VINFO', 'gk')
            q = blob(rand_vec(rng))
            sim = c.call('VSIM', 'gk', 'FP32', q, 'WITHSCORES', 'COUNT', 7)
            dump = c.call('DUMP', 'gk')
            assert c.call('RESTORE', 'gk2', 0, dump, 'REPLACE') == b'OK'
            assert c.call('COPY', 'gk', 'gk3', 'REPLACE') == 1
            assert c.call('DEBUG', 'RELOAD') == b'OK'
            for k in ('gk', 'gk2', 'gk3'):
                assert graph(c, k) == before, (quant, k)
                assert c.call('VSIM', k, 'FP32', q, 'WITHSCORES', 'COUNT', 7) == sim
            assert pairs_no_uid(c.call('VINFO', 'gk')) == pairs_no_uid(info)
        c.call('DEL', 'gk', 'gk2', 'gk3')


def pairs_no_uid(v):
    d = dict(zip(v[::2], v[1::2]))
    d.pop(b'vset-uid', None)
    return d


@test
@xkv_only
def vset_multi_and_no_events(t):
    with t.sut.client() as c, t.sut.client() as sub:
        c.call('DEL', 'mk')
        c.call('CONFIG', 'SET', 'notify-keyspace-events', 'KEA')
        sub.call('PSUBSCRIBE', '__key*__:mk')
        assert c.call('MULTI') == b'OK'
        c.call('VADD', 'mk', 'VALUES', 2, 1, 0, 'a')
        c.call('VADD', 'mk', 'VALUES', 2, 0, 1, 'b')
        c.call('VSIM', 'mk', 'VALUES', 2, 1, 0.1)
        assert c.call('EXEC') == [1, 1, [b'a', b'b']]
        c.call('VREM', 'mk', 'a')
        c.call('VREM', 'mk', 'b')
        assert c.call('EXISTS', 'mk') == 0
        c.call('SET', 'mk', 'x')
        # The first event the subscriber sees is SET's: V* published none.
        msg = sub.call('PING')
        assert msg[0] == b'pmessage' and msg[3] == b'set', msg
        c.call('CONFIG', 'SET', 'notify-keyspace-events', '')
        c.call('DEL', 'mk')


@test
@xkv_only
def vsim_front_end(t):
    with t.sut.client() as c:
        c.call('DEL', 'fx', 'fi', 'fc')
        assert c.call('VSIM.CREATEINDEX', 'fx', 'DIM', 2, 'METRIC', 'L2', 'M', 8,
                      'EF_CONSTRUCTION', 50) == b'OK'
        err = c.call('VSIM.CREATEINDEX', 'fx', 'DIM', 2)
        assert isinstance(err, RespError) and str(err) == 'ERR index already exists'
        err = c.call('VSIM.CREATEINDEX', 'fi', 'DIM', 2, 'METRIC', 'IP', 'TYPE', 'INT8')
        assert str(err) == 'ERR METRIC L2 and IP need TYPE FLOAT32'
        assert str(c.call('VSIM.CREATEINDEX', 'fi', 'METRIC', 'L2')) == 'ERR DIM is required'
        assert c.call('TYPE', 'fx') == b'vectorset' and c.call('VCARD', 'fx') == 0
        for i in range(20):
            assert c.call('VSIM.SET', 'fx', 'p%d' % i, 'FP32', blob([i, 0]), 'ATTR',
                          '{"i":%d}' % i) == 1
        assert c.call('VSIM.SET', 'fx', 'p3', 'FP32', blob([3, 1])) == 0
        assert c.call('VGETATTR', 'fx', 'p3') == b'{"i":3}'
        assert str(c.call('VSIM.SET', 'nx', 'a', 'FP32', blob([1, 1]))) == 'ERR no such index'
        assert str(c.call('VSIM.SET', 'fx', 'a', 'FP32', blob([1, 1, 1]))) == \
            'ERR Vector dimension mismatch - got 3 but set has 2'
        r = c.call('VSIM.SEARCH', 'fx', 'FP32', blob([2.25, 0]), 'K', 3, 'WITHSCORES')
        assert r[0::2] == [b'p2', b'p1', b'p3'], r
        assert [round(float(x), 4) for x in r[1::2]] == [0.0625, 1.5625, 1.5625], r
        r = c.call('VSIM.SEARCH', 'fx', 'FP32', blob([2.25, 0]), 'K', 2, 'FILTER', '.i >= 10')
        assert r == [b'p10', b'p11'], r
        assert c.call('VSIM.SEARCH', 'nx', 'FP32', blob([1, 0]), 'K', 2) == []
        assert str(c.call('VSIM.SEARCH', 'fx', 'FP32', blob([1, 0]), 'K', 0)) == 'ERR invalid K'
        assert c.call('VSIM.CREATEINDEX', 'fi', 'DIM', 2, 'METRIC', 'IP') == b'OK'
        for n, v in (('a', [1, 0]), ('b', [3, 0]), ('c', [0, 5])):
            c.call('VSIM.SET', 'fi', n, 'FP32', blob(v))
        ip = c.call('VSIM.SEARCH', 'fi', 'FP32', blob([1, 0]), 'K', 3, 'WITHSCORES')
        assert ip == [b'b', b'-2', b'a', b'0', b'c', b'1'], ip
        c.call('VSIM.CREATEINDEX', 'fc', 'DIM', 2)
        c.call('VSIM.SET', 'fc', 'x', 'FP32', blob([1, 0]))
        c.call('VSIM.SET', 'fc', 'y', 'FP32', blob([0, 1]))
        assert c.call('VSIM.SEARCH', 'fc', 'FP32', blob([1, 0]), 'K', 2, 'WITHSCORES') == \
            [b'x', b'0', b'y', b'1']
        # The metric and EF_CONSTRUCTION survive a reload.
        assert c.call('DEBUG', 'RELOAD') == b'OK'
        assert c.call('VSIM.SEARCH', 'fi', 'FP32', blob([1, 0]), 'K', 3, 'WITHSCORES') == ip
        r = c.call('VSIM.SEARCH', 'fx', 'FP32', blob([2.25, 0]), 'K', 1, 'WITHSCORES')
        assert r == [b'p2', b'0.0625'], r
        c.call('DEL', 'fx', 'fi', 'fc')


def _vrange_want(names, lo, hi, count):
    out = []
    for n in sorted(names):
        if lo != '-' and (n < lo[1:].encode() or (lo[0] == '(' and n == lo[1:].encode())):
            continue
        if hi != '+' and (n > hi[1:].encode() or (hi[0] == '(' and n == hi[1:].encode())):
            break
        out.append(n)
        if len(out) == count:
            break
    return out


@test
@xkv_only
def vset_vrange_follows_changes(t):
    """VRANGE's sorted view is kept up to date by VADD / VREM (in pieces,
    folded, dropped after many changes without a VRANGE): every answer
    matches a model, across the fold (512 adds) and drop (4096) points."""
    rng = random.Random(16)
    alpha = 'ab~\x00'

    def name():
        return ''.join(rng.choice(alpha) for _ in range(rng.randint(1, 7)))

    def bound(first):
        r = rng.random()
        if r < 0.15:
            return '-' if first else '+'
        return rng.choice('[(') + name()

    have = set()
    with t.sut.client() as c:
        c.call('DEL', 'vr')
        for step in range(9000):
            quiet = 2000 <= step < 6700  # no VRANGE: the view is dropped
            r = rng.random()
            if r < 0.6 or not have:
                n = name()
                c.call('VADD', 'vr', 'VALUES', 2, rng.uniform(0.1, 1), 1, n, 'M', 4, 'EF', 8)
                have.add(n.encode())
            elif r < 0.85:
                n = rng.choice(sorted(have))
                assert c.call('VREM', 'vr', n) == 1
                have.discard(n)
            elif not quiet:
                lo, hi, cnt = bound(True), bound(False), rng.randint(1, 30)
                got = c.call('VRANGE', 'vr', lo, hi, cnt)
                assert got == _vrange_want(have, lo, hi, cnt), (step, lo, hi, cnt, got)
            if step % 1000 == 999:
                got = c.call('VRANGE', 'vr', '-', '+')
                assert got == sorted(have), step
        assert c.call('VCARD', 'vr') == len(have)
        c.call('DEL', 'vr')
