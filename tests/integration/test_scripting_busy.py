# SPDX-License-Identifier: GPL-2.0-only
"""Busy scripts (busy-reply-threshold, SCRIPT KILL, FUNCTION KILL, SHUTDOWN NOSAVE),
FUNCTION DUMP / RESTORE (with Redis 8.8's payloads when it is built) and functions in
RDB files, and the cmsgpack and struct libraries: each run on the reference too and
compared reply for reply."""

import os
from harness import Client, Server, test, wait_until, xkv_only

REDIS88 = os.environ.get('REDIS88_SERVER', '/work/peers/redis-8.8.0/src/redis-server')

BUSY_EVAL = (b'-BUSY Redis is busy running a script. You can only call SCRIPT KILL or '
             b'SHUTDOWN NOSAVE.\r\n')
BUSY_FUNCTION = (b'-BUSY Redis is busy running a script. You can only call FUNCTION KILL '
                 b'or SHUTDOWN NOSAVE.\r\n')


def clients(srv, n=8):
    """n connections: with two workers some land on the script's own."""
    return [Client(srv.port) for _ in range(n)]


def wait_busy(c, busy=BUSY_EVAL):
    assert wait_until(lambda: c.cmd('PING') == busy, timeout=10), 'the script never got busy'


def busy_eval_flow(srv):
    """A read-only runaway EVAL: BUSY on every connection, the wrong KILL, SCRIPT
    KILL, then the script's client gets its error and its pipelined PING."""
    out = []
    with Client(srv.port) as ctl:
        out.append(ctl.cmd('SCRIPT', 'KILL'))
        out.append(ctl.cmd('CONFIG', 'SET', 'lua-time-limit', '20'))
        runner = Client(srv.port, timeout=20)
        runner.send_raw(b'*3\r\n$4\r\nEVAL\r\n$17\r\nwhile 1 do end --\r\n$1\r\n0\r\n'
                        b'*1\r\n$4\r\nPING\r\n')
        wait_busy(ctl)
        others = clients(srv)
        try:
            # Clients of every worker are answered, none hangs behind the lock.
            out.append(sorted(set(c.cmd('GET', 'k') for c in others)))
            out.append(sorted(set(c.cmd('SCRIPT', 'LOAD', 'return 1') for c in others)))
            out.append(others[0].cmd('FUNCTION', 'KILL'))
            out.append(others[1].cmd('FUNCTION', 'STATS'))
            out.append(others[2].cmd('SHUTDOWN'))
            out.append(others[3].cmd('MULTI'))
            out.append(others[3].cmd('SET', 'x', 'y'))
            out.append(others[3].cmd('EXEC'))
            out.append(others[4].cmd('SCRIPT', 'KILL'))
        finally:
            for c in others:
                c.close()
        # The script's own error, then the PING it pipelined.
        err = runner.read_reply()
        out.append(err.split(b' script:')[0])
        out.append(runner.read_reply())
        runner.close()
        assert wait_until(lambda: ctl.cmd('PING') == b'+PONG\r\n', timeout=10)
        out.append(ctl.cmd('SCRIPT', 'KILL'))
        out.append(ctl.cmd('CONFIG', 'SET', 'lua-time-limit', '5000'))
    return out


@test
def busy_eval_and_script_kill(t):
    t.same(busy_eval_flow, 'busy EVAL replies')


def busy_function_flow(srv):
    out = []
    with Client(srv.port) as ctl:
        out.append(ctl.cmd('CONFIG', 'SET', 'busy-reply-threshold', '20'))
        out.append(ctl.cmd('FUNCTION', 'LOAD', 'REPLACE',
                           "#!lua name=spin\nredis.register_function('spin', function() "
                           "local i = 0 while true do i = i + 1 end end)"))
        runner = Client(srv.port, timeout=20)
        runner.send('FCALL', 'spin', '0')
        wait_busy(ctl, BUSY_FUNCTION)
        others = clients(srv)
        try:
            out.append(sorted(set(c.cmd('PING') for c in others)))
            out.append(others[0].cmd('SCRIPT', 'KILL'))
            stats = others[1].call('FUNCTION', 'STATS')
            running = dict(zip(stats[1][0::2], stats[1][1::2]))
            out.append((running[b'name'], running[b'command']))
            out.append(others[2].cmd('FUNCTION', 'KILL'))
        finally:
            for c in others:
                c.close()
        out.append(runner.read_reply().split(b' script:')[0])
        runner.close()
        assert wait_until(lambda: ctl.cmd('PING') == b'+PONG\r\n', timeout=10)
        out.append(ctl.cmd('FUNCTION', 'KILL'))
        out.append(ctl.cmd('FUNCTION', 'DELETE', 'spin'))
        out.append(ctl.cmd('CONFIG', 'SET', 'busy-reply-threshold', '5000'))
    return out


