# SPDX-License-Identifier: GPL-2.0-only
"""Lua scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT, and the redis API,
compared byte for byte with the reference (conversions, errors, the sandbox)."""

import json
import os
import shutil
import subprocess
import threading

import redis

from harness import HOST, REPO, test, xkv_only

RET_ALL = "return {1, 'two', {3, 'four'}, false, true, 3.99, -7, {ok='fine'}}"


@test
def eval_replies_and_conversions(t):
    for proto in (2, 3):
        t.compare([
            ('EVAL', 'return 1', '0'),
            ('EVAL', RET_ALL, '0'),
            ('EVAL', 'return {1, nil, 3}', '0'),
            ('EVAL', 'return nil', '0'),
            ('EVAL', "return {err='My Error'}", '0'),
            ('EVAL', "return {err='-WRONG code'}", '0'),
            ('EVAL', "return redis.error_reply('My Error')", '0'),
            ('EVAL', "return redis.error_reply('-CODE msg')", '0'),
            ('EVAL', "return redis.status_reply('FINE')", '0'),
            ('EVAL', "return {ok='a\\r\\nb'}", '0'),
            ('EVAL', 'return KEYS', '2', 'k1', 'k2', 'a1', 'a2'),
            ('EVAL', 'return ARGV', '2', 'k1', 'k2', 'a1', 'a2'),
            ('EVAL', "return redis.call('set', KEYS[1], ARGV[1])", '1', 'k', 'v'),
            ('EVAL', "return redis.call('get', KEYS[1])", '1', 'k'),
            ('EVAL', "return redis.call('get', 'nosuch')", '0'),
            ('EVAL', "return type(redis.call('get', 'nosuch'))", '0'),
            ('EVAL', "return redis.call('incr', 'n')", '0'),
            ('EVAL', "return redis.call('set', 'f', 3.5)", '0'),
            ('EVAL', "return redis.call('get', 'f')", '0'),
            ('EVAL', "return redis.call('set', 'i', 100000000)", '0'),
            ('EVAL', "return redis.call('get', 'i')", '0'),
            ('EVAL', "redis.call('rpush', 'l', 'a', 'b'); return redis.call('lrange', 'l', 0, -1)",
             '0'),
            ('EVAL', "return redis.call('ping')", '0'),
            ('EVAL', "return type(redis.call('ping'))", '0'),
            ('EVAL', "return redis.pcall('incr', 'k')", '0'),
            ('EVAL', "local e = redis.pcall('incr', 'k'); return type(e) .. ':' .. e['err']", '0'),
            ('EVAL', "return redis.call('hgetall', 'nosuch')", '0'),
            ('EVAL', "redis.call('hset', 'h', 'f', 'v'); return redis.call('hgetall', 'h')", '0'),
            ('EVAL', 'return redis.sha1hex("")', '0'),
            ('EVAL', "return redis.sha1hex('Pizza & Mandolino')", '0'),
            ('EVAL', "return redis.REDIS_VERSION_NUM > 0", '0'),
            ('EVAL', 'return redis.replicate_commands()', '0'),
            ('EVAL', 'return cjson.encode({1, 2, {a=1}})', '0'),
            ('EVAL', "return cjson.decode('[1,2,3]')", '0'),
            ('EVAL', 'return bit.band(7, 3) + bit.bor(1, 2)', '0'),
            ('EVAL', 'return bit.tohex(65535, -8)', '0'),
            ('EVAL', "return string.format('%d-%s', 5, 'x')", '0'),
            ('EVAL', 'return table.concat({1, 2, 3}, ",")', '0'),
            ('EVAL', "return loadstring('return 5')()", '0'),
            ('EVAL', "return type(redis.call('info', 'memory'))", '0'),
            ('FLUSHALL',),
        ], proto=proto)


