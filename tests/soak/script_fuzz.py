#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Grammar-based fuzzer of Lua scripts: random EVAL bodies against one xkvd.

Each script is drawn from a small grammar of Lua 5.1 over what Redis gives
scripts: redis.call / redis.pcall with commands of every type on a small key
space (right and wrong types, wrong arity, tables, nil, booleans, functions
and huge strings as arguments), error() with strings, numbers, tables, nil
and tables with metatables, redis.error_reply / status_reply / setresp /
set_repl / sha1hex / log with odd values, cjson, cmsgpack, struct and bit
with random input, deeply nested and cyclic tables returned, huge replies,
bounded loops, pcall, string and table library calls, sandbox escapes
(globals, setmetatable on library tables, loadstring of bytecode), and token
soup (syntax errors). Loops are bounded, so no script runs long.

The scripts go in pipelined batches over a few connections, RESP2 and
RESP3, with KEYS and ARGV. What must hold: every script gets exactly one
well-formed reply (a value or an error), the server never closes a
connection or dies, and at the end PING answers and, for a sanitizer build,
its log has no report. A failure prints the seed and the batch so the run
can be replayed (--seed N --skip K).

Usage: script_fuzz.py --port P [--scripts N] [--seed S] [--batch B] [--log FILE]
       script_fuzz.py --xkvd PATH [--scripts N] ...   (starts its own server)