@test
def busy_function_and_function_kill(t):
    t.same(busy_function_flow, 'busy FCALL replies')


def unkillable_flow(srv):
    out = []
    with Client(srv.port) as ctl:
        out.append(ctl.cmd('CONFIG', 'SET', 'lua-time-limit', '20'))
        runner = Client(srv.port, timeout=20)
        runner.send('EVAL', "redis.call('set', 'x', 'y') while true do end", '0')
        wait_busy(ctl)
        others = clients(srv)
        try:
            out.append(sorted(set(c.cmd('SCRIPT', 'KILL') for c in others)))
            out.append(others[0].cmd('SHUTDOWN'))
            others[1].send('SHUTDOWN', 'NOSAVE')
            out.append(others[1].read_until_close(timeout=10))
        finally:
            for c in others:
                c.close()
        runner.close()
    # The server ends, within a bound.
    assert wait_until(lambda: not srv.alive(), timeout=10), 'SHUTDOWN NOSAVE left it running'
    return out


@test
def unkillable_script_and_shutdown_nosave(t):
    ref, sut = t.spawn_pair()
    a, b = unkillable_flow(ref), unkillable_flow(sut)
    assert a == b, 'differs\n  redis %r\n  xkvd  %r' % (a, b)


LIBS = [
    "#!lua name=lib1\nredis.register_function('f1', function(k, a) return 'one: ' .. "
    "'a long enough body to be compressed by LZF in the payload' end)",
    "#!lua name=lib2\nredis.register_function{function_name='f2', callback=function() "
    "return 2 end, flags={'no-writes'}, description='two'}",
]


def restore_flow(srv, payload):
    """RESTORE's policies and errors over a server holding lib1."""
    steps = [
        ('FUNCTION', 'FLUSH'),
        ('FUNCTION', 'RESTORE', payload),
        ('FCALL', 'f1', '0'), ('FCALL_RO', 'f2', '0'),
        # One library collides (which one a server names first is its order).
        ('FUNCTION', 'DELETE', 'lib2'),
        ('FUNCTION', 'RESTORE', payload),
        ('FUNCTION', 'RESTORE', payload, 'APPEND'),
        ('FUNCTION', 'RESTORE', payload, 'REPLACE'),
        ('FUNCTION', 'RESTORE', payload, 'FLUSH'),
        ('FUNCTION', 'RESTORE', payload, 'BAD'),
        ('FUNCTION', 'RESTORE', payload, 'FLUSH', 'X'),
        ('FUNCTION', 'RESTORE', payload[:-1] + bytes([payload[-1] ^ 1])),
        ('FUNCTION', 'RESTORE', b'short'),
        ('FUNCTION', 'DELETE', 'lib2'),
        ('FUNCTION', 'LOAD', "#!lua name=other\nredis.register_function('f2', function() "
         "return 3 end)"),
        ('FUNCTION', 'RESTORE', payload, 'REPLACE'),
        ('FCALL', 'f2', '0'),
        ('FUNCTION', 'LIST', 'LIBRARYNAME', 'lib1', 'WITHCODE'),
        ('FUNCTION', 'FLUSH'),
    ]
    out = []
    with Client(srv.port) as c:
        for step in steps:
            out.append(c.cmd(*step))
    return out


def dump_of(srv):
    with Client(srv.port) as c:
        c.cmd('FUNCTION', 'FLUSH')
        for lib in LIBS:
            assert not c.cmd('FUNCTION', 'LOAD', lib).startswith(b'-')
        payload = c.call('FUNCTION', 'DUMP')
        c.cmd('FUNCTION', 'FLUSH')
    return payload


@test
def function_dump_restore_round_trip(t):
    payload = dump_of(t.sut)
    assert payload[0] == 245 and payload[-10] == 14, payload[:4]
    # The same flow over each server's own payload, and the reference's payload
    # (7.0's, an older RDB version) restored here.
    a = restore_flow(t.ref, dump_of(t.ref))
    b = restore_flow(t.sut, payload)
    assert a == b, 'differs\n  redis %r\n  xkvd  %r' % (a, b)
    assert restore_flow(t.sut, dump_of(t.ref)) == a