@test
def setresp_3_conversions(t):
    script = ("redis.setresp(3); redis.call('hset', 'h', 'f', 'v'); "
              "redis.call('sadd', 's', 'm'); return {redis.call('hgetall', 'h'), "
              "redis.call('smembers', 's'), redis.call('get', 'nosuch'), "
              "redis.call('zscore', 'nosuch', 'x')}")
    for proto in (2, 3):
        t.compare([
            ('EVAL', script, '0'),
            ('EVAL', "redis.setresp(3); return type(redis.call('get', 'nosuch'))", '0'),
            ('EVAL', "redis.setresp(3); return redis.call('hgetall', 'h')['map']['f']", '0'),
            ('EVAL', "return {map={a=1}}", '0'),
            ('EVAL', "return {set={a=true}}", '0'),
            ('EVAL', "return {double=3.5}", '0'),
            ('EVAL', "return {big_number='12345678901234567890'}", '0'),
            ('EVAL', "redis.setresp(3); return true", '0'),
            ('EVAL', "redis.setresp(3); return false", '0'),
            ('EVAL', 'redis.setresp(4)', '0'),
            ('EVAL', 'redis.setresp()', '0'),
            ('FLUSHALL',),
        ], proto=proto)


@test
def script_errors(t):
    t.compare([
        ('EVAL', 'return 1', '2', 'a'),
        ('EVAL', 'return 1', '-1'),
        ('EVAL', 'return 1', 'x'),
        ('EVAL', 'return 1'),
        ('EVALSHA', 'ffffffffffffffffffffffffffffffffffffffff', '0'),
        ('EVALSHA', 'short', '0'),
        ('EVAL', "return 'a' ..", '0'),
        ('EVAL', "error('boom')", '0'),
        ('EVAL', "error({err='MY boom'})", '0'),
        ('EVAL', "return redis.call('nosuch')", '0'),
        ('EVAL', "return redis.call('set', 'k')", '0'),
        ('EVAL', "return redis.call()", '0'),
        ('EVAL', "return redis.call({})", '0'),
        ('EVAL', "return redis.call('incr', 'str')", '0'),
        ('SET', 'str', 'x'),
        ('EVAL', "return redis.call('incr', 'str')", '0'),
        ('EVAL', "return redis.call('multi')", '0'),
        ('EVAL', "return redis.call('eval', 'return 1', 0)", '0'),
        ('EVAL', "return redis.call('subscribe', 'c')", '0'),
        ('EVAL', "return redis.log(redis.LOG_WARNING)", '0'),
        ('EVAL', "return redis.log('x', 'y')", '0'),
        # (redis.log(99, 'y'): 7.0 says "Invalid debug level.", 8.8 "Invalid log level.")
        ('EVAL', "redis.log(redis.LOG_NOTICE, 'from a script'); return 1", '0'),
        ('EVAL', 'redis.set_repl(99)', '0'),
        ('EVAL', 'redis.set_repl(redis.REPL_ALL); return 1', '0'),
        ('EVAL', 'return redis.error_reply(1, 2)', '0'),
        ('FLUSHALL',),
    ])


@test
def sandbox(t):
    t.compare([
        ('EVAL', 'return a', '0'),
        ('EVAL', 'a = 5', '0'),
        ('EVAL', 'KEYS = 1', '0'),
        ('EVAL', 'redis.call = nil', '0'),
        ('EVAL', 'redis.x = 1', '0'),
        ('EVAL', "string.x = 1", '0'),
        ('EVAL', "print('x')", '0'),
        ('EVAL', "return loadfile('/etc/passwd')", '0'),
        ('EVAL', "return dofile('/etc/passwd')", '0'),
        ('EVAL', "return io.open('/etc/passwd')", '0'),
        ('EVAL', 'return debug.getinfo(1)', '0'),
        ('EVAL', 'return _G.nosuch', '0'),
        ('EVAL', "setmetatable(_G, {})", '0'),
        ('EVAL', "local g = getmetatable(_G); g.__index = {}", '0'),
        ('EVAL', "rawset(_G, 'x', 1)", '0'),
        ('EVAL', "getmetatable('').__index = {}", '0'),
        ('EVAL', "return loadstring(string.dump(function() return 1 end))()", '0'),
        ('EVAL', "return {unpack({1, 2, 3}, -2, 2147483647)}", '0'),
        ('EVAL', "return bit.tohex(65535, -2147483648)", '0'),
        ('EVAL', "local n = 0; for k, v in pairs(redis) do n = n + 1 end; return n > 10",
         '0'),
        ('EVAL', "local f = function() x = 1 end; f()", '0'),
        ('EVAL', "math.randomseed(1); return {math.random(100), math.random(100)}", '0'),
        ('EVAL', "return tostring(math.random()) ~= nil", '0'),
    ])


