# SPDX-License-Identifier: GPL-2.0-only
"""Keyspace notifications (notify-keyspace-events): the directive's parsing
and canonical form, the exact stream of __keyspace@/__keyevent@ messages
every write command family sends (compared with redis-server), Redis 8's
commands against events recorded from redis-server 8.8.0, expiry and
eviction events, and per-key order across workers."""

import json
import os
import threading
import time

from harness import RespError, decode, test, xkv_only

PATTERN = '__key*__:*'
END = '__notify_end__'


class Subscriber:
    """A PSUBSCRIBE '__key*__:*' connection collecting (channel, message)."""

    def __init__(self, srv):
        self.c = srv.client(2)
        self.c.send('PSUBSCRIBE', PATTERN)
        assert decode(self.c.read_reply())[0] == b'psubscribe'

    def until(self, key, event='del'):
        """Every message up to the keyevent `event` of `key` (included),
        bounded by the socket timeout."""
        out = []
        while True:
            msg = decode(self.c.read_reply())
            assert msg[0] == b'pmessage', msg
            out.append((msg[2].decode(), msg[3].decode()))
            if out[-1] == ('__keyevent@0__:%s' % event, key):
                return out

    def close(self):
        self.c.close()


def stream(srv, classes, steps, pre=()):
    """Runs steps on srv with notify-keyspace-events `classes` and returns
    the messages a pattern subscriber received, up to a closing DEL."""
    with srv.client() as c:
        c.call('FLUSHALL')
        for step in pre:
            c.call(*step)
        assert c.call('CONFIG', 'SET', 'notify-keyspace-events', classes) == b'OK'
        sub = Subscriber(srv)
        try:
            for step in steps:
                if isinstance(step, float):
                    time.sleep(step)
                else:
                    c.call(*step)
            # The end: a message of its own, whatever the classes. A
            # PUBLISH follows the events before it, as in Redis.
            c.call('PUBLISH', '__keyevent@0__:del', END)
            got = sub.until(END)[:-1]
        finally:
            sub.close()
            c.call('CONFIG', 'SET', 'notify-keyspace-events', '')
    return got


