# SPDX-License-Identifier: GPL-2.0-only
"""Scripts under narrower locks (docs/architecture.md, "Narrower script locks"): many
clients on both workers run scripts that declare one key of a pair and reach the other
undeclared (before their first write, so a run may be aborted and redone with every
shard, and after it, so a run escalates), alongside MULTI/EXEC, multi-key reads, plain
INCRs and blocking pops. Every atomic read must see both keys of a pair equal, every
counter must sum exactly, and nothing may hang (threads still running after their
bound fail the test). Run on the reference too: both must give the same outcome."""

import random
import time
import threading

from harness import Client, decode, encode, test

PAIRS = 6
THREADS = 10
ROUNDS = 150


def pair(p):
    return 'p%da' % p, 'p%db' % p


# Declares a, writes it, then reaches b undeclared: an escalation after an effect.
# The loops hold the declared shard a while, so that other clients wait for it
# holding the other one.
AFTER_EFFECT = ("redis.call('INCR', KEYS[1]) for i = 1, 3000 do end "
                "redis.call('INCR', ARGV[1]) return 1 -- %s")
# Declares b, reads a undeclared before writing anything: aborted and redone if a's
# shard is taken, else it holds it from then on.
BEFORE_EFFECT = ("for i = 1, 3000 do end local v = redis.call('GET', ARGV[1]) redis.call('INCR', ARGV[1]) "
                 "redis.call('INCR', KEYS[1]) return v -- %s")
# Numkeys 0: both reached undeclared, the first before any effect.
NONE_DECLARED = ("redis.call('INCR', ARGV[1]) for i = 1, 3000 do end "
                 "redis.call('INCR', ARGV[2]) return 1 -- %s")
# Numkeys 0, a first effect with no key (aborted, then every shard).
PUBLISH_FIRST = ("redis.call('PUBLISH', 'ch', 'x') redis.call('INCR', ARGV[1]) "
                 "redis.call('INCR', ARGV[2]) return 1 -- %s")
# Declares both.
DECLARED = "redis.call('INCR', KEYS[1]) redis.call('INCR', KEYS[2]) return 1"
# Reads a declared and b undeclared, as one atomic view.
READ_ONE = "return {redis.call('GET', KEYS[1]), redis.call('GET', ARGV[1])} -- %s"
# Numkeys 0: every shard.
READ_NONE = "return {redis.call('GET', ARGV[1]), redis.call('GET', ARGV[2])}"
PUSH = "redis.call('RPUSH', KEYS[1], ARGV[1]) redis.call('INCR', 'pushed') return 1 -- %s"
# The same as functions: FCALL has the same lock scope as EVAL.
LIBRARY = """#!lua name=locks
redis.register_function('after_effect', function(keys, args)
  redis.call('INCR', keys[1]) for i = 1, 3000 do end redis.call('INCR', args[1]) return 1
end)
redis.register_function('before_effect', function(keys, args)
  local v = redis.call('GET', args[1]) redis.call('INCR', args[1]) redis.call('INCR', keys[1])
  return v
end)
"""