@test
def shebang_flags_and_read_only(t):
    t.compare([
        ('EVAL', '#!lua flags=no-writes\nreturn redis.call("set", "x", 1)', '0'),
        ('EVAL', '#!lua flags=no-writes\nreturn redis.call("get", "x")', '0'),
        ('EVAL', '#!lua\nreturn redis.call("set", "x", 1)', '0'),
        ('EVAL', '#!lua flags=allow-oom,no-writes\nreturn 1', '0'),
        ('EVAL', '#!lua flags=foo\nreturn 1', '0'),
        ('EVAL', '#!lua foo=bar\nreturn 1', '0'),
        ('EVAL', '#!python\nreturn 1', '0'),
        ('EVAL', '#!lua', '0'),
        ('EVAL', '#!lua\nerror("line two")', '0'),
        ('EVAL_RO', "return redis.call('get', 'x')", '0'),
        ('EVAL_RO', "return redis.call('set', 'x', 2)", '0'),
        ('EVAL_RO', "return redis.call('publish', 'c', 'm')", '0'),
        ('EVAL_RO', '#!lua\nreturn 1', '0'),
        ('EVAL_RO', '#!lua flags=no-writes\nreturn 1', '0'),
        ('SCRIPT', 'LOAD', "return redis.call('get', 'x')"),
        ('EVALSHA_RO', 'cc7b5ba2b6ae3fdb1c71cdf38c4a1dbb4b545b8d', '0'),
        ('FLUSHALL',),
    ])


@test
def script_commands(t):
    t.compare([
        ('SCRIPT', 'FLUSH'),
        ('SCRIPT', 'LOAD', "return 'hello'"),
        ('SCRIPT', 'EXISTS', '1b936e3fe509bcbc9cd0664897bbe8fd0cac101b', 'nope',
         '1B936E3FE509BCBC9CD0664897BBE8FD0CAC101B'),
        ('EVALSHA', '1b936e3fe509bcbc9cd0664897bbe8fd0cac101b', '0'),
        ('EVALSHA', '1B936E3FE509BCBC9CD0664897BBE8FD0CAC101B', '0'),
        ('SCRIPT', 'LOAD', "return 'a' .."),
        ('SCRIPT', 'LOAD'),
        ('SCRIPT', 'EXISTS'),
        ('SCRIPT', 'FLUSH', 'ASYNC'),
        ('SCRIPT', 'EXISTS', '1b936e3fe509bcbc9cd0664897bbe8fd0cac101b'),
        ('EVALSHA', '1b936e3fe509bcbc9cd0664897bbe8fd0cac101b', '0'),
        ('SCRIPT', 'FLUSH', 'SYNC'),
        ('SCRIPT', 'FLUSH', 'NOW'),
        ('SCRIPT', 'FLUSH', 'SYNC', 'x'),
        ('EVAL', 'return 1', '0'),
        ('SCRIPT', 'EXISTS', 'e0e1f9fabfc9d4800c877a703b823ac0578ff8db'),
        ('SCRIPT', 'HELP'),
        ('SCRIPT', 'NOSUCH'),
        ('COMMAND', 'GETKEYS', 'EVAL', 'return 1', '2', 'a', 'b', 'c'),
        ('COMMAND', 'GETKEYS', 'EVAL', 'return 1', '0'),
        ('COMMAND', 'GETKEYS', 'EVALSHA_RO', 'x', '1', 'a'),
    ])