# Every write command family Redis 7.0 has, with the flags that change
# which events are sent; each line a case Redis distinguishes.
FAMILIES = [
    # strings
    ('SET', 's', 'v'), ('SET', 's', 'v', 'NX'), ('SET', 's', 'w', 'XX'),
    ('SET', 'nx', 'v', 'XX'), ('SET', 's', 'v', 'EX', '100'), ('SET', 's', 'v', 'KEEPTTL'),
    ('SET', 's', 'x', 'GET'), ('SET', 's', 'y', 'PX', '100000', 'GET'),
    ('SETNX', 's', 'v'), ('SETNX', 's2', 'v'), ('SETEX', 's3', '100', 'v'),
    ('PSETEX', 's4', '100000', 'v'), ('GETSET', 's', 'z'), ('GETSET', 'gs', 'z'),
    ('GETDEL', 's2'), ('GETDEL', 'nosuch'),
    ('GETEX', 's3', 'EX', '50'), ('GETEX', 's3', 'PERSIST'), ('GETEX', 's3', 'PERSIST'),
    ('GETEX', 's3'), ('GETEX', 's4', 'PXAT', '1'),
    ('MSET', 'm1', '1', 'm2', '2'), ('MSETNX', 'm1', '1', 'm3', '3'),
    ('MSETNX', 'm4', '4', 'm5', '5'),
    ('APPEND', 'ap', 'x'), ('APPEND', 'ap', 'y'),
    ('INCR', 'n'), ('INCRBY', 'n', '5'), ('DECR', 'n'), ('DECRBY', 'n', '2'),
    ('INCR', 's'), ('INCRBYFLOAT', 'f', '1.5'), ('INCRBYFLOAT', 'f', '2'),
    ('SETRANGE', 'sr', '3', 'abc'), ('SETRANGE', 'sr', '0', 'x'), ('SETRANGE', 'sr', '0', ''),
    ('SETRANGE', 'sr2', '0', ''),
    # bits and HyperLogLog
    ('SETBIT', 'b', '7', '1'), ('SETBIT', 'b', '7', '1'), ('SETBIT', 'b', '7', '0'),
    ('SETBIT', 'b', '100', '0'),
    ('BITFIELD', 'bf', 'SET', 'u8', '0', '200'), ('BITFIELD', 'bf', 'INCRBY', 'u8', '0', '1'),
    ('BITFIELD', 'bf', 'GET', 'u8', '0'),
    ('BITOP', 'AND', 'bo', 'b', 'bf'), ('BITOP', 'OR', 'bo', 'none1', 'none2'),
    ('PFADD', 'h1', 'a', 'b'), ('PFADD', 'h1', 'a'), ('PFADD', 'h2', 'c'),
    ('PFMERGE', 'h3', 'h1', 'h2'), ('PFMERGE', 'h3'),
    # generic
    ('DEL', 'm1', 'm2', 'nosuch'), ('UNLINK', 'm3'),
    ('EXPIRE', 'm4', '100'), ('EXPIRE', 'm4', '100', 'NX'), ('EXPIRE', 'm4', '200', 'GT'),
    ('PEXPIRE', 'm4', '100000', 'LT'), ('EXPIREAT', 'm4', '99999999999'),
    ('PEXPIREAT', 'm4', '99999999999000', 'XX'), ('PERSIST', 'm4'), ('PERSIST', 'm4'),
    ('EXPIRE', 'm5', '0'), ('PEXPIRE', 'nosuch', '10'), ('EXPIREAT', 'ap', '1'),
    ('RENAME', 'n', 'n2'), ('RENAME', 'n2', 'n2'), ('RENAMENX', 'n2', 'f'),
    ('RENAMENX', 'n2', 'n3'), ('RENAME', 'n3', 'f'),
    ('COPY', 'f', 'fc'), ('COPY', 'f', 'fc'), ('COPY', 'f', 'fc', 'REPLACE'),
    ('COPY', 'f', 'fc', 'DB', '1'),
    ('MOVE', 'fc', '2'), ('MOVE', 'f', '1'),
    ('TOUCH', 'gs'), ('TYPE', 'gs'),
    # lists
    ('LPUSH', 'l', 'a', 'b', 'c'), ('RPUSH', 'l', 'd'), ('LPUSHX', 'l', 'e'),
    ('RPUSHX', 'nol', 'e'), ('LINSERT', 'l', 'BEFORE', 'a', 'z'),
    ('LINSERT', 'l', 'AFTER', 'nosuch', 'z'), ('LSET', 'l', '0', 'q'),
    ('LPOP', 'l'), ('RPOP', 'l', '2'), ('LREM', 'l', '1', 'z'), ('LREM', 'l', '0', 'nosuch'),
    ('LTRIM', 'l', '0', '0'), ('RPUSH', 'l', 'x', 'y'), ('LMOVE', 'l', 'l2', 'LEFT', 'RIGHT'),
    ('RPOPLPUSH', 'l', 'l2'), ('LMOVE', 'l2', 'l2', 'LEFT', 'LEFT'),
    ('LMPOP', '2', 'nol', 'l2', 'RIGHT', 'COUNT', '5'), ('RPUSH', 'l3', '1', '2'),
    ('BLPOP', 'nol', 'l3', '1'), ('BRPOP', 'l3', '1'), ('RPUSH', 'l4', 'v'),
    ('BLMOVE', 'l4', 'l5', 'RIGHT', 'LEFT', '1'), ('BLMPOP', '1', '1', 'l5', 'LEFT'),
    ('RPUSH', 'l6', 'a', 'b'), ('LTRIM', 'l6', '5', '10'),
    # hashes
    ('HSET', 'h', 'a', '1', 'b', '2'), ('HSET', 'h', 'a', '1'), ('HMSET', 'h', 'c', '3'),
    ('HSETNX', 'h', 'a', '9'), ('HSETNX', 'h', 'd', '4'), ('HDEL', 'h', 'nosuch'),
    ('HDEL', 'h', 'd', 'nosuch'), ('HINCRBY', 'h', 'n', '3'), ('HINCRBYFLOAT', 'h', 'f', '0.5'),
    ('HDEL', 'h', 'a', 'b', 'c', 'n', 'f'),
    # sets
    ('SADD', 'st', 'a', 'b', 'c'), ('SADD', 'st', 'a'), ('SREM', 'st', 'nosuch'),
    ('SREM', 'st', 'a'), ('SMOVE', 'st', 'st2', 'b'), ('SMOVE', 'st', 'st2', 'nosuch'),
    ('SMOVE', 'st', 'st2', 'c'), ('SADD', 'st2', 'x'), ('SPOP', 'st2'),
    ('SADD', 'sa', '1', '2', '3'), ('SADD', 'sb', '2', '3', '4'),
    ('SINTERSTORE', 'sd', 'sa', 'sb'), ('SUNIONSTORE', 'sd', 'sa', 'sb'),
    ('SDIFFSTORE', 'sd', 'sa', 'sb'), ('SINTERSTORE', 'sd', 'sa', 'nosuch'),
    ('SINTERSTORE', 'sd', 'sa', 'nosuch'), ('SPOP', 'sa', '10'), ('SPOP', 'sb', '0'),
    # sorted sets
    ('ZADD', 'z', '1', 'a', '2', 'b', '3', 'c'), ('ZADD', 'z', '1', 'a'),
    ('ZADD', 'z', 'NX', '5', 'a'), ('ZADD', 'z', 'XX', 'CH', '5', 'a'),
    ('ZADD', 'z', 'GT', '1', 'a'), ('ZADD', 'z', 'INCR', '1', 'b'),
    ('ZINCRBY', 'z', '2', 'c'), ('ZADD', 'noz', 'XX', '1', 'a'),
    ('ZREM', 'z', 'nosuch'), ('ZREM', 'z', 'a'),
    ('ZADD', 'z', '1', 'd', '2', 'e', '3', 'f', '4', 'g'),
    ('ZREMRANGEBYRANK', 'z', '0', '0'), ('ZREMRANGEBYSCORE', 'z', '2', '2'),
    ('ZREMRANGEBYLEX', 'z', '[x', '[y'), ('ZPOPMIN', 'z'), ('ZPOPMAX', 'z', '2'),
    ('ZADD', 'za', '1', 'a', '2', 'b'), ('ZADD', 'zb', '2', 'b', '3', 'c'),
    ('ZUNIONSTORE', 'zd', '2', 'za', 'zb'), ('ZINTERSTORE', 'zd', '2', 'za', 'zb'),
    ('ZDIFFSTORE', 'zd', '2', 'za', 'zb'), ('ZINTERSTORE', 'zd', '2', 'za', 'nosuch'),
    ('ZRANGESTORE', 'zr', 'zb', '0', '-1'), ('ZRANGESTORE', 'zr', 'zb', '5', '6'),
    ('ZMPOP', '1', 'za', 'MIN', 'COUNT', '5'), ('BZPOPMIN', 'zb', '1'),
    ('BZMPOP', '1', '1', 'zb', 'MAX'), ('ZADD', 'zc', '1', 'a', '2', 'b'),
    ('ZREMRANGEBYSCORE', 'zc', '-inf', '+inf'),
    # geo
    ('GEOADD', 'g', '13.361389', '38.115556', 'Palermo', '15.087269', '37.502669', 'Catania'),
    ('GEOADD', 'g', 'NX', '13.361389', '38.115556', 'Palermo'),
    ('GEORADIUS', 'g', '15', '37', '200', 'km', 'STORE', 'gr'),
    ('GEORADIUS', 'g', '15', '37', '200', 'km', 'STOREDIST', 'gr'),
    ('GEORADIUSBYMEMBER', 'g', 'Palermo', '1', 'km', 'STORE', 'gr'),
    ('GEOSEARCHSTORE', 'gs2', 'g', 'FROMLONLAT', '15', '37', 'BYRADIUS', '200', 'km'),
    ('GEOSEARCHSTORE', 'gs2', 'g', 'FROMLONLAT', '0', '0', 'BYRADIUS', '1', 'km'),
    ('GEORADIUS', 'nog', '15', '37', '200', 'km', 'STORE', 'gr'),
    # streams
    ('XADD', 'st', '1-1', 'a', '1'), ('XADD', 'st', 'MAXLEN', '1', '*', 'b', '2'),
    ('XADD', 'st', '1-0', 'x', 'y'), ('XTRIM', 'st', 'MAXLEN', '0'), ('XTRIM', 'st', 'MAXLEN', '0'),
    ('XADD', 'st2', '5-1', 'a', 'b'), ('XDEL', 'st2', '5-1'), ('XDEL', 'st2', '9-9'),
    ('XSETID', 'st2', '10-0'), ('XADD', 'st3', 'NOMKSTREAM', '*', 'a', 'b'),
    # sort
    ('RPUSH', 'sl', '3', '1', '2'), ('SORT', 'sl', 'STORE', 'sorted'),
    ('SORT', 'nosuch', 'STORE', 'sorted'),
    # transactions: the queued commands' events, in order
    ('MULTI',), ('SET', 'tx', '1'), ('INCR', 'tx'), ('DEL', 'tx'), ('EXEC',),
    # a database of its own
    ('SELECT', '3'), ('SET', 'd3', 'v'), ('DEL', 'd3'), ('SELECT', '0'),
    # expiry: a read and a write meeting an expired key (xkvd's active
    # expiry may get there first: one key at a time, the events are the same)
    ('SET', 'e1', 'v', 'PX', '1'), 0.05, ('GET', 'e1'),
    ('SET', 'e2', 'v', 'PX', '1'), 0.05, ('SET', 'e2', 'again'),
]


