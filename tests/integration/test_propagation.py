# SPDX-License-Identifier: GPL-2.0-only
"""The propagation stream (daemon/propagate.h): a randomized mixed workload of
every write command, from eight connections over both workers, runs on one
xkvd whose debugging consumer logs the stream (XKV_DEBUG_PROPAGATION_LOG);
the log is replayed into a second xkvd and the two keyspaces must be equal,
values, types and deadlines (absolute, so exactly).

Keys that expire during the run (v:*) only take writes that replace them
whole (SET ... PX, PSETEX, DEL): the replay runs later than the original,
and a replica applies its master's stream without expiring keys itself,
which xkvd has no mode for yet. Every other deadline is an hour away."""

import os
import random
import subprocess
import threading
import time

from harness import REDIS_CLI, HOST, Client, decode, encode, test, xkv_only

CONNECTIONS = 8
BATCHES = 130          # per connection
BATCH = 100            # commands per pipelined batch: 104,000 in all
HOUR_S, HOUR_MS = 3600, 3600 * 1000


def rnd_key(r, kind, n=12):
    return '%s:%d' % (kind, r.randrange(n))


def gen_command(r):
    """One random write (or a read that may expire keys), by family."""
    s, l, h, z, t, b = (rnd_key(r, k) for k in 'slhztb')
    s2, l2, z2, t2, b2 = (rnd_key(r, k) for k in 'slztb')
    v = rnd_key(r, 'v', 8)
    m = 'm%d' % r.randrange(8)
    f = 'f%d' % r.randrange(6)
    n = r.randrange(-3, 20)
    abs_ms = int(time.time() * 1000) + HOUR_MS + r.randrange(1000)
    choices = [
        # strings
        ('SET', s, n), ('SET', s, 'x%d' % n, 'EX', HOUR_S), ('SET', s, n, 'NX'),
        ('SET', s, n, 'XX', 'GET'), ('SET', s, n, 'KEEPTTL'), ('SET', s, n, 'PXAT', abs_ms),
        ('SETNX', s, n), ('SETEX', s, HOUR_S, n), ('PSETEX', s, HOUR_MS, n), ('GETSET', s, n),
        ('GETDEL', s), ('GETEX', s, 'PX', HOUR_MS), ('GETEX', s, 'PERSIST'),
        ('MSET', s, n, s2, n + 1), ('MSETNX', s, n, s2, n), ('APPEND', s, 'ab'),
        ('INCR', s), ('DECR', s), ('INCRBY', s, n), ('DECRBY', s, n),
        ('INCRBYFLOAT', s, '%d.25' % n), ('SETRANGE', s, r.randrange(4), 'zz'),
        ('DELEX', s, 'IFEQ', n), ('MSETEX', 2, s, n, s2, n, 'EX', HOUR_S),
        ('MSETEX', 1, s, n, 'NX', 'PX', HOUR_MS),
        # bitmaps
        ('SETBIT', b, r.randrange(64), r.randrange(2)), ('BITOP', 'OR', b, b2, b),
        ('BITFIELD', b, 'SET', 'u8', 0, n % 256, 'INCRBY', 'u8', 8, 3),
        # keyspace
        ('DEL', s, l), ('UNLINK', z, t), ('EXPIRE', s, HOUR_S), ('PEXPIRE', l, HOUR_MS),
        ('EXPIREAT', h, abs_ms // 1000), ('PEXPIREAT', z, abs_ms), ('EXPIRE', t, HOUR_S, 'NX'),
        ('EXPIRE', s, -1), ('PERSIST', s), ('RENAME', s, s2), ('RENAMENX', l, l2),
        ('COPY', s, s2, 'REPLACE'), ('COPY', z, z2, 'DB', 1), ('MOVE', t, 2),
        ('SWAPDB', 1, 2),
        # lists
        ('LPUSH', l, n, n + 1), ('RPUSH', l, n), ('LPUSHX', l, n), ('RPUSHX', l, n),
        ('LPOP', l), ('RPOP', l, 2), ('LSET', l, 0, n), ('LINSERT', l, 'BEFORE', n, 'i'),
        ('LREM', l, 1, n), ('LTRIM', l, 0, 5), ('LMOVE', l, l2, 'LEFT', 'RIGHT'),
        ('RPOPLPUSH', l, l2), ('LMPOP', 2, l, l2, 'RIGHT', 'COUNT', 2),
        ('BLPOP', l, l2, '0.01'), ('BRPOP', l, '0.01'), ('BRPOPLPUSH', l, l2, '0.01'),
        ('BLMOVE', l, l2, 'RIGHT', 'LEFT', '0.01'), ('BLMPOP', '0.01', 1, l, 'LEFT'),
        ('SORT', l, 'ALPHA', 'STORE', l2),
        # hashes
        ('HSET', h, f, n, 'g', n), ('HSETNX', h, f, n), ('HMSET', h, f, n), ('HDEL', h, f),
        ('HINCRBY', h, f, n), ('HINCRBYFLOAT', h, f, '0.5'),
        ('HEXPIRE', h, HOUR_S, 'FIELDS', 1, f), ('HPEXPIRE', h, HOUR_MS, 'FIELDS', 1, f),
        ('HEXPIREAT', h, abs_ms // 1000, 'FIELDS', 1, f),
        ('HPEXPIREAT', h, abs_ms, 'FIELDS', 2, f, 'g'), ('HPERSIST', h, 'FIELDS', 1, f),
        ('HGETDEL', h, 'FIELDS', 1, f), ('HGETEX', h, 'EX', HOUR_S, 'FIELDS', 1, f),
        ('HSETEX', h, 'PX', HOUR_MS, 'FIELDS', 1, f, n), ('HSETEX', h, 'FNX', 'FIELDS', 1, f, n),
        # sets
        ('SADD', t, m, n), ('SREM', t, m), ('SMOVE', t, t2, m), ('SPOP', t), ('SPOP', t, 2),
        ('SINTERSTORE', t2, t, t2), ('SUNIONSTORE', t2, t, t2), ('SDIFFSTORE', t, t2, t),
        # sorted sets
        ('ZADD', z, n, m), ('ZADD', z, 'GT', 'CH', n, m), ('ZINCRBY', z, '1.5', m),
        ('ZREM', z, m), ('ZRANGESTORE', z2, z, 0, -1), ('ZREMRANGEBYRANK', z, 0, 0),
        ('ZREMRANGEBYSCORE', z, 0, 3), ('ZREMRANGEBYLEX', z, '-', '[m2'), ('ZPOPMIN', z),
        ('ZPOPMAX', z, 2), ('ZMPOP', 2, z, z2, 'MIN', 'COUNT', 2), ('BZPOPMIN', z, '0.01'),
        ('BZPOPMAX', z, z2, '0.01'), ('BZMPOP', '0.01', 1, z, 'MAX'),
        ('ZUNIONSTORE', z2, 2, z, z2), ('ZINTERSTORE', z2, 2, z, z2, 'WEIGHTS', 2, 3),
        ('ZDIFFSTORE', z, 2, z, z2),
        # keys that expire during the run, and reads that find them expired
        ('SET', v, n, 'PX', r.randrange(1, 150)), ('PSETEX', v, r.randrange(1, 150), n),
        ('DEL', v), ('GET', v), ('EXISTS', v),
    ]
    cmd = r.choice(choices)
    # A blocking pop on an empty list waits for the cron to time it out (a
    # tick): few of them, or the run is all waiting.
    while cmd[0].startswith('B') and cmd[0] not in ('BITOP', 'BITFIELD') and r.random() < 0.9:
        cmd = r.choice(choices)
    return cmd


def batch(r):
    out = []
    if r.random() < 0.05:
        out.append(('SELECT', 1))
    for _ in range(BATCH - len(out) - 1):
        if r.random() < 0.01:
            out += [('MULTI',), gen_command(r), gen_command(r), ('EXEC',)]
        elif r.random() < 0.0005:
            out.append(('FLUSHDB',))
        else:
            out.append(gen_command(r))
    out.append(('SELECT', 0))
    return out[:BATCH + 3]


def drive(port, seed, counts, errors):
    r = random.Random(seed)
    try:
        with Client(port, timeout=30) as c:
            for _ in range(BATCHES):
                cmds = batch(r)
                c.send_raw(b''.join(encode(a) for a in cmds))
                c.read_replies(len(cmds))
                counts[seed] = counts.get(seed, 0) + len(cmds)
    except Exception as e:  # noqa: BLE001 - reported by the test
        errors.append(repr(e))


def dump(port):
    """Every live key of every database: type, value, deadline."""
    state = {}
    with Client(port, timeout=30) as c:
        for db in range(16):
            c.call('SELECT', db)
            cursor, keys = b'0', set()
            while True:
                cursor, batch_keys = c.call('SCAN', cursor, 'COUNT', 1000)
                keys.update(batch_keys)
                if cursor == b'0':
                    break
            for k in sorted(keys):
                kind = c.call('TYPE', k)
                if kind == b'none':
                    continue
                if kind == b'string':
                    val = c.call('GET', k)
                elif kind == b'list':
                    val = c.call('LRANGE', k, 0, -1)
                elif kind == b'set':
                    val = sorted(c.call('SMEMBERS', k))
                elif kind == b'zset':
                    val = c.call('ZRANGE', k, 0, -1, 'WITHSCORES')
                else:
                    flat = c.call('HGETALL', k)
                    fields = sorted(zip(flat[::2], flat[1::2]))
                    ttls = c.call('HPEXPIRETIME', k, 'FIELDS', len(fields),
                                  *[fl for fl, _ in fields])
                    val = list(zip(fields, ttls))
                state[(db, k)] = (kind, val, c.call('PEXPIRETIME', k))
    return state


@test
@xkv_only
def replayed_stream_equals_the_store(t):
    log = os.path.join(t.sut.dir, 'propagation-%d.log' % os.getpid())
    os.environ['XKV_DEBUG_PROPAGATION_LOG'] = log
    try:
        a = t.spawn('sut')
    finally:
        del os.environ['XKV_DEBUG_PROPAGATION_LOG']
    counts, errors = {}, []
    threads = [threading.Thread(target=drive, args=(a.port, seed, counts, errors))
               for seed in range(CONNECTIONS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(300)
    assert not errors, errors
    total = sum(counts.values())
    assert total >= 100000, total
    time.sleep(0.3)            # every v:* deadline has passed
    want = dump(a.port)
    a.stop()                   # the log is flushed at exit
    with open(log, 'rb') as fh:
        stream = fh.read()
    b = t.spawn('sut')
    p = subprocess.run([REDIS_CLI, '-h', HOST, '-p', str(b.port), '--pipe'], input=stream,
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stdout[-500:] + p.stderr[-500:]
    got = dump(b.port)
    diff = sorted(set(map(repr, want.items())) ^ set(map(repr, got.items())))
    nstream = stream.count(b'\r\n*') + 1
    print('# %d commands sent, %d in the stream, %d keys, %d differences' % (
        total, nstream, len(want), len(diff)))
    assert want == got, 'first differences: %r' % diff[:6]
    assert len(want) > 50, len(want)