@test
def select_in_script_stays_in_script(t):
    t.compare([
        ('EVAL', "redis.call('select', 2); redis.call('set', 'k', 'db2'); "
                 "return redis.call('get', 'k')", '0'),
        ('GET', 'k'),
        ('SELECT', '2'),
        ('GET', 'k'),
        ('SELECT', '0'),
        ('EVAL', "redis.call('select', 99)", '0'),
        ('FLUSHALL',),
    ])


@test
def sort_and_blocking_in_scripts(t):
    t.compare([
        ('SADD', 's', 'c', 'a', 'b', 'aa'),
        ('EVAL', "return redis.call('sort', 's', 'by', 'nokey', 'alpha')", '0'),
        ('EVAL', "return redis.call('sort', 's', 'alpha')", '0'),
        ('FLUSHALL',),
    ])


@test
@xkv_only
def blocking_commands_do_not_block(t):
    # Redis 8 runs them (7.0 refused them as noscript): nil, not blocked.
    with t.sut.client() as c:
        assert c.cmd('EVAL', "return redis.pcall('blpop', 'l', 0)", '0') == b'$-1\r\n'
        c.cmd('RPUSH', 'l', 'x')
        assert c.cmd('EVAL', "return redis.call('blpop', 'l', 0)", '0') == \
            b'*2\r\n$1\r\nl\r\n$1\r\nx\r\n'


@test
def info_memory_counts_scripts(t):
    def run(srv):
        with srv.client() as c:
            c.cmd('SCRIPT', 'FLUSH')
            for i in range(5):
                c.cmd('SCRIPT', 'LOAD', 'return %d' % i)
            info = c.call('INFO', 'memory').decode()
            n = [ln for ln in info.split('\r\n') if ln.startswith('number_of_cached_scripts:')]
            c.cmd('SCRIPT', 'FLUSH')
            info = c.call('INFO', 'memory').decode()
            m = [ln for ln in info.split('\r\n') if ln.startswith('number_of_cached_scripts:')]
            return n, m
    n, m = t.same(run, 'number_of_cached_scripts')
    assert n == ['number_of_cached_scripts:5'] and m == ['number_of_cached_scripts:0'], (n, m)


@test
def scripts_loaded_on_one_connection_run_on_another(t):
    def run(srv):
        out = []
        with srv.client() as a:
            out.append(a.cmd('SCRIPT', 'LOAD', "return redis.call('incr', KEYS[1])"))
        for _ in range(4):
            with srv.client() as b:
                out.append(b.cmd('EVALSHA', out[0][5:45].decode(), '1', 'ctr'))
        with srv.client() as c:
            c.cmd('FLUSHALL')
        return out
    t.same(run, 'EVALSHA across connections')


@test
def redis_py_lock(t):
    """redis-py's Lock acquires, extends and releases with EVALSHA scripts."""
    r = redis.Redis(host=HOST, port=t.sut.port, socket_timeout=10)
    try:
        lock = r.lock('resource', timeout=10)
        assert lock.acquire(blocking=False)
        other = r.lock('resource', timeout=10)
        assert not other.acquire(blocking=False)
        assert lock.owned() and lock.locked()
        assert lock.extend(5)
        assert 10000 < r.pttl('resource') <= 15000, r.pttl('resource')
        assert lock.reacquire()
        assert r.pttl('resource') > 9000
        lock.release()
        assert not lock.locked()
        assert other.acquire(blocking=False)
        stale = r.lock('resource', timeout=10)
        stale.local.token = b'not-the-owner'
        try:
            stale.release()
        except redis.exceptions.LockNotOwnedError:
            pass
        else:
            raise AssertionError('releasing a lock owned by another succeeded')
        other.release()
    finally:
        r.flushall()
        r.close()