def run_families(srv, classes):
    # Active expiry would race with the lazy expiry the sequence relies on.
    srv.call('DEBUG', 'SET-ACTIVE-EXPIRE', '0') if srv.kind == 'redis' else None
    try:
        return stream(srv, classes, FAMILIES)
    finally:
        if srv.kind == 'redis':
            srv.call('DEBUG', 'SET-ACTIVE-EXPIRE', '1')


@test
def every_family_same_events(t):
    # KEA is everything Redis 7.0 sends; n (new keys) is outside A; each of
    # K and E alone; one class alone.
    for classes in ('KEA', 'KEAn', 'Kl', 'Eg$', 'Kx'):
        t.same(lambda srv: run_families(srv, classes), 'notifications for %s' % classes)


# Reads of missing keys (class m). The sources of a STORE are not among
# them: Redis 8 looks them up as writes, which report no miss (7.0 did).
MISSES = [
    ('GET', 'nosuch'), ('SET', 'k', 'v'), ('GET', 'k'), ('STRLEN', 'nosuch'),
    ('HGET', 'nosuch', 'f'), ('LRANGE', 'nosuch', '0', '-1'), ('SMEMBERS', 'nosuch'),
    ('ZRANGE', 'nosuch', '0', '-1'), ('MGET', 'k', 'nosuch'), ('EXISTS', 'nosuch'),
    ('GETDEL', 'nosuch'), ('TYPE', 'nosuch'),
]