@test
@xkv_only
def function_dump_restore_with_redis_8_8(t):
    if not os.access(REDIS88, os.X_OK):
        return
    r88 = Server('redis', binary=REDIS88, label='redis-8.8').start()
    t.spawned.append(r88)
    theirs, ours = dump_of(r88), dump_of(t.sut)
    # Each loads the other's payload and behaves the same after.
    a = restore_flow(r88, ours)
    b = restore_flow(t.sut, theirs)
    assert a == b, 'differs\n  redis-8.8 %r\n  xkvd      %r' % (a, b)
    assert b[1] == b'+OK\r\n' and b[2].startswith(b'$'), b[:3]


def reload_flow(srv):
    out = []
    with Client(srv.port) as c:
        for step in [('FUNCTION', 'FLUSH'), ('FUNCTION', 'LOAD', LIBS[0]), ('SET', 'k', 'v'),
                     ('DEBUG', 'RELOAD'), ('FCALL', 'f1', '0'), ('GET', 'k'),
                     ('DEBUG', 'RELOAD', 'NOFLUSH', 'MERGE'),
                     ('FUNCTION', 'LIST'), ('DEBUG', 'RELOAD', 'BAD'),
                     ('FUNCTION', 'FLUSH'), ('DEBUG', 'RELOAD', 'NOSAVE'),
                     ('FCALL', 'f1', '0'), ('FUNCTION', 'FLUSH'), ('FLUSHALL',)]:
            out.append(c.cmd(*step))
    with Client(srv.port) as c:
        # A library already there refuses the load (7.0 and 8.8 word it apart).
        c.cmd('FUNCTION', 'LOAD', LIBS[0])
        out.append(c.cmd('DEBUG', 'RELOAD', 'NOFLUSH')[:38])
        c.cmd('FUNCTION', 'FLUSH')
    return out


@test
def functions_survive_the_rdb_file(t):
    t.same(reload_flow, 'DEBUG RELOAD with functions')


@test
@xkv_only
def rdb_file_with_functions_from_redis_8_8(t):
    if not os.access(REDIS88, os.X_OK):
        return
    r88 = Server('redis', binary=REDIS88, label='redis-8.8').start()
    t.spawned.append(r88)
    with Client(r88.port) as c:
        assert c.cmd('FUNCTION', 'LOAD', LIBS[1]) == b'$4\r\nlib2\r\n'
        assert c.cmd('SAVE') == b'+OK\r\n'
    # A later --dir wins: xkvd starts on Redis's dump.rdb.
    sut = Server('xkvd', binary=t.env.xkvd, engine=t.engine, label='xkvd',
                 directives={'dir': r88.dir}).start()
    t.spawned.append(sut)
    with Client(sut.port) as c:
        assert c.cmd('FCALL_RO', 'f2', '0') == b':2\r\n'