@test
def redis_py_lock_contention(t):
    """8 threads take turns on one redis-py Lock (acquire blocking, a
    read-modify-write of a counter with GET and SET, release): the holder is
    never shared and no increment is lost."""
    threads, rounds = 8, 25
    holders, peak, errors = [0], [0], []
    guard = threading.Lock()
    admin = redis.Redis(host=HOST, port=t.sut.port, socket_timeout=10)
    admin.set('lock-counter', 0)

    def worker():
        r = redis.Redis(host=HOST, port=t.sut.port, socket_timeout=10)
        try:
            for _ in range(rounds):
                lock = r.lock('lock-resource', timeout=10, sleep=0.001, blocking_timeout=60)
                if not lock.acquire():
                    errors.append('acquire timed out')
                    return
                with guard:
                    holders[0] += 1
                    peak[0] = max(peak[0], holders[0])
                v = int(r.get('lock-counter'))
                r.set('lock-counter', v + 1)
                with guard:
                    holders[0] -= 1
                lock.release()
        except Exception as e:  # reported below, a thread cannot raise to the test
            errors.append(repr(e))
        finally:
            r.close()

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    try:
        for th in pool:
            th.start()
        for th in pool:
            th.join(120)
        assert not any(th.is_alive() for th in pool), 'a lock thread hung'
        assert not errors, errors
        assert peak[0] == 1, 'two holders at once: %d' % peak[0]
        assert int(admin.get('lock-counter')) == threads * rounds, admin.get('lock-counter')
        assert not admin.exists('lock-resource')
    finally:
        admin.flushall()
        admin.close()