@test
def keymiss_events(t):
    t.same(lambda srv: stream(srv, 'KEm', MISSES), 'keymiss notifications')


@test
def directive_parsing(t):
    def run(srv):
        out = []
        with srv.client() as c:
            for v in ('', 'K', 'E', 'KEA', 'AKE', 'gKE', 'g$lshzxeKE', 'A', 'Ag', 'KEAnm',
                      'KEA$$', 'lshzxetgK', 'mK', 'x', 'Kn', 'Q', 'KEAQ', 'kea', ' K'):
                # 7.0's error names fewer letters than 8.8's (below).
                out.append(c.cmd('CONFIG', 'SET', 'notify-keyspace-events', v)[:4])
                out.append(c.cmd('CONFIG', 'GET', 'notify-keyspace-events'))
            out.append(c.cmd('CONFIG', 'SET', 'notify-keyspace-events', ''))
        return out
    t.same(run, 'CONFIG SET/GET notify-keyspace-events')


# Letters Redis 8 added (o, c, a and the subkey kinds S, T, I, V), as
# redis-server 8.8.0 answered them: (value set, CONFIG GET after it).
BAD_CLASS = ("-ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - "
             "Invalid event class character. Use 'Ag$lshzxeKEtmdnocaSTIV'.")
REDIS8_DIRECTIVE = [
    ('KEAoc', 'AKE'), ('Aoc', 'A'), ('STIVK', 'KSTIV'), ('a', 'a'), ('gocK', 'gocK'),
    ('VITSmEK', 'KEmSTIV'), ('g$lshzxetdanocKEmSTIV', 'AKEmSTIV'), ('r', None),
    ('KEA\x00x', 'AKE'), ('Q', None),
]


@xkv_only
@test
def directive_redis8_letters(t):
    with t.sut.client() as c:
        last = None
        for value, shown in REDIS8_DIRECTIVE:
            reply = c.call('CONFIG', 'SET', 'notify-keyspace-events', value)
            if shown is None:
                assert reply == harness_error(BAD_CLASS), (value, reply)
            else:
                assert reply == b'OK', (value, reply)
                last = shown
            got = c.call('CONFIG', 'GET', 'notify-keyspace-events')[1].decode()
            assert got == last, (value, got, last)
        c.call('CONFIG', 'SET', 'notify-keyspace-events', '')


def harness_error(text):
    return RespError(text[1:])


@test
def off_by_default(t):
    def run(srv):
        with srv.client() as c:
            return c.call('CONFIG', 'GET', 'notify-keyspace-events')
    t.same(run, 'default')
    # Nothing is published with the classes off, even to a pattern that
    # matches: the next message the subscriber sees is a plain PUBLISH.
    with t.sut.client() as c:
        sub = Subscriber(t.sut)
        try:
            c.call('SET', 'quiet', '1')
            c.call('DEL', 'quiet')
            c.call('PUBLISH', '__keyevent@0__:del', 'marker')
            assert sub.until('marker') == [('__keyevent@0__:del', 'marker')]
        finally:
            sub.close()


@test
def active_expiry_events(t):
    def run(srv):
        with srv.client() as c:
            c.call('FLUSHALL')
            c.call('CONFIG', 'SET', 'notify-keyspace-events', 'KEx')
            sub = Subscriber(srv)
            try:
                c.call('SET', 'ax', 'v', 'PX', '20')
                # No command touches it: the server's cycle expires it.
                return sub.until('ax', 'expired')
            finally:
                sub.close()
                c.call('CONFIG', 'SET', 'notify-keyspace-events', '')
    t.same(run, 'active expiry')