Exit status 0 if all held; prints "scripts N, errors E, seconds T"."""

import argparse
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

KEYS = ['k:s', 'k:l', 'k:h', 'k:z', 'k:set', 'k:x', 'k:n', 'k:none', 'k:big']
CMDS = {
    # name: argument kinds (k key, v value, n number, f float, * any)
    'get': 'k', 'set': 'kv', 'incr': 'k', 'incrby': 'kn', 'incrbyfloat': 'kf', 'append': 'kv',
    'strlen': 'k', 'getrange': 'knn', 'setrange': 'knv', 'mget': 'kkk', 'mset': 'kvkv',
    'del': 'kk', 'exists': 'kk', 'type': 'k', 'expire': 'kn', 'ttl': 'k', 'persist': 'k',
    'rename': 'kk', 'copy': 'kk', 'lpush': 'kvv', 'rpush': 'kv', 'lpop': 'k', 'rpop': 'kn',
    'lrange': 'knn', 'llen': 'k', 'lindex': 'kn', 'lset': 'knv', 'linsert': 'k*vv',
    'hset': 'kvv', 'hget': 'kv', 'hgetall': 'k', 'hdel': 'kv', 'hincrby': 'kvn', 'hkeys': 'k',
    'sadd': 'kvv', 'srem': 'kv', 'smembers': 'k', 'sismember': 'kv', 'scard': 'k',
    'sinter': 'kk', 'zadd': 'kfv', 'zincrby': 'kfv', 'zrange': 'knn', 'zscore': 'kv',
    'zrangebyscore': 'kff', 'zcard': 'k', 'zrem': 'kv', 'xadd': 'k*vv', 'xlen': 'k',
    'xrange': 'k**', 'setbit': 'knn', 'getbit': 'kn', 'bitcount': 'k', 'pfadd': 'kvv',
    'pfcount': 'k', 'object': '*k', 'dbsize': '', 'ping': '', 'echo': 'v', 'time': '',
    'blpop': 'kn', 'brpoplpush': 'kkn', 'bzpopmin': 'kn', 'sort': 'k', 'getdel': 'k',
    'getex': 'k', 'lmove': 'kk**', 'spop': 'k', 'srandmember': 'kn', 'zpopmin': 'k',
    'hrandfield': 'kn', 'select': 'n', 'exec': '', 'multi': '', 'subscribe': 'v',
    'eval': 'vn', 'script': '*', 'nosuchcmd': 'v', 'hello': 'n', 'client': '*',
    'wait': 'nn', 'randomkey': '', 'scan': 'n', 'keys': 'v', 'unlink': 'k', 'dump': 'k',
    'lpos': 'kv', 'setex': 'knv', 'hstrlen': 'kv', 'zrank': 'kv', 'lrem': 'knv',
}
WORDS = ['0', '1', '-1', '2', '10', '3.5', '-0', 'inf', 'nan', 'abc', '', 'x' * 40, '\\0',
         'LEFT', 'RIGHT', 'BEFORE', 'ENCODING', 'FLUSH', 'LIST', '+', '-', '*', '$']
LUA_ERRVALS = ['nil', '{}', '123', '"str"', 'true', '{err="e"}', '{err=1}', '{ok=1}',
               '{err={}}', 'setmetatable({}, {__index=function() error("x") end})',
               'setmetatable({}, {__tostring=function() return 1 end})', 'function() end',
               '{err="-ERR x"}', '{err="BUSY nope"}', 'string.rep("e", 5000)']
SOUP = ['local', 'function', 'end', 'if', 'then', 'else', 'for', 'do', 'while', 'return',
        'nil', '(', ')', '{', '}', '[', ']', '=', '==', '..', '...', ',', ';', 'redis',
        'call', '"', "'", '1', 'x', '#', '%', 'not', 'and', 'or', ':', '.', '[[', ']]', '--',
        '\n', '\\', 'break', 'repeat', 'until', 'goto', '0x', '1e', '\x00', '\xff']


class Gen:
    def __init__(self, rnd):
        self.r = rnd

    def pick(self, xs):
        return xs[self.r.randrange(len(xs))]

    def lua_str(self, s):
        return '"' + ''.join(c if c.isalnum() or c in ' _:.-+*' else '\\%03d' % (ord(c) & 255)
                             for c in s) + '"'

    def arg(self, kind, depth=0):
        r = self.r
        if kind == 'k':
            return self.pick(['KEYS[1]', 'KEYS[2]', 'ARGV[1]']) if r.random() < 0.2 else \
                self.lua_str(self.pick(KEYS))
        if kind == 'n':
            return self.pick(['0', '1', '-1', '3', '100', '1e300', '-2^63', '2^53', '0/0',
                              '1/0', '0.5', '"5"', '"x"'])
        if kind == 'f':
            return self.pick(['1.5', '"inf"', '"-inf"', '0', '"nan"', '2', '"1e400"'])
        if kind == 'v' and r.random() < 0.9:
            return self.lua_str(self.pick(WORDS))
        return self.value(depth + 1)

    def value(self, depth=0, big=False):
        """Any Lua expression, often a table; big: huge ones too (a reply,
        never an argument, so the key space stays small)."""
        r = self.r
        c = r.randrange(16 if depth < 4 else 8)
        if c == 0:
            return 'nil'
        if c == 1:
            return self.pick(['true', 'false'])
        if c == 2:
            return self.arg('n')
        if c == 3:
            return self.lua_str(self.pick(WORDS))
        if c == 4:
            return 'string.rep(%s, %d)' % (self.lua_str(self.pick(['a', 'xy', '\x00'])),
                                           self.pick([0, 1, 100, 5000] + ([1000000] if big else [])))
        if c == 5:
            return self.pick(['KEYS', 'ARGV', 'KEYS[1]', 'ARGV[2]', '#ARGV'])
        if c == 6:
            return self.pick(['cjson.null', 'redis', 'math.huge', '-math.huge', 'print',
                              'function() return 1 end'])
        if c == 7:
            return self.call_expr(depth + 1)
        if c in (8, 9):
            n = r.randrange(5)
            return '{' + ', '.join(self.value(depth + 1) for _ in range(n)) + '}'
        if c == 10:
            return '{%s=%s, [%s]=%s}' % (self.pick(['ok', 'err', 'double', 'map', 'set',
                                                     'big_number', 'verbatim_string', 'x']),
                                         self.value(depth + 1), self.arg('n'),
                                         self.value(depth + 1))
        if c == 11:
            return self.pick(['{ok="fine"}', '{err="My Error"}', '{double=3.14}',
                              '{map={a=1,b={1,2}}}', '{set={a=true,b=true}}',
                              '{big_number="123456789012345678901234567890"}',
                              '{verbatim_string={format="txt", string="hi"}}',
                              '{double="x"}', '{map=1}', '{set={[{}]=true}}',
                              '{verbatim_string={format=1}}', '{big_number={}}'])
        if c in (12, 13, 14) and r.random() < 0.8:  # the costly ones, now and then
            c = 8
        if c == 12:
            return 'deep(%d)' % self.pick([10, 100, 1000, 5000])
        if c == 13:
            return 'cyc()'
        if c == 14:
            return 'wide(%d)' % self.pick([10, 1000] + ([100000] if big else []))
        return '(%s %s %s)' % (self.arg('n'), self.pick(['+', '..', '*', '/', '%', '^', '==',
                                                          '<', 'and', 'or']), self.value(depth + 1))

    def call_expr(self, depth=0):
        r = self.r
        c = r.randrange(12)
        if c < 6:
            name = self.pick(list(CMDS))
            kinds = CMDS[name]
            if r.random() < 0.1:  # wrong arity
                kinds = kinds[:-1] if kinds and r.random() < 0.5 else kinds + 'v'
            args = [self.lua_str(name.upper() if r.random() < 0.3 else name)]
            args += [self.arg(k, depth) for k in kinds]
            if r.random() < 0.05:
                args.append(self.value(depth))
            fn = self.pick(['redis.call', 'redis.pcall', 'redis.pcall'])
            return '%s(%s)' % (fn, ', '.join(args))
        if c == 6:
            return self.pick(['redis.error_reply', 'redis.status_reply', 'redis.sha1hex',
                              'redis.setresp', 'redis.set_repl', 'redis.breakpoint',
                              'redis.debug', 'redis.replicate_commands',
                              'redis.acl_check_cmd']) + '(%s)' % self.value(depth + 1)
        if c == 7:
            return self.pick(['cjson.encode(%s)', 'cjson.decode(%s)', 'cmsgpack.pack(%s)',
                              'cmsgpack.unpack(%s)', 'cmsgpack.unpack(cmsgpack.pack(%s))',
                              'cjson.decode(cjson.encode(%s))', 'bit.band(%s, 7)',
                              'bit.tohex(%s)', 'struct.pack(">i", %s)', 'struct.unpack("b", %s)',
                              'tostring(%s)', 'type(%s)', 'tonumber(%s)', 'unpack(%s)',
                              'table.concat(%s)', 'string.format("%%s", %s)', '#(%s)',
                              'math.floor(%s)', 'select("#", %s)', 'next(%s)',
                              'cjson.encode_max_depth(%s)', 'redis.log(redis.LOG_DEBUG, %s)',
                              'loadstring(%s)', 'setmetatable(%s, nil)',
                              'rawset(%s, 1, 1)']) % self.value(depth + 1)
        if c == 8:
            return 'pcall(%s, %s)' % (self.pick(['error', 'redis.call', 'cjson.decode',
                                                 'function(x) return x.y.z end', 'tostring']),
                                      self.value(depth + 1))
        if c == 9:
            return self.lua_str(''.join(self.pick(SOUP) for _ in range(r.randrange(1, 8))))
        if c == 10:
            return 'cjson.decode(%s)' % self.lua_str(self.pick([
                '[1,2,3]', '{"a":', '[[[[[[[[[[1]]]]]]]]]]', '"\\ud800"', '1e999', '-',
                '{"a":[1,{"b":null}]}', '[' * 1200 + ']' * 1200, 'nan', '0x10']))
        return 'math.random(%s)' % self.pick(['', '10', '0', '-1', '1, 2', '2, 1'])

    def stmt(self, depth=0):
        r = self.r
        c = r.randrange(14 if depth < 3 else 7)
        if c == 12 and r.random() < 0.7:  # sandbox escapes: all fail alike
            c = 0
        if c in (0, 1, 2):
            return self.call_expr(depth) if r.random() < 0.5 else 'local v = ' + self.call_expr(depth)
        if c == 3:
            return 'error(%s)' % self.pick(LUA_ERRVALS) if r.random() < 0.3 else ''
        if c == 4:  # a global (refused by the sandbox) now and then, else a local
            return '%s = %s' % ('x' if r.random() < 0.2 else 'local x', self.value(depth))
        if c == 5:  # a return must end its block
            return 'if %s then return %s end' % (self.value(depth + 1), self.value(depth))
        if c == 6:
            return self.pick(['redis.setresp(3)', 'redis.setresp(2)', 'redis.set_repl(redis.REPL_ALL)',
                              'redis.set_repl(redis.REPL_NONE)', 'redis.set_repl(99)',
                              'cjson.decode_array_with_array_mt(true)', 'cjson.encode_keep_buffer(false)',
                              'redis.call("select", 1)', 'redis.call("select", 0)', 'collectgarbage()',
                              'cjson.encode_invalid_numbers("null")', 'string.rep("x", -1)'])
        if c in (7, 8):
            # Bounded: at most 100 x 3 x 3 iterations however they nest.
            return 'for i = 1, %d do %s end' % (self.pick([1, 3, 100] if depth == 0 else [1, 2, 3]),
                                                self.stmt(depth + 1))
        if c == 9:
            return 'if %s then %s else %s end' % (self.value(depth + 1), self.stmt(depth + 1),
                                                 self.stmt(depth + 1))
        if c == 10:
            return 'local ok, e = pcall(function() %s end) if not ok then return e end' % (
                self.stmt(depth + 1))
        if c == 11:
            return 'local t = %s; t[%s] = %s' % (self.value(depth + 1), self.arg('n'),
                                                self.value(depth + 1))
        if c == 12:
            return self.pick(['redis = nil', 'cjson.encode = nil', 'KEYS = {}', 'rawset(_G, "a", 1)',
                              'setmetatable(_G, nil)', 'loadstring(string.dump(print))',
                              'getmetatable("").__index = nil', 'os.exit()', 'io.write("x")',
                              'require("os")', 'dofile("/etc/passwd")', 'string.dump(deep)'])
        return 'do %s end' % '; '.join(self.stmt(depth + 1) for _ in range(r.randrange(1, 4)))

    def script(self):
        r = self.r
        if r.random() < 0.04:  # token soup: mostly syntax errors
            return ' '.join(self.pick(SOUP) for _ in range(r.randrange(1, 30)))
        head = ''
        if r.random() < 0.1:
            head = self.pick(['#!lua\n', '#!lua flags=no-writes\n', '#!lua flags=allow-oom\n',
                              '#!lua flags=bogus\n', '#!lua name=x\n', '#!luajit\n'])
        prelude = ('local function deep(n) local t = {} local c = t for i = 1, n do c[1] = {} '
                   'c = c[1] end return t end '
                   # One path back to itself: a cycle with two would make the reply
                   # exponential (Redis too walks it until its stack limit per path).
                   'local function cyc() local a = {1} local b = {a, 2} a[2] = b return a end '
                   'local function wide(n) local t = {} for i = 1, n do t[i] = i end return t end ')
        body = '\n'.join(self.stmt() for _ in range(r.randrange(1, 6)))
        return head + prelude + body + '\nreturn ' + self.value(big=True)


def resp_cmd(*args):
    out = [b'*%d\r\n' % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode('latin-1')
        out.append(b'$%d\r\n%s\r\n' % (len(a), a))
    return b''.join(out)


class Reader:
    """Reads whole RESP2/RESP3 replies off a socket; raises on malformed ones."""

    def __init__(self, sock):
        self.s, self.buf, self.pos = sock, b'', 0

    def _fill(self):
        d = self.s.recv(1 << 20)
        if not d:
            raise EOFError('server closed the connection')
        self.buf = self.buf[self.pos:] + d
        self.pos = 0

    def _line(self):
        while True:
            i = self.buf.find(b'\r\n', self.pos)
            if i >= 0:
                line = self.buf[self.pos:i]
                self.pos = i + 2
                return line
            self._fill()

    def _bytes(self, n):
        while len(self.buf) - self.pos < n + 2:
            self._fill()
        data = self.buf[self.pos:self.pos + n]
        if self.buf[self.pos + n:self.pos + n + 2] != b'\r\n':
            raise ValueError('bulk without CRLF')
        self.pos += n + 2
        return data

    def reply(self):
        """One reply: ('err', text) for a top-level error, else ('ok', None).
        Iterative: script replies nest thousands deep."""
        pending = [1]   # values still to read at each open aggregate
        first = None
        while pending:
            if pending[-1] == 0:
                pending.pop()
                continue
            pending[-1] -= 1
            line = self._line()
            if not line:
                raise ValueError('empty reply line')
            t, rest = line[:1], line[1:]
            kind = 'ok'
            if t in (b'-', b'!'):
                if t == b'!':
                    rest = self._bytes(int(rest))
                kind = 'err'
            elif t in (b'$', b'='):
                n = int(rest)
                if n >= 0:
                    self._bytes(n)
            elif t in (b'*', b'~', b'>', b'%', b'|'):
                n = int(rest) * (2 if t in (b'%', b'|') else 1)
                if t == b'|':
                    n += 1  # the attributes, then the reply itself
                if n > 0:
                    pending.append(n)
            elif t == b':':
                if not re.fullmatch(rb'-?[0-9]+', rest):
                    raise ValueError('bad integer %r' % rest)
            elif t not in (b'+', b',', b'#', b'_', b'('):
                raise ValueError('unknown reply type %r' % line[:40])
            if first is None:
                first = (kind, rest if kind == 'err' else None)
            if len(pending) > 100000:
                raise ValueError('reply nested too deep')
        return first


def start_server(xkvd, port, log):
    d = tempfile.mkdtemp(prefix='xkv-script-fuzz-')
    p = subprocess.Popen([xkvd, '--port', str(port), '--bind', '127.0.0.1', '--fastpath', 'no',
                          '--save', '', '--dir', d, '--busy-reply-threshold', '2000'],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    for _ in range(400):
        try:
            socket.create_connection(('127.0.0.1', port), 0.2).close()
            return p
        except OSError:
            if p.poll() is not None:
                raise RuntimeError('xkvd exited at start')
            time.sleep(0.05)
    raise RuntimeError('xkvd did not start')


def prepare(sock, rd):
    setup = [('FLUSHALL',), ('SCRIPT', 'FLUSH'), ('SET', 'k:s', 'hello'), ('RPUSH', 'k:l', 'a', 'b', 'c'),
             ('HSET', 'k:h', 'f', 'v', 'n', '5'), ('ZADD', 'k:z', '1', 'a', '2', 'b'),
             ('SADD', 'k:set', 'a', 'b'), ('XADD', 'k:x', '*', 'f', 'v'), ('SET', 'k:n', '10'),
             ('SET', 'k:big', 'x' * 10000)]
    sock.sendall(b''.join(resp_cmd(*c) for c in setup))
    for _ in setup:
        rd.reply()


def run(port, scripts, seed, batch=64, conns=3, skip=0, progress=None):
    """Sends `scripts` random scripts; returns (sent, errors). Raises on a
    broken promise (no reply, a malformed one, a closed connection)."""
    rnd = random.Random(seed)
    gen = Gen(rnd)
    socks = []
    for i in range(conns):
        s = socket.create_connection(('127.0.0.1', port), 30)
        s.settimeout(300)  # a slow batch under ASan on a loaded machine
        rd = Reader(s)
        if i == conns - 1:  # one RESP3 connection
            s.sendall(resp_cmd('HELLO', '3'))
            rd.reply()
        socks.append((s, rd))
    prepare(*socks[0])
    sent = errors = nb = 0
    t0 = time.monotonic()
    while sent < scripts:
        n = min(batch, scripts - sent)
        s, rd = socks[nb % conns]
        bodies = []
        for _ in range(n):
            body = gen.script()
            nkeys = rnd.randrange(3)
            argv = [rnd.choice(KEYS) for _ in range(nkeys)] + \
                [rnd.choice(WORDS) for _ in range(rnd.randrange(3))]
            bodies.append(resp_cmd('EVAL', body.encode('latin-1'), nkeys, *argv))
        if nb >= skip:
            try:
                s.sendall(b''.join(bodies))
                for _ in range(n):
                    kind, _ = rd.reply()
                    errors += kind == 'err'
            except Exception as e:
                raise RuntimeError('seed %d batch %d (scripts %d..%d): %s: %s' % (
                    seed, nb, sent, sent + n, type(e).__name__, e)) from e
        sent += n
        nb += 1
        if nb % 10 == 0:
            # Bring the key space back: scripts delete, retype and expire it.
            prepare(*socks[0])
        if progress and nb % 2000 == 0:
            progress(sent, errors, time.monotonic() - t0)
    for s, rd in socks:
        s.sendall(resp_cmd('PING'))
        if rd.reply()[0] != 'ok':
            raise RuntimeError('PING failed after the run')
        s.close()
    return sent, errors


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--port', type=int)
    ap.add_argument('--xkvd', help='start this xkvd (on --port, default 7379)')
    ap.add_argument('--scripts', type=int, default=10000)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--batch', type=int, default=64)
    ap.add_argument('--skip', type=int, default=0, help='batches to generate but not send')
    ap.add_argument('--log', help="the server's log (--xkvd), checked for sanitizer reports")
    ap.add_argument('--print', type=int, metavar='N', help='print N scripts and exit')
    a = ap.parse_args()
    if a.print:
        g = Gen(random.Random(a.seed))
        for _ in range(a.print):
            print(g.script(), end='\n----\n')
        return 0
    proc = None
    port = a.port or 7379
    log = open(a.log or os.devnull, 'wb')
    if a.xkvd:
        proc = start_server(a.xkvd, port, log)
    t0 = time.monotonic()
    ok = True
    try:
        sent, errors = run(port, a.scripts, a.seed, a.batch, skip=a.skip, progress=lambda n, e, t: print(
            '# %d scripts, %d errors, %.0f s' % (n, e, t), flush=True))
    except Exception as e:
        print('FAIL: %s' % e)
        ok, sent, errors = False, 0, 0
    dt = time.monotonic() - t0
    if proc:
        alive = proc.poll() is None
        if alive:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        else:
            print('FAIL: xkvd died (status %s)' % proc.returncode)
            ok = False
        log.close()
        if a.log:
            with open(a.log, 'rb') as f:
                text = f.read()
            if b'ERROR: AddressSanitizer' in text or b'runtime error:' in text or \
                    b'LeakSanitizer' in text:
                print('FAIL: sanitizer report in %s' % a.log)
                ok = False
    print('scripts %d, errors %d, seconds %.1f' % (sent, errors, dt))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