@test
def ioredis_define_command(t):
    """ioredis's defineCommand (tests/clients/define_command.js): EVALSHA,
    the EVAL fallback after SCRIPT FLUSH, pipelines, MULTI, errors."""
    node = shutil.which('node')
    assert node, 'node is not installed (make deps)'
    assert os.path.isdir(os.path.join(REPO, 'clients', 'node', 'node_modules', 'ioredis')), \
        'clients/node/node_modules is missing (make deps runs npm ci)'
    script = os.path.join(REPO, 'tests', 'clients', 'define_command.js')
    p = subprocess.run([node, script, '--port', str(t.sut.port)], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, 'defineCommand run failed (rc %d):\n%s\n%s' % (
        p.returncode, p.stdout[-3000:], p.stderr[-3000:])
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out['ok'] and out['multi'] == ['13', '23'], out

@test
@xkv_only
def effects_propagate_as_commands_in_multi(t):
    """A script's writes enter the stream as themselves, wrapped in MULTI/EXEC
    when there is more than one, as Redis 7+ replicates effects; reads and
    EVAL itself do not appear."""
    log = os.path.join(t.sut.dir, 'propagation-script-%d.log' % os.getpid())
    os.environ['XKV_DEBUG_PROPAGATION_LOG'] = log
    try:
        a = t.spawn('sut')
    finally:
        del os.environ['XKV_DEBUG_PROPAGATION_LOG']
    with a.client() as c:
        c.cmd('EVAL', "redis.call('set', 'a', '1'); redis.call('get', 'a'); "
                      "redis.call('incr', 'a'); return 1", '0')
        c.cmd('EVAL', "return redis.call('lpush', KEYS[1], 'x')", '1', 'l')
        c.cmd('EVAL', "return redis.call('get', 'a')", '0')
    a.stop()
    with open(log, 'rb') as fh:
        stream = fh.read()
    # MULTI goes before the SELECT it carries, as Redis 7+ sends it.
    want = (b'*1\r\n$5\r\nMULTI\r\n'
            b'*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n'
             b'*3\r\n$3\r\nset\r\n$1\r\na\r\n$1\r\n1\r\n'
             b'*2\r\n$4\r\nincr\r\n$1\r\na\r\n'
             b'*1\r\n$4\r\nEXEC\r\n'
             b'*3\r\n$5\r\nlpush\r\n$1\r\nl\r\n$1\r\nx\r\n')
    assert stream == want, stream


LIB = ("#!lua name=mylib\n"
       "redis.register_function('f1', function(keys, args) "
       "return redis.call('set', keys[1], args[1]) end)\n")
LIB2 = ("#!lua name=lib2\n"
        "redis.register_function{function_name='f2', callback=function(keys, args) "
        "return {keys, args} end, flags={'no-writes', 'allow-oom'}, description='d'}\n")


@test
def functions(t):
    for proto in (2, 3):
        t.compare([
            ('FUNCTION', 'FLUSH'),
            ('FUNCTION', 'LOAD', LIB),
            ('FUNCTION', 'LOAD', LIB2),
            ('FCALL', 'f1', '1', 'k', 'v'),
            ('GET', 'k'),
            ('FCALL', 'f2', '2', 'a', 'b', 'c'),
            ('FCALL_RO', 'f1', '1', 'k', 'v'),
            ('FCALL_RO', 'f2', '0'),
            ('FCALL', 'nosuch', '0'),
            ('FCALL', 'f1', '-1'),
            ('FCALL', 'f1', '3', 'a'),
            ('FUNCTION', 'LIST', 'LIBRARYNAME', 'my*'),
            ('FUNCTION', 'LIST', 'WITHCODE', 'LIBRARYNAME', 'lib2'),
            ('FUNCTION', 'LIST', 'LIBRARYNAME'),
            ('FUNCTION', 'LIST', 'BOGUS'),
            ('FUNCTION', 'STATS'),
            ('FUNCTION', 'LOAD', LIB),
            ('FUNCTION', 'LOAD', 'REPLACE', LIB),
            ('FUNCTION', 'LOAD', 'BOGUS', LIB),
            ('FUNCTION', 'LOAD', 'REPLACE'),
            ('FUNCTION', 'LOAD', "#!lua name=x\nredis.call('ping')"),
            ('FUNCTION', 'LOAD', "#!lua name=x\nstring.len('a')"),
            ('FUNCTION', 'LOAD', "#!lua name=x\nx = 1"),
            ('FUNCTION', 'LOAD', 'return 1'),
            ('FUNCTION', 'LOAD', '#!js name=x\nreturn 1'),
            ('FUNCTION', 'LOAD', '#!lua\nreturn 1'),
            ('FUNCTION', 'LOAD', '#!lua name=x foo=bar\nreturn 1'),
            ('FUNCTION', 'LOAD', '#!lua name=x name=y\nreturn 1'),
            ('FUNCTION', 'LOAD', '#!lua name=a-b\nreturn 1'),
            ('FUNCTION', 'LOAD', "#!lua name=x\nredis.register_function('f1', "
                                 "function() return 1 end)"),
            ('FUNCTION', 'LOAD', '#!lua name=x\nreturn'),
            ('FUNCTION', 'LOAD', '#!lua name=x\nreturn 1 +'),
            ('FUNCTION', 'LOAD', "#!lua name=x\nredis.register_function{function_name='h', "
                                 "callback=function() return 1 end, flags={'bad'}}"),
            ('FUNCTION', 'LOAD', "#!lua name=x\nredis.register_function('h')"),
            ('FUNCTION', 'LOAD', "#!lua name=x\nredis.register_function{callback=print}"),
            ('FUNCTION', 'LOAD', "#!lua name=x\nredis.register_function('a b', "
                                 "function() return 1 end)"),
            ('FUNCTION', 'LOAD', "#!lua name=y\nredis.register_function('g', "
                                 "function() return a end)"),
            ('FCALL', 'g', '0'),
            ('EVAL', "return redis.register_function('z', function() end)", '0'),
            ('FUNCTION', 'DELETE', 'mylib'),
            ('FUNCTION', 'DELETE', 'mylib'),
            ('FCALL', 'f1', '1', 'k', 'v'),
            ('SCRIPT', 'FLUSH'),
            ('FCALL', 'f2', '0'),
            ('FUNCTION', 'FLUSH', 'BOGUS'),
            ('FUNCTION', 'FLUSH', 'ASYNC'),
            ('FUNCTION', 'LIST'),
            ('FUNCTION', 'HELP'),
            ('FLUSHALL',),
        ], proto=proto)