# Redis 8's commands (HGETDEL, HGETEX, HSETEX, hash field expiry, DELEX,
# MSETEX, INCREX): the messages redis-server 8.8.0 sent for REDIS8 under
# KEA, recorded from /work/peers/redis-8.8.0/src/redis-server.
REDIS8 = [
    ('HSET', 'h', 'a', '1', 'b', '2', 'c', '3'),
    ('HGETDEL', 'h', 'FIELDS', '1', 'a'), ('HGETDEL', 'h', 'FIELDS', '1', 'nosuch'),
    ('HGETEX', 'h', 'EX', '100', 'FIELDS', '1', 'b'),
    ('HGETEX', 'h', 'PERSIST', 'FIELDS', '1', 'b'),
    ('HGETEX', 'h', 'PERSIST', 'FIELDS', '1', 'b'),
    ('HGETEX', 'h', 'FIELDS', '1', 'b'),
    ('HGETEX', 'h', 'PXAT', '1', 'FIELDS', '1', 'b'),
    ('HSETEX', 'h', 'EX', '100', 'FIELDS', '1', 'x', '1'),
    ('HSETEX', 'h', 'FIELDS', '1', 'y', '1'),
    ('HSETEX', 'h', 'KEEPTTL', 'FIELDS', '1', 'x', '2'),
    ('HSETEX', 'h', 'FNX', 'FIELDS', '1', 'x', '2'),
    ('HSETEX', 'h', 'PXAT', '1', 'FIELDS', '1', 'y', '1'),
    ('HEXPIRE', 'h', '100', 'FIELDS', '2', 'c', 'nosuch'),
    ('HEXPIRE', 'h', '100', 'NX', 'FIELDS', '1', 'c'),
    ('HPEXPIRE', 'h', '100000', 'FIELDS', '1', 'c'),
    ('HEXPIREAT', 'h', '99999999999', 'FIELDS', '1', 'c'),
    ('HPERSIST', 'h', 'FIELDS', '1', 'c'), ('HPERSIST', 'h', 'FIELDS', '1', 'c'),
    ('HPEXPIREAT', 'h', '1', 'FIELDS', '1', 'c'),
    ('HGETDEL', 'h', 'FIELDS', '1', 'x'),
    ('HSETEX', 'h2', 'PX', '100000', 'FIELDS', '2', 'a', '1', 'b', '2'),
    ('HPEXPIREAT', 'h2', '1', 'FIELDS', '2', 'a', 'b'),
    ('SET', 'd', 'v'), ('DELEX', 'd', 'IFEQ', 'no'), ('DELEX', 'd', 'IFEQ', 'v'),
    ('SET', 'd', 'v'), ('DELEX', 'd'), ('DELEX', 'd'),
    ('MSETEX', '2', 'm1', '1', 'm2', '2'), ('MSETEX', '1', 'm1', '1', 'EX', '100'),
    ('MSETEX', '1', 'm1', '1', 'KEEPTTL'), ('MSETEX', '1', 'm3', '3', 'XX', 'EX', '5'),
    ('MSETEX', '2', 'm1', '9', 'm2', '9', 'XX', 'PX', '100000'),
    ('INCREX', 'i', 'BYINT', '5'), ('INCREX', 'i', 'BYFLOAT', '1.5'),
    ('INCREX', 'i2', 'BYINT', '1', 'EX', '100'), ('INCREX', 'i2', 'BYINT', '1', 'PERSIST'),
    ('INCREX', 'i2', 'BYINT', '1', 'PERSIST'), ('INCREX', 'i2', 'BYINT', '1', 'EX', '100', 'ENX'),
    ('INCREX', 'i2', 'BYINT', '1', 'EX', '100', 'ENX'),
    ('INCREX', 'i2', 'BYINT', '1', 'PXAT', '1'),
]

# Redis 8's o (overwritten) and c (type_changed) classes, with n and A.
OVERWRITES = [
    ('SET', 'a', '1'), ('SET', 'a', '2'), ('SET', 'a', '3', 'NX'), ('HSET', 'h', 'f', 'v'),
    ('SET', 'h', 'x'), ('RENAME', 'a', 'h'), ('LPUSH', 'l', 'x'), ('RENAME', 'h', 'l'),
    ('COPY', 'l', 'c'), ('COPY', 'l', 'c', 'REPLACE'), ('SADD', 's1', 'a'),
    ('SUNIONSTORE', 'l', 's1'), ('MSET', 'l', '1', 'm', '2'), ('GETSET', 'l', '2'),
    ('INCR', 'l'), ('APPEND', 'l', 'x'), ('ZADD', 'z', '1', 'a'), ('ZUNIONSTORE', 'l', '1', 'z'),
    ('BITOP', 'OR', 'l', 'm'), ('RPUSH', 'sl', '1'), ('SORT', 'sl', 'STORE', 'l'),
    ('SET', 'l', 'v', 'GET'), ('SETEX', 'l', '100', 'v'),
]