VECTORS = """local function hex(s) local h = "" for i = 1, #s do h = h .. string.format("%02x", string.byte(s, i)) end return h end
local out = {}
local vals = {0, 1, 127, 128, 255, 256, 65535, 65536, 4294967295, 4294967296, -1, -32, -33, -128, -129, -32768, -32769, -2147483648, -2147483649, 0.1, 0.5, 1.5, -0.25, 1e300, 2^63, -2^63, 2^53, 1/0, -1/0, "", "abc", string.rep("x", 31), string.rep("y", 32), string.rep("z", 256), string.rep("w", 65536), true, false, {}, {1,2,3}, {a=1}, {1,2,nil,4}, {[1]=1,[3]=3}, {{{{}}}}, {1.5, "s", {x={y={}}}}}
for i, v in ipairs(vals) do local p = cmsgpack.pack(v) if #p > 40 then p = string.sub(p,1,12) .. "..." .. #p end out[#out+1] = hex(p) end
out[#out+1] = hex(cmsgpack.pack(1, "a", nil, true))
local a = {} local t = a for i=1,20 do t[1] = {} t = t[1] end
out[#out+1] = hex(cmsgpack.pack(a))
local c = {} c[1] = c
out[#out+1] = hex(cmsgpack.pack(c))
-- unpack
local function dump(v) if type(v) == "table" then local s = "{" local keys = {} for k in pairs(v) do keys[#keys+1] = k end table.sort(keys, function(x,y) return tostring(x) < tostring(y) end) for _, k in ipairs(keys) do s = s .. tostring(k) .. "=" .. dump(v[k]) .. "," end return s .. "}" else return type(v) .. ":" .. tostring(v) end end
local samples = {"\\0", "\\127", "\\204\\255", "\\205\\1\\0", "\\206\\0\\1\\0\\0", "\\207\\255\\255\\255\\255\\255\\255\\255\\255", "\\207\\0\\0\\0\\1\\0\\0\\0\\0", "\\208\\128", "\\209\\128\\0", "\\210\\128\\0\\0\\0", "\\211\\255\\255\\255\\255\\255\\255\\255\\254", "\\224", "\\255", "\\192", "\\194\\195", "\\202\\63\\192\\0\\0", "\\203\\63\\240\\0\\0\\0\\0\\0\\0", "\\163abc", "\\217\\3abc", "\\218\\0\\3abc", "\\219\\0\\0\\0\\3abc", "\\147\\1\\2\\3", "\\130\\161a\\1\\161b\\2", "\\220\\0\\2\\1\\2", "\\221\\0\\0\\0\\1\\1", "\\222\\0\\1\\1\\2", "\\223\\0\\0\\0\\1\\1\\2", "\\1\\2\\3"}
for _, s in ipairs(samples) do local r = {cmsgpack.unpack(s)} local x = "" for i = 1, #r do x = x .. dump(r[i]) .. ";" end out[#out+1] = x end
for _, s in ipairs({"\\205\\1", "\\193", "\\147\\1", "\\219\\0\\0\\0\\5ab"}) do local ok, e = pcall(cmsgpack.unpack, s) out[#out+1] = tostring(ok) .. " " .. tostring(e) end
local r = {cmsgpack.unpack_one("\\1\\2\\3")} out[#out+1] = dump(r)
r = {cmsgpack.unpack_one("\\1\\2\\3", 2)} out[#out+1] = dump(r)
r = {cmsgpack.unpack_limit("\\1\\2\\3", 2)} out[#out+1] = dump(r)
r = {cmsgpack.unpack_limit("\\1\\2\\3", 2, 1)} out[#out+1] = dump(r)
local ok, e = pcall(cmsgpack.unpack_limit, "\\1\\2\\3", -1) out[#out+1] = tostring(e)
ok, e = pcall(cmsgpack.unpack_one, "\\1\\2\\3", 9) out[#out+1] = tostring(e)
ok, e = pcall(cmsgpack.pack) out[#out+1] = tostring(e)
-- struct
out[#out+1] = hex(struct.pack("bBhHlLiI", -1, 255, -2, 65535, -3, 4, -5, 6))
out[#out+1] = hex(struct.pack(">i2<i2!4bi", 258, 258, 1, 7))
out[#out+1] = hex(struct.pack("!8 b d", 1, 1.5))
out[#out+1] = hex(struct.pack(">fd", 1.5, -2.25))
out[#out+1] = hex(struct.pack("c3sc0", "abcdef", "hi", "xyz"))
out[#out+1] = hex(struct.pack("xbxI3>I5", 1, 0x010203, 0x0102030405))
out[#out+1] = hex(struct.pack("i16", -2))
out[#out+1] = dump({struct.unpack(">i2<I2bBc2s", struct.pack(">i2<I2bBc2s", -300, 300, -5, 250, "qq", "zzz"))})
out[#out+1] = dump({struct.unpack("bc0", "\\3abcd")})
out[#out+1] = dump({struct.unpack("!4bi", struct.pack("!4bi", 1, 2))})
out[#out+1] = dump({struct.unpack(">d", struct.pack(">d", 3.25), 1)})
out[#out+1] = dump({struct.unpack("b", "\\1\\2\\3", 2)})
out[#out+1] = tostring(struct.size("!4bihd")) .. " " .. tostring(struct.size("bihdc4")) .. " " .. struct.size("i7")
for _, f in ipairs({{struct.size, "s"}, {struct.size, "c0"}, {struct.pack, "q", 1}, {struct.pack, "i33", 1}, {struct.pack, "!3b", 1}, {struct.unpack, "i", "ab"}, {struct.unpack, "s", "ab"}, {struct.unpack, "c0", "ab"}, {struct.pack, "c5", "ab"}, {struct.unpack, "b", "a", 0}, {struct.pack, "i", "x"}, {struct.pack, "i99999999999", 1}}) do local ok, e = pcall(unpack(f)) out[#out+1] = tostring(ok) .. " " .. tostring(e) end
return out
"""


@test
def cmsgpack_and_struct_vectors(t):
    # The same 111 encodings, decodings and errors as Redis's bundled libraries.
    t.compare([('EVAL', VECTORS, '0')])
    t.compare([
        ('EVAL', "return cmsgpack.unpack(cmsgpack.pack({1, 2, {a = 'b'}}))[3].a", '0'),
        ('EVAL', "cmsgpack.pack = nil", '0'),
        ('EVAL', "struct.size = nil", '0'),
        ('EVAL', "return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2)}", '0'),
        ('EVAL', "return #cmsgpack.pack(string.rep('x', 70000))", '0'),
        ('EVAL', "local t = {} for i = 1, 70000 do t[i] = i end "
         "return #cmsgpack.unpack(cmsgpack.pack(t))", '0'),
    ])