def run_threads(n, target, bound=300):
    errors = []

    def wrap(i):
        try:
            target(i)
        except Exception as e:          # reported below
            errors.append('thread %d: %r' % (i, e))
    threads = [threading.Thread(target=wrap, args=(i,), daemon=True) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(bound)
    assert not any(th.is_alive() for th in threads), 'hung: threads still running'
    assert not errors, errors[:5]


def as_int(v):
    return int(v) if v is not None else 0


def workload(srv, seed):
    """Returns (violations, pair counts as expected, pushes accounted)."""
    with Client(srv.port) as c:
        c.cmd('FLUSHALL')
        c.cmd('SCRIPT', 'FLUSH')
        c.cmd('FUNCTION', 'FLUSH')
        assert c.cmd('FUNCTION', 'LOAD', LIBRARY) == b'$5\r\nlocks\r\n'
        sha = c.call('SCRIPT', 'LOAD', DECLARED).decode()
    writes = [[0] * PAIRS for _ in range(THREADS)]
    bad = []
    pops = [0] * THREADS

    def worker(i):
        rnd = random.Random(seed * 1000 + i)
        with Client(srv.port, timeout=60) as c:
            for n in range(ROUNDS):
                p = rnd.randrange(PAIRS)
                a, b = pair(p)
                tag = '%d.%d.%d' % (seed, i, n)
                kind = rnd.randrange(15)
                if kind == 0:
                    r = c.cmd('EVAL', AFTER_EFFECT % tag, 1, a, b)
                elif kind == 1:
                    r = c.cmd('EVAL', BEFORE_EFFECT % tag, 1, b, a)
                elif kind == 2:
                    r = c.cmd('EVALSHA', sha, 2, a, b)
                elif kind == 3:
                    c.send_raw(encode(('MULTI',)) + encode(('INCR', a)) +
                               encode(('EVAL', AFTER_EFFECT % ('m' + tag), 1, 'none', b)) +
                               encode(('DECR', 'none')) + encode(('EXEC',)))
                    r = c.read_replies(5)
                    assert b'*3\r\n' in r and b'-' not in r, r
                elif kind == 10:
                    # Pipelined new scripts (each a first run, with narrower
                    # locks), half of them declaring b and reaching a.
                    n = 25
                    c.send_raw(b''.join(
                        encode(('EVAL', AFTER_EFFECT % ('%s.%d' % (tag, j)), 1,
                                *((a, b) if j % 2 else (b, a)))) for j in range(n)))
                    r = c.read_replies(n)
                    assert r == b':1\r\n' * n, r
                    writes[i][p] += n
                    continue
                elif kind == 11:
                    r = c.cmd('FCALL', 'after_effect', 1, *((a, b) if n % 2 else (b, a)))
                elif kind == 12:
                    r = c.cmd('FCALL', 'before_effect', 1, b, a)
                elif kind == 13:
                    r = c.cmd('EVAL', NONE_DECLARED % tag, 0, *((a, b) if n % 2 else (b, a)))
                elif kind == 14:
                    r = c.cmd('EVAL', PUBLISH_FIRST % tag, 0, a, b)
                elif kind == 9:
                    # Pipelined transactions that take b then a or a then b.
                    n = 10
                    c.send_raw((encode(('MULTI',)) + encode(('INCR', b)) +
                                encode(('INCR', a)) + encode(('EXEC',))) * n)
                    r = c.read_replies(4 * n)
                    assert b'-' not in r, r
                    writes[i][p] += n
                    continue
                elif kind == 4:
                    # Pipelined: the server holds both shards back to back.
                    c.send_raw(encode(('MGET', a, b)) * 20)
                    for _ in range(20):
                        got = decode(c.read_reply())
                        if as_int(got[0]) != as_int(got[1]):
                            bad.append(('MGET', got))
                    continue
                elif kind == 5:
                    got = c.call('EVAL', READ_ONE % tag, 1, a, b)
                    if as_int(got[0] if got else None) != as_int(got[1] if len(got) > 1 else None):
                        bad.append(('READ_ONE', got))
                    continue
                elif kind == 6:
                    got = c.call('EVAL', READ_NONE, 0, a, b)
                    if as_int(got[0] if got else None) != as_int(got[1] if len(got) > 1 else None):
                        bad.append(('READ_NONE', got))
                    continue
                elif kind == 7:
                    r = c.cmd('EVAL', PUSH % tag, 1, 'q', i)
                    assert r == b':1\r\n', r
                    continue
                elif kind == 8:
                    got = c.call('BLPOP', 'q', '0.01')
                    if got:
                        pops[i] += 1
                    continue
                if kind != 3:
                    assert not r.startswith(b'-'), r
                writes[i][p] += 1

    run_threads(THREADS, worker)
    with Client(srv.port) as c:
        want = [sum(w[p] for w in writes) for p in range(PAIRS)]
        seen = [(as_int(c.call('GET', pair(p)[0])), as_int(c.call('GET', pair(p)[1])))
                for p in range(PAIRS)]
        pushed = as_int(c.call('GET', 'pushed'))
        left = c.call('LLEN', 'q')
        none = as_int(c.call('GET', 'none'))
    return (bad[:5], seen == [(w, w) for w in want] or (seen, want),
            pushed == sum(pops) + left or (pushed, sum(pops), left), none)


@test
def scripts_serialisable_with_partial_locks(t):
    for seed in (1, 2):
        t.same(lambda srv: workload(srv, seed), 'workload %d outcome' % seed)


@test
def script_undeclared_keys_replies(t):
    """Replies of scripts that reach undeclared keys, other databases and the whole
    keyspace, declared or not: as Redis gives them."""
    def flow(srv):
        out = []
        with Client(srv.port) as c:
            c.cmd('FLUSHALL')
            for body, keys in [
                    ("redis.call('SET', KEYS[1], 'v') return redis.call('GET', KEYS[1])", ['k']),
                    ("return redis.call('INCR', 'undeclared')", ['k']),
                    ("return redis.call('INCR', 'undeclared')", ['k']),
                    ("redis.call('SET', KEYS[1], 'x') return redis.call('INCR', 'u2')", ['k']),
                    ("return redis.call('INCR', 'u3')", []),
                    ("local r = redis.call('KEYS', '*') table.sort(r) return r", ['k']),
                    ("redis.call('SELECT', 3) redis.call('SET', 'z', 1) "
                     "return redis.call('DBSIZE')", ['k']),
                    ("return {pcall(redis.call, 'GET', 'qq')}", ['k']),
                    ("redis.call('SET', KEYS[1], 1) redis.call('FLUSHALL') "
                     "return redis.call('DBSIZE')", ['k']),
                    ("return redis.call('MSET', 'a', 1, 'b', 2, 'c', 3)", ['a']),
                    ("return redis.call('MGET', 'a', 'b', 'c', KEYS[1])", ['c']),
            ]:
                out.append(c.cmd('EVAL', body, len(keys), *keys))
                out.append(c.cmd('EVALSHA', c.call('SCRIPT', 'LOAD', body), len(keys), *keys))
            out.append(c.cmd('DBSIZE'))
            out.append(c.cmd('SELECT', 3))
            out.append(c.cmd('DBSIZE'))
        return out
    t.same(flow, 'replies')


@test
def undeclared_shard_held_by_a_transaction(t):
    """A transaction holds x's shard (DEBUG SLEEP inside it) while scripts that declare
    k reach x: before their first write (aborted, rerun with every shard: also from a
    pcall and a coroutine, which must not keep the aborted run going) and after it
    (they wait). Each must see the transaction whole, as Redis's one thread does. The
    pause only makes the overlap likely; the outcome is the same without it."""
    bodies = [
        "local ok, v = pcall(redis.call, 'GET', 'x') return {tostring(ok), v}",
        "local co = coroutine.create(function() return redis.call('GET', 'x') end) "
        "local ok, v = coroutine.resume(co) redis.call('INCR', KEYS[1]) return {tostring(ok), v}",
        "redis.call('INCR', KEYS[1]) return redis.call('GET', 'x')",
        "redis.call('INCR', KEYS[1]) return redis.call('INCR', 'x')",
    ]

    def flow(srv):
        out = []
        with Client(srv.port) as c, Client(srv.port, timeout=30) as tx:
            for i, body in enumerate(bodies):
                c.cmd('DEL', 'x', 'k')
                tx.send_raw(encode(('MULTI',)) + encode(('SET', 'x', '1')) +
                            encode(('DEBUG', 'SLEEP', '0.3')) + encode(('EXEC',)))
                out.append(tx.read_replies(3))
                time.sleep(0.1)
                out.append(c.cmd('EVAL', body + ' -- %d' % i, 1, 'k'))
                out.append(tx.read_reply())
                out.append(c.cmd('MGET', 'k', 'x'))
        return out
    t.same(flow, 'replies')