# As redis-server 8.8.0 sent them for OVERWRITES under KEAnoc.
OVERWRITE_EVENTS_BY_KEY = [
    ('a', 'new'), ('a', 'set'), ('a', 'overwritten'), ('a', 'set'), ('h', 'new'), ('h', 'hset'),
    ('h', 'overwritten'), ('h', 'type_changed'), ('h', 'set'), ('h', 'new'), ('a', 'rename_from'),
    ('h', 'rename_to'), ('h', 'overwritten'), ('l', 'new'), ('l', 'lpush'), ('l', 'new'),
    ('h', 'rename_from'), ('l', 'rename_to'), ('l', 'overwritten'), ('l', 'type_changed'),
    ('c', 'new'), ('c', 'copy_to'), ('c', 'new'), ('c', 'copy_to'), ('c', 'overwritten'),
    ('s1', 'new'), ('s1', 'sadd'), ('l', 'overwritten'), ('l', 'type_changed'),
    ('l', 'sunionstore'), ('l', 'overwritten'), ('l', 'type_changed'), ('l', 'set'), ('m', 'new'),
    ('m', 'set'), ('l', 'overwritten'), ('l', 'set'), ('l', 'incrby'), ('l', 'append'),
    ('z', 'new'), ('z', 'zadd'), ('l', 'overwritten'), ('l', 'type_changed'), ('l', 'zunionstore'),
    ('l', 'overwritten'), ('l', 'type_changed'), ('l', 'set'), ('sl', 'new'), ('sl', 'rpush'),
    ('l', 'overwritten'), ('l', 'type_changed'), ('l', 'sortstore'), ('l', 'overwritten'),
    ('l', 'type_changed'), ('l', 'set'), ('l', 'expire'),
]

REDIS8_EVENTS_BY_KEY = [
    ('h', 'hset'), ('h', 'hdel'), ('h', 'hexpire'), ('h', 'hpersist'), ('h', 'hdel'),
    ('h', 'hset'), ('h', 'hexpire'), ('h', 'hset'), ('h', 'hset'), ('h', 'hset'), ('h', 'hdel'),
    ('h', 'hexpire'), ('h', 'hexpire'), ('h', 'hpersist'), ('h', 'hdel'), ('h', 'hdel'),
    ('h', 'del'), ('h2', 'hset'), ('h2', 'hexpire'), ('h2', 'hdel'), ('h2', 'del'), ('d', 'set'),
    ('d', 'del'), ('d', 'set'), ('d', 'del'), ('m1', 'set'), ('m2', 'set'), ('m1', 'expire'),
    ('m1', 'set'), ('m1', 'set'), ('m1', 'expire'), ('m1', 'set'), ('m2', 'expire'), ('m2', 'set'),
    ('i', 'incrby'), ('i', 'incrbyfloat'), ('i2', 'incrby'), ('i2', 'expire'), ('i2', 'incrby'),
    ('i2', 'persist'), ('i2', 'incrby'), ('i2', 'incrby'), ('i2', 'expire'), ('i2', 'incrby'),
    ('i2', 'del'),
]
REDIS8_EVENTS = [m for key, event in REDIS8_EVENTS_BY_KEY
                 for m in (('__keyspace@0__:' + key, event), ('__keyevent@0__:' + event, key))]


@xkv_only
@test
def redis8_commands_events(t):
    got = stream(t.sut, 'KEA', REDIS8)
    if got != REDIS8_EVENTS:
        raise AssertionError('events differ from redis 8.8.0\n  want %s\n  got  %s'
                             % (REDIS8_EVENTS, got))


def expand(by_key):
    return [m for key, event in by_key
            for m in (('__keyspace@0__:' + key, event), ('__keyevent@0__:' + event, key))]


@xkv_only
@test
def overwritten_type_changed_events(t):
    got = stream(t.sut, 'KEAnoc', OVERWRITES)
    want = expand(OVERWRITE_EVENTS_BY_KEY)
    if got != want:
        raise AssertionError('events differ from redis 8.8.0\n  want %s\n  got  %s' % (want, got))


@xkv_only
@test
def field_expiry_events(t):
    # Lazy: a read finds a field past its deadline; active: the cycle
    # reclaims them, and a hash left empty is deleted ("del", not "expired").
    with t.sut.client() as c:
        c.call('FLUSHALL')
        c.call('CONFIG', 'SET', 'notify-keyspace-events', 'KEA')
        sub = Subscriber(t.sut)
        try:
            c.call('HSET', 'fh', 'a', '1', 'b', '2')
            c.call('HPEXPIRE', 'fh', '20', 'FIELDS', '1', 'a')
            c.call('HSET', 'fe', 'a', '1')
            c.call('HPEXPIRE', 'fe', '20', 'FIELDS', '1', 'a')
            got = []
            while not {('__keyevent@0__:hexpired', 'fh'), ('__keyevent@0__:del', 'fe')} <= set(got):
                msg = decode(sub.c.read_reply())
                got.append((msg[2].decode(), msg[3].decode()))
            fe = [m for m in got if m[0].endswith(':fe') or m[1] == 'fe']
            # As redis 8.8.0 reports a hash its last field's expiry empties.
            assert fe[-4:] == [('__keyspace@0__:fe', 'hexpired'), ('__keyevent@0__:hexpired', 'fe'),
                               ('__keyspace@0__:fe', 'del'), ('__keyevent@0__:del', 'fe')], fe
            assert ('__keyevent@0__:expired', 'fe') not in got, got
            assert ('__keyevent@0__:del', 'fh') not in got, got
        finally:
            sub.close()
            c.call('CONFIG', 'SET', 'notify-keyspace-events', '')


@xkv_only
@test
def eviction_events(t):
    srv = t.spawn('sut', **{'maxmemory-policy': 'allkeys-random'})
    with srv.client() as c:
        c.call('CONFIG', 'SET', 'notify-keyspace-events', 'Ee')
        keys = ['ev%d' % i for i in range(20)]
        for k in keys:
            c.call('SET', k, 'x' * 1000)
        sub = Subscriber(srv)
        try:
            c.call('CONFIG', 'SET', 'maxmemory', '1')
            # The next write evicts what it can (every key), then is refused.
            reply = c.cmd('SET', 'more', 'x')
            assert reply.startswith(b'-OOM'), reply
            c.call('CONFIG', 'SET', 'maxmemory', '0')
            c.call('PUBLISH', '__keyevent@0__:evicted', END)
            got = []
            while True:
                msg = decode(sub.c.read_reply())
                if msg[3] == END.encode():
                    break
                got.append((msg[2].decode(), msg[3].decode()))
        finally:
            sub.close()
    assert sorted(got) == sorted(('__keyevent@0__:evicted', k) for k in keys), got


@xkv_only
@test
def per_key_order_across_workers(t):
    # Writers on several connections (spread over the server's two workers)
    # push onto the same lists, some at the head and some at the tail. The
    # length each push answers is that change's place in the key's order,
    # so the subscriber's events for the key must be "lpush" exactly where
    # a head pusher got its lengths and "rpush" where a tail pusher did.
    nwriters, nkeys, rounds = 4, 3, 150
    srv = t.sut
    with srv.client() as c:
        c.call('FLUSHALL')
        c.call('CONFIG', 'SET', 'notify-keyspace-events', 'Kl')
    sub = Subscriber(srv)
    expect = {'ord%d' % k: {} for k in range(nkeys)}
    errors = []
    lock = threading.Lock()

    def writer(w):
        cmd, event = ('LPUSH', 'lpush') if w % 2 else ('RPUSH', 'rpush')
        try:
            with srv.client() as wc:
                for _ in range(rounds):
                    for k in range(nkeys):
                        n = wc.call(cmd, 'ord%d' % k, w)
                        with lock:
                            expect['ord%d' % k][n] = event
        except Exception as e:   # noqa: BLE001 - reported below
            errors.append(e)

    try:
        threads = [threading.Thread(target=writer, args=(w,)) for w in range(nwriters)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        assert not errors, errors
        with srv.client() as c:
            c.call('RPUSH', END, '1')
        seen = {}
        while True:
            msg = decode(sub.c.read_reply())
            ch, ev = msg[2].decode(), msg[3].decode()
            if ch == '__keyspace@0__:' + END:
                break
            seen.setdefault(ch[len('__keyspace@0__:'):], []).append(ev)
        for key, by_len in expect.items():
            want = [by_len[n] for n in range(1, nwriters * rounds + 1)]
            assert seen[key] == want, 'events of %s out of change order' % key
    finally:
        sub.close()
        with srv.client() as c:
            c.call('CONFIG', 'SET', 'notify-keyspace-events', '')


@xkv_only
@test
def lazy_field_expiry_events_as_redis_88(t):
    """Redis 8.8 reports lazy field expiry field by field: "hexpired" while
    fields remain, "del" for the one that empties the hash (a lone last
    field gives only "del"), and HSETEX, which sets fields next, reports an
    emptied hash's fields "hexpired" with no "del"."""
    c = t.sut
    with c.client() as a:
        a.call('DEBUG', 'SET-ACTIVE-EXPIRE', '0')
    try:
        two = stream(c, 'Kh', [('HSET', 'h', 'f1', 1, 'f2', 2),
                               ('HPEXPIRE', 'h', 10, 'FIELDS', 2, 'f1', 'f2'), 0.03,
                               ('HMGET', 'h', 'f1', 'f2')])
        assert [m for _, m in two] == ['hset', 'hexpire', 'hexpired'], two
        one = stream(c, 'Kgh', [('HSET', 'h', 'f', 1), ('HPEXPIRE', 'h', 10, 'FIELDS', 1, 'f'),
                                0.03, ('HGET', 'h', 'f')])
        assert [m for _, m in one] == ['hset', 'hexpire', 'del'], one
        fnx = stream(c, 'Kgh', [('HSET', 'h', 'f', 1), ('HPEXPIRE', 'h', 10, 'FIELDS', 1, 'f'),
                                0.03, ('HSETEX', 'h', 'FNX', 'PX', 100000, 'FIELDS', 1, 'f', 'v')])
        assert [m for _, m in fnx] == ['hset', 'hexpire', 'hexpired', 'hset', 'hexpire'], fnx
    finally:
        with c.client() as a:
            a.call('DEBUG', 'SET-ACTIVE-EXPIRE', '1')


@xkv_only
@test
def restore_events_as_redis_88(t):
    c = t.sut
    with c.client() as a:
        a.call('SET', 'tmp', 'string_value')
        payload = a.call('DUMP', 'tmp')
    got = stream(c, 'Egoc', [('HSET', 'k', 'f', 'v'), ('RESTORE', 'k', 0, payload, 'REPLACE'),
                             ('RESTORE', 'n', 0, payload),
                             ('RESTORE', 'k', 1, payload, 'REPLACE', 'ABSTTL')])
    assert got == [('__keyevent@0__:restore', 'k'), ('__keyevent@0__:overwritten', 'k'),
                   ('__keyevent@0__:type_changed', 'k'), ('__keyevent@0__:restore', 'n'),
                   ('__keyevent@0__:del', 'k')], got


@xkv_only
@test
def config_set_maxmemory_evicts_at_once(t):
    srv = t.spawn('sut', **{'maxmemory-policy': 'allkeys-random'})
    with srv.client() as c:
        for i in range(20):
            c.call('SET', 'ev%d' % i, 'x' * 1000)
        assert c.call('CONFIG', 'SET', 'maxmemory', '1') == b'OK'
        # No write in between: CONFIG SET itself evicted, as in Redis.
        assert c.call('DBSIZE') == 0
        c.call('CONFIG', 'SET', 'maxmemory', '0')


# Redis 8.8's subkey events (classes S T I V): every hash command that names
# fields, a deadline already past, a key with a newline (no item channel), an
# event channel key with '|', and lazy field expiry reported in the order of
# the reading command's arguments.
SUBKEY_STEPS = [
    ('HSET', 'h', 'a', 1, 'b', 2, 'c', 3), ('HSETNX', 'h', 'd', 4), ('HSETNX', 'h', 'd', 5),
    ('HINCRBY', 'h', 'n', 5), ('HINCRBYFLOAT', 'h', 'x', '1.5'), ('HDEL', 'h', 'a', 'zz', 'b'),
    ('HEXPIRE', 'h', 100, 'FIELDS', 2, 'c', 'd'), ('HPERSIST', 'h', 'FIELDS', 2, 'c', 'zz'),
    ('HGETDEL', 'h', 'FIELDS', 2, 'n', 'zz'), ('HGETEX', 'h', 'EX', 100, 'FIELDS', 1, 'x'),
    ('HGETEX', 'h', 'PERSIST', 'FIELDS', 1, 'x'),
    ('HSETEX', 'h', 'PX', 100000, 'FIELDS', 1, 'e', 5), ('HEXPIREAT', 'h', 1, 'FIELDS', 1, 'e'),
    ('HSETEX', 'h', 'PXAT', 1, 'FIELDS', 2, 'g', 1, 'i', 2), ('HSET', 'k\nl', 'f', 'v'),
    ('HSET', 'e|v', 'f', 'v'), ('DEBUG', 'SET-ACTIVE-EXPIRE', 0),
    ('HSET', 'lz', 'f1', 1, 'f2', 2, 'keep', 3), ('HPEXPIRE', 'lz', 10, 'FIELDS', 2, 'f2', 'f1'),
    0.05, ('HMGET', 'lz', 'f1', 'f2'), ('DEBUG', 'SET-ACTIVE-EXPIRE', 1),
    ('HSET', 'ac', 'f1', 1, 'f2', 2), ('HPEXPIRE', 'ac', 100000, 'FIELDS', 1, 'f2'),
]


@xkv_only
@test
def subkey_events_as_redis_88(t):
    """The messages of the four subkey channels, equal to those redis-server
    8.8.0 sent for SUBKEY_STEPS (data/subkey-events-redis-8.8.json)."""
    path = os.path.join(os.path.dirname(__file__), 'data', 'subkey-events-redis-8.8.json')
    with open(path) as f:
        want = [tuple(m) for m in json.load(f)]
    with t.sut.client() as c:
        c.call('FLUSHALL')
        assert c.call('CONFIG', 'SET', 'notify-keyspace-events', 'STIVh') == b'OK'
        sub = t.sut.client(2)
        sub.send('PSUBSCRIBE', '__subkey*')
        assert decode(sub.read_reply())[0] == b'psubscribe'
        got = []
        try:
            for step in SUBKEY_STEPS:
                if isinstance(step, float):
                    time.sleep(step)
                else:
                    c.call(*step)
            c.call('PUBLISH', '__subkeyend', END)
            while True:
                msg = decode(sub.read_reply())
                if msg[2] == b'__subkeyend':
                    break
                got.append((msg[2].decode('latin1'), msg[3].decode('latin1')))
        finally:
            sub.close()
            c.call('CONFIG', 'SET', 'notify-keyspace-events', '')
            c.call('DEBUG', 'SET-ACTIVE-EXPIRE', 1)
    assert got == want, '\n'.join('%r' % (m,) for m in got)
