# SPDX-License-Identifier: GPL-2.0-only
"""The rest of persistence: save points, MISCONF, SHUTDOWN and SIGTERM
saving, DEBUG RELOAD / LOADAOF, and the multi-part AOF (manifest, base and
incremental files, appendfsync, BGREWRITEAOF, truncated files), with files
exchanged both ways with a real Redis 8.8 when it is built."""

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from harness import (Client, ConnectionClosed, Server, decode, encode, info_fields, test,
                     wait_until, xkv_only)

REDIS_88 = os.environ.get('XKV_REDIS_88', '/work/peers/redis-8.8.0/src/redis-server')


def xkvd(t, directory, **directives):
    """An xkvd of this test's own in directory (not removed by close())."""
    d = {'dir': directory}
    d.update(directives)
    srv = Server('xkvd', binary=t.env.xkvd, engine=t.engine, directives=d)
    return srv.start()


def finish(srv):
    """Stop srv without removing the directory its directives name."""
    srv.stop()
    shutil.rmtree(srv.dir, ignore_errors=True)
    srv.dir = None


def persistence(srv):
    return info_fields(srv.call('INFO', 'persistence'))['persistence']


def manifest(directory):
    with open(os.path.join(directory, 'appendonlydir', 'appendonly.aof.manifest')) as f:
        return f.read()


def digest(srv):
    return srv.call('DEBUG', 'DIGEST')


def fill(srv):
    with srv.client() as c:
        c.call('SET', 's', 'v')
        c.call('SET', 'n', '12')
        c.call('INCR', 'n')
        c.call('SET', 'ttl', 'x', 'EX', '1000')
        c.call('RPUSH', 'l', 'a', 'b', 'c')
        c.call('SADD', 'set', '1', '2', 'x')
        c.call('ZADD', 'z', '1.5', 'a', '2', 'b')
        c.call('HSET', 'h', 'f', 'v', 'g', 'w')
        c.call('SELECT', '2')
        c.call('SET', 'in2', 'yes')
        c.call('MULTI')
        c.call('LPUSH', 'tx', 'a')
        c.call('LPUSH', 'tx', 'b')
        c.call('EXEC')


@test
@xkv_only
def save_points_config_format_and_a_triggered_bgsave(t):
    tmp = tempfile.mkdtemp(prefix='xkv-it-savepoints-')
    try:
        a = xkvd(t, tmp)
        assert a.call('CONFIG', 'GET', 'save') == [b'save', b'3600 1 300 100 60 10000']
        assert a.call('CONFIG', 'SET', 'save', '') == b'OK'
        assert a.call('CONFIG', 'GET', 'save') == [b'save', b'']
        assert a.call('CONFIG', 'SET', 'save', '1 1 100 x') != b'OK'
        assert a.call('CONFIG', 'SET', 'save', '1 1') == b'OK'
        assert a.call('CONFIG', 'GET', 'save') == [b'save', b'1 1']
        a.call('SET', 'k', 'v')
        # One change and more than a second since the last save: the cron saves.
        assert wait_until(lambda: b'1 changes in 1 seconds. Saving...' in a.log_bytes(), 10)
        assert wait_until(lambda: persistence(a)['rdb_changes_since_last_save'] == '0', 10)
        assert os.path.exists(os.path.join(tmp, 'dump.rdb'))
        finish(a)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@test
@xkv_only
def a_failed_bgsave_refuses_writes_with_misconf(t):
    tmp = tempfile.mkdtemp(prefix='xkv-it-misconf-')
    sub = os.path.join(tmp, 'gone')
    os.mkdir(sub)
    try:
        a = xkvd(t, sub, **{'enable-protected-configs': 'yes'})
        a.call('SET', 'k', 'v')
        # The working directory disappears: the child cannot create its file.
        os.rmdir(sub)
        assert a.call('BGSAVE') == b'Background saving started'
        assert wait_until(lambda: persistence(a)['rdb_last_bgsave_status'] == 'err', 10)
        with a.client() as c:
            assert c.cmd('SET', 'k', 'w').startswith(b'-MISCONF Redis is configured to save')
            assert c.cmd('PING').startswith(b'-MISCONF')
            assert c.cmd('GET', 'k') == b'$1\r\nv\r\n'
            # stop-writes-on-bgsave-error no lets writes through.
            assert c.call('CONFIG', 'SET', 'stop-writes-on-bgsave-error', 'no') == b'OK'
            assert c.call('SET', 'k', 'w') == b'OK'
            assert c.call('CONFIG', 'SET', 'stop-writes-on-bgsave-error', 'yes') == b'OK'
            # A good save clears it.
            os.mkdir(os.path.join(tmp, 'back'))
            assert c.call('CONFIG', 'SET', 'dir', os.path.join(tmp, 'back')) == b'OK'
            assert c.call('BGSAVE') == b'Background saving started'
            assert wait_until(lambda: persistence(a)['rdb_last_bgsave_status'] == 'ok', 10)
            assert c.call('SET', 'k', 'x') == b'OK'
        with a.client() as c:
            c.send('SHUTDOWN', 'NOSAVE')
            assert c.read_until_close(10) == (b'', True)
        a.proc.wait(10)
        a.dir = None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@test
@xkv_only
def sigterm_saves_when_save_points_exist(t):
    tmp = tempfile.mkdtemp(prefix='xkv-it-sigterm-')
    try:
        a = xkvd(t, tmp)
        a.call('SET', 'k', 'kept')
        os.kill(a.proc.pid, signal.SIGTERM)
        assert a.proc.wait(10) == 0
        assert b'Saving the final RDB snapshot before exiting.' in a.log_bytes()
        b = xkvd(t, tmp)
        assert b.call('GET', 'k') == b'kept'
        # With save "" a signal saves nothing.
        assert b.call('CONFIG', 'SET', 'save', '') == b'OK'
        b.call('SET', 'k', 'lost')
        os.kill(b.proc.pid, signal.SIGTERM)
        assert b.proc.wait(10) == 0
        c = xkvd(t, tmp)
        assert c.call('GET', 'k') == b'kept'
        finish(c)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@test
@xkv_only
def shutdown_variants(t):
    tmp = tempfile.mkdtemp(prefix='xkv-it-shutdown-')
    try:
        a = xkvd(t, tmp, save='')
        with a.client() as c:
            assert c.cmd('SHUTDOWN', 'ABORT') == b'-ERR No shutdown in progress.\r\n'
            assert c.cmd('SHUTDOWN', 'SAVE', 'NOSAVE') == b'-ERR syntax error\r\n'
            assert c.cmd('SHUTDOWN', 'ABORT', 'NOW') == b'-ERR syntax error\r\n'
            assert c.cmd('SHUTDOWN', 'BOGUS') == b'-ERR syntax error\r\n'
        a.call('SET', 'k', 'v1')
        # SAVE saves even with no save points; the connection just closes.
        with a.client() as c:
            c.send('SHUTDOWN', 'SAVE', 'NOW')
            assert c.read_until_close(10) == (b'', True)
        assert a.proc.wait(10) == 0
        b = xkvd(t, tmp)
        assert b.call('GET', 'k') == b'v1'
        b.call('SET', 'k', 'v2')
        # NOSAVE: save points exist, and yet nothing is written.
        with b.client() as c:
            c.send('SHUTDOWN', 'NOSAVE')
            assert c.read_until_close(10) == (b'', True)
        assert b.proc.wait(10) == 0
        c2 = xkvd(t, tmp, **{'enable-protected-configs': 'yes'})
        assert c2.call('GET', 'k') == b'v1'
        # A save that fails keeps the server up, unless FORCE.
        sub = os.path.join(tmp, 'gone')
        os.mkdir(sub)
        assert c2.call('CONFIG', 'SET', 'dir', sub) == b'OK'
        os.rmdir(sub)
        with c2.client() as c:
            assert c.cmd('SHUTDOWN') == b'-ERR Errors trying to SHUTDOWN. Check logs.\r\n'
            assert c.call('PING') == b'PONG'
            c.send('SHUTDOWN', 'FORCE')
            assert c.read_until_close(10) == (b'', True)
        assert c2.proc.wait(10) == 0
        assert b'Error trying to save the DB. Exit anyway.' in c2.log_bytes()
        c2.dir = None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@test
@xkv_only
def debug_reload_keeps_the_digest(t):
    a = t.spawn('sut')
    fill(a)
    before = digest(a)
    assert before != b'0' * 40
    assert a.call('DEBUG', 'RELOAD') == b'OK'
    assert digest(a) == before
    with a.client() as c:
        assert c.cmd('DEBUG', 'RELOAD', 'BAD') == (
            b'-ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.\r\n')
    # NOSAVE loads the file as it is: a key set since is gone.
    a.call('SET', 'extra', '1')
    assert a.call('DEBUG', 'RELOAD', 'NOSAVE') == b'OK'
    assert digest(a) == before
    # NOFLUSH MERGE keeps what the file lacks.
    a.call('SET', 'extra', '1')
    assert a.call('DEBUG', 'RELOAD', 'NOSAVE', 'NOFLUSH', 'MERGE') == b'OK'
    assert a.call('GET', 'extra') == b'1'


@test
@xkv_only
def aof_restart_keeps_data_everysec_and_always(t):
    for policy in ('everysec', 'always', 'no'):
        tmp = tempfile.mkdtemp(prefix='xkv-it-aof-')
        try:
            a = xkvd(t, tmp, appendonly='yes', appendfsync=policy, save='')
            fill(a)
            before = digest(a)
            text = manifest(tmp)
            assert text == ('file appendonly.aof.1.base.rdb seq 1 type b\n'
                            'file appendonly.aof.1.incr.aof seq 1 type i\n'), text
            finish(a)
            b = xkvd(t, tmp, appendonly='yes', appendfsync=policy, save='')
            assert digest(b) == before, policy
            assert b.call('TTL', 'ttl') > 900
            assert b'DB loaded from append only file' in b.log_bytes()
            finish(b)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


@test
@xkv_only
def kill_9_after_acknowledged_writes_with_always_loses_nothing(t):
    tmp = tempfile.mkdtemp(prefix='xkv-it-aof-kill-')
    try:
        a = xkvd(t, tmp, appendonly='yes', appendfsync='always', save='')
        acked = []
        with a.client() as c:
            for i in range(300):
                assert c.call('SET', 'k%d' % i, 'v%d' % i) == b'OK'
                acked.append(i)
            # Pipelined too: every reply read is an acknowledged write.
            c.send_raw(b''.join(encode(('INCR', 'counter')) for _ in range(200)))
            assert c.read_replies(200).endswith(b':200\r\n')
        os.kill(a.proc.pid, signal.SIGKILL)
        a.proc.wait(10)
        b = xkvd(t, tmp, appendonly='yes', save='')
        with b.client() as c:
            for i in acked:
                assert c.call('GET', 'k%d' % i) == b'v%d' % i
            assert c.call('GET', 'counter') == b'200'
        finish(b)
        a.dir = None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _acked_writer(port, name, pipeline, acked, stop):
    """INCRs its own counter until the server dies, pipeline at a time;
    acked[name] is the highest value a reply acknowledged."""
    try:
        with Client(port) as c:
            while not stop.is_set():
                c.send_raw(b''.join(encode(('INCR', name)) for _ in range(pipeline)))
                for _ in range(pipeline):
                    acked[name] = decode(c.read_reply())
    except (OSError, ConnectionClosed, ValueError):
        pass


def _acked_reader(port, names, seen, stop):
    """GETs the writers' counters: a value a reply showed must survive too,
    though another connection wrote it."""
    try:
        with Client(port) as c:
            while not stop.is_set():
                for n in names:
                    v = c.call('GET', n)
                    if v is not None:
                        seen[n] = max(seen.get(n, 0), int(v))
    except (OSError, ConnectionClosed, ValueError):
        pass


@test
@xkv_only
def kill_9_during_a_write_load_with_always_loses_no_acknowledged_write(t):
    # Group commit: replies are held until their sync while the workers go
    # on. Four writers (two pipelined) and a reader on both workers; every
    # value a reply showed, to its writer or the reader, is there after a
    # kill -9 in the middle of the load.
    names = ['w%d' % i for i in range(4)]
    for trial in range(3):
        tmp = tempfile.mkdtemp(prefix='xkv-it-aof-kill-load-')
        try:
            a = xkvd(t, tmp, appendonly='yes', appendfsync='always', save='')
            acked, seen, stop = {}, {}, threading.Event()
            threads = [threading.Thread(target=_acked_writer,
                                        args=(a.port, n, 16 if i % 2 else 1, acked, stop))
                       for i, n in enumerate(names)]
            threads.append(threading.Thread(target=_acked_reader,
                                            args=(a.port, names, seen, stop)))
            for th in threads:
                th.start()
            assert wait_until(lambda: len(acked) == len(names), 10)
            time.sleep(0.2 + 0.1 * trial)
            os.kill(a.proc.pid, signal.SIGKILL)
            a.proc.wait(10)
            stop.set()
            for th in threads:
                th.join(10)
            a.dir = None
            b = xkvd(t, tmp, appendonly='yes', save='')
            with b.client() as c:
                for n in names:
                    got = int(c.call('GET', n) or 0)
                    assert got >= acked.get(n, 0), (trial, n, got, acked)
                    assert got >= seen.get(n, 0), (trial, n, got, seen)
            finish(b)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


@test
@xkv_only
def a_truncated_aof_loads_with_aof_load_truncated_and_not_without(t):
    tmp = tempfile.mkdtemp(prefix='xkv-it-aof-trunc-')
    try:
        a = xkvd(t, tmp, appendonly='yes', save='')
        a.call('SET', 'a', '1')
        a.call('SET', 'b', '2')
        finish(a)
        incr = os.path.join(tmp, 'appendonlydir', 'appendonly.aof.1.incr.aof')
        with open(incr, 'ab') as f:
            f.write(b'*3\r\n$3\r\nSET\r\n$1\r\nc\r\n$1')    # a torn record
        srv = Server('xkvd', binary=t.env.xkvd, engine=t.engine,
                     directives={'dir': tmp, 'appendonly': 'yes', 'save': '',
                                 'aof-load-truncated': 'no'})
        try:
            srv.start()
            started = True
        except RuntimeError as e:
            started = False
            assert 'Unexpected end of file reading the append only file' in str(e), e
        srv.dir = None
        srv.close()
        assert not started
        b = xkvd(t, tmp, appendonly='yes', save='')
        assert b.call('MGET', 'a', 'b', 'c') == [b'1', b'2', None]
        assert b'!!! Truncating the AOF appendonly.aof.1.incr.aof at offset' in b.log_bytes()
        b.call('SET', 'c', '3')
        finish(b)
        c = xkvd(t, tmp, appendonly='yes', save='')
        assert c.call('MGET', 'a', 'b', 'c') == [b'1', b'2', b'3']
        finish(c)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@test
@xkv_only
def bgrewriteaof_rotates_and_aof_wins_over_rdb(t):
    tmp = tempfile.mkdtemp(prefix='xkv-it-aof-rw-')
    try:
        a = xkvd(t, tmp, save='')
        a.call('SET', 'rdbonly', '1')
        assert a.call('SAVE') == b'OK'
        # appendonly yes at run time: a rewrite writes the first base.
        assert a.call('CONFIG', 'SET', 'appendonly', 'yes') == b'OK'
        assert wait_until(lambda: persistence(a)['aof_rewrites'] == '1', 10)
        assert manifest(tmp) == ('file appendonly.aof.2.base.rdb seq 2 type b\n'
                                 'file appendonly.aof.1.incr.aof seq 1 type i\n') or \
            'type b' in manifest(tmp)
        a.call('SET', 'k', 'v')
        assert a.call('BGREWRITEAOF') == b'Background append only file rewriting started'
        assert wait_until(lambda: persistence(a)['aof_rewrites'] == '2', 10)
        a.call('SET', 'after', 'rw')
        files = sorted(os.listdir(os.path.join(tmp, 'appendonlydir')))
        assert len(files) == 3, files
        fields = persistence(a)
        assert fields['aof_enabled'] == '1' and fields['aof_last_bgrewrite_status'] == 'ok'
        assert int(fields['aof_current_size']) > 0
        before = digest(a)
        a.call('DEBUG', 'LOADAOF')
        assert digest(a) == before
        a.call('DEL', 'rdbonly')
        assert a.call('SAVE') == b'OK'
        a.call('SET', 'rdbonly', 'back')
        finish(a)
        # appendonly yes: the AOF is read, the RDB file (without the key) not.
        b = xkvd(t, tmp, appendonly='yes', save='')
        assert b.call('GET', 'rdbonly') == b'back'
        assert b.call('GET', 'after') == b'rw'
        finish(b)
        c = xkvd(t, tmp, save='')
        assert c.call('GET', 'rdbonly') is None
        finish(c)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@test
@xkv_only
def aof_without_rdb_preamble_and_with_timestamps(t):
    tmp = tempfile.mkdtemp(prefix='xkv-it-aof-cmds-')
    try:
        a = xkvd(t, tmp, appendonly='yes', save='', **{'aof-use-rdb-preamble': 'no',
                                                       'aof-timestamp-enabled': 'yes'})
        fill(a)
        assert a.call('BGREWRITEAOF') == b'Background append only file rewriting started'
        assert wait_until(lambda: persistence(a)['aof_rewrites'] == '1', 10)
        a.call('SET', 'tail', '1')
        before = digest(a)
        d = os.path.join(tmp, 'appendonlydir')
        assert 'appendonly.aof.2.base.aof' in os.listdir(d)
        with open(os.path.join(d, 'appendonly.aof.2.base.aof'), 'rb') as f:
            base = f.read()
            assert base.startswith(b'#TS:') and b'\r\n*2\r\n$6\r\nSELECT\r\n' in base, base[:80]
        with open(os.path.join(d, 'appendonly.aof.2.incr.aof'), 'rb') as f:
            assert f.read(4) == b'#TS:'
        finish(a)
        b = xkvd(t, tmp, appendonly='yes', save='')
        assert digest(b) == before
        finish(b)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def redis88(directory, port_dirs=None):
    srv = Server('redis', redis_binary=REDIS_88, label='redis-8.8',
                 directives={'dir': directory, 'appendonly': 'yes'})
    return srv.start()


@test
@xkv_only
def redis_8_8_loads_our_aof_and_we_load_its(t):
    if not os.path.exists(REDIS_88):
        return
    tmp = tempfile.mkdtemp(prefix='xkv-it-aof-88-')
    try:
        a = xkvd(t, tmp, appendonly='yes', save='')
        fill(a)
        assert a.call('BGREWRITEAOF') == b'Background append only file rewriting started'
        assert wait_until(lambda: persistence(a)['aof_rewrites'] == '1', 10)
        a.call('SET', 'incr', 'part')
        a.call('EXPIRE', 's', '5000')
        ours = digest(a)
        finish(a)
        check = os.path.join(os.path.dirname(REDIS_88), 'redis-check-aof')
        if os.path.exists(check):
            out = subprocess.run([check, os.path.join(tmp, 'appendonlydir',
                                                      'appendonly.aof.manifest')],
                                 capture_output=True, timeout=30).stdout
            assert b'All AOF files and manifest are valid' in out, out
        r = redis88(tmp)
        assert r.call('DEBUG', 'DIGEST') == ours
        r.call('SET', 'from', 'redis')
        r.call('RPUSH', 'l', 'd')
        assert r.call('BGREWRITEAOF') == b'Background append only file rewriting started'
        assert wait_until(
            lambda: info_fields(r.call('INFO', 'persistence'))['persistence']['aof_rewrite_in_progress'] == '0'
            and info_fields(r.call('INFO', 'persistence'))['persistence']['aof_rewrites'] == '1', 10)
        r.call('SADD', 'set', 'after-rewrite')
        theirs = r.call('DEBUG', 'DIGEST')
        with r.client() as c:
            c.send('SHUTDOWN', 'NOSAVE')
            c.read_until_close(10)
        r.proc.wait(10)
        r.dir = None
        r.close()
        b = xkvd(t, tmp, appendonly='yes', save='')
        assert digest(b) == theirs
        assert b.call('SISMEMBER', 'set', 'after-rewrite') == 1
        finish(b)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@test
@xkv_only
def auto_aof_rewrite_on_growth(t):
    tmp = tempfile.mkdtemp(prefix='xkv-it-aof-auto-')
    try:
        a = xkvd(t, tmp, appendonly='yes', save='',
                 **{'auto-aof-rewrite-min-size': '1kb', 'auto-aof-rewrite-percentage': '100'})
        assert persistence(a)['aof_rewrites'] == '0'
        # Past the minimum size and twice the base: the cron rewrites.
        for i in range(40):
            a.call('SET', 'key:%d' % i, 'x' * 64)
        assert wait_until(lambda: persistence(a)['aof_rewrites'] == '1', 10)
        assert b'Starting automatic rewriting of AOF on' in a.log_bytes()
        fields = persistence(a)
        assert int(fields['aof_base_size']) > 500, fields
        finish(a)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@test
@xkv_only
def kill_9_under_everysec_loses_no_acknowledged_write(t):
    # Each write reaches the kernel before its reply: only a machine crash
    # could lose the last second.
    tmp = tempfile.mkdtemp(prefix='xkv-it-aof-kill-es-')
    try:
        a = xkvd(t, tmp, appendonly='yes', appendfsync='everysec', save='')
        with a.client() as c:
            c.send_raw(b''.join(encode(('RPUSH', 'l', str(i))) for i in range(500)))
            assert c.read_replies(500).endswith(b':500\r\n')
        os.kill(a.proc.pid, signal.SIGKILL)
        a.proc.wait(10)
        a.dir = None
        b = xkvd(t, tmp, appendonly='yes', save='')
        assert b.call('LLEN', 'l') == 500
        finish(b)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@test
@xkv_only
def a_full_disk_refuses_writes_with_misconf_and_recovers(t):
    tmp = tempfile.mkdtemp(prefix='xkv-it-aof-full-')
    mnt = os.path.join(tmp, 'small')
    os.mkdir(mnt)
    if subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=512k', 'xkv-it-%d' % os.getpid(),
                       mnt], capture_output=True).returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        return     # no mount here (not root, or a container without it)
    filler = os.path.join(mnt, 'filler')
    try:
        with open(filler, 'wb') as f:
            f.write(b'\0' * (256 * 1024))
        a = xkvd(t, mnt, appendonly='yes', save='')
        big = 'v' * 4096
        refused, acked = None, 0
        with a.client() as c:
            for i in range(200):
                reply = c.cmd('SET', 'k%d' % i, big)
                if reply != b'+OK\r\n':
                    refused = reply
                    break
                acked += 1
            assert refused is not None and refused.startswith(
                b'-MISCONF Errors writing to the AOF file: No space left on device'), refused
            assert persistence(a)['aof_last_write_status'] == 'err'
            assert c.cmd('GET', 'k0').startswith(b'$4096')
            # Room again: the cron writes what waited, and writes are taken again.
            os.unlink(filler)
            assert wait_until(lambda: persistence(a)['aof_last_write_status'] == 'ok', 10)
            assert c.call('SET', 'after', 'room') == b'OK'
        os.kill(a.proc.pid, signal.SIGKILL)
        a.proc.wait(10)
        a.dir = None
        # Every acknowledged write is in the file.
        b = xkvd(t, mnt, appendonly='yes', save='')
        assert b.call('DBSIZE') == acked + 1
        assert b.call('GET', 'after') == b'room'
        finish(b)
    finally:
        subprocess.run(['umount', mnt], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


@test
@xkv_only
def a_single_file_appendonly_aof_is_upgraded_to_the_multi_part_layout(t):
    tmp = tempfile.mkdtemp(prefix='xkv-it-aof-upgrade-')
    try:
        # What Redis 6 left: one appendonly.aof of commands in dir.
        with open(os.path.join(tmp, 'appendonly.aof'), 'wb') as f:
            f.write(encode(('SELECT', '0')) + encode(('SET', 'old', 'style')) +
                    encode(('RPUSH', 'l', 'a', 'b')) + encode(('SELECT', '3')) +
                    encode(('INCRBY', 'n', '5')))
        a = xkvd(t, tmp, appendonly='yes', save='')
        assert a.call('GET', 'old') == b'style' and a.call('LRANGE', 'l', 0, -1) == [b'a', b'b']
        assert b'Successfully migrated an old-style AOF file (appendonly.aof) into the AOF ' \
            b'directory (appendonlydir).' in a.log_bytes()
        assert not os.path.exists(os.path.join(tmp, 'appendonly.aof'))
        assert manifest(tmp) == ('file appendonly.aof seq 1 type b\n'
                                 'file appendonly.aof.1.incr.aof seq 1 type i\n'), manifest(tmp)
        a.call('SET', 'new', '1')
        finish(a)
        b = xkvd(t, tmp, appendonly='yes', save='')
        with b.client() as c:
            assert c.call('GET', 'new') == b'1' and c.call('GET', 'old') == b'style'
            c.call('SELECT', 3)
            assert c.call('GET', 'n') == b'5'
        # A rewrite replaces the old base like any other.
        assert b.call('BGREWRITEAOF') == b'Background append only file rewriting started'
        assert wait_until(lambda: persistence(b)['aof_rewrites'] == '1', 10)
        assert wait_until(lambda: 'appendonly.aof\n' not in
                          '\n'.join(os.listdir(os.path.join(tmp, 'appendonlydir'))) + '\n', 10)
        finish(b)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@test
@xkv_only
def aof_disable_auto_gc_keeps_history_until_turned_off(t):
    tmp = tempfile.mkdtemp(prefix='xkv-it-aof-gc-')
    try:
        a = xkvd(t, tmp, appendonly='yes', save='', **{'aof-disable-auto-gc': 'yes'})
        a.call('SET', 'k', '1')
        assert a.call('BGREWRITEAOF') == b'Background append only file rewriting started'
        assert wait_until(lambda: persistence(a)['aof_rewrites'] == '1', 10)
        d = os.path.join(tmp, 'appendonlydir')
        assert manifest(tmp) == ('file appendonly.aof.2.base.rdb seq 2 type b\n'
                                 'file appendonly.aof.1.incr.aof seq 1 type h\n'
                                 'file appendonly.aof.1.base.rdb seq 1 type h\n'
                                 'file appendonly.aof.2.incr.aof seq 2 type i\n'), manifest(tmp)
        assert {'appendonly.aof.1.base.rdb', 'appendonly.aof.1.incr.aof'} <= set(os.listdir(d))
        # The history survives a restart, and goes when auto-gc is on again.
        a.call('SET', 'k', '2')
        finish(a)
        b = xkvd(t, tmp, appendonly='yes', save='', **{'aof-disable-auto-gc': 'yes'})
        assert b.call('GET', 'k') == b'2' and 'type h' in manifest(tmp)
        assert b.call('CONFIG', 'SET', 'aof-disable-auto-gc', 'no') == b'OK'
        assert 'type h' not in manifest(tmp), manifest(tmp)
        assert not {'appendonly.aof.1.base.rdb', 'appendonly.aof.1.incr.aof'} & set(os.listdir(d))
        finish(b)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@test
@xkv_only
def a_base_without_the_rdb_preamble_carries_the_functions(t):
    tmp = tempfile.mkdtemp(prefix='xkv-it-aof-fn-')
    lib = "#!lua name=mylib\nredis.register_function('hello', function() return 'hi' end)"
    try:
        a = xkvd(t, tmp, appendonly='yes', save='', **{'aof-use-rdb-preamble': 'no'})
        assert a.call('FUNCTION', 'LOAD', lib) == b'mylib'
        a.call('SET', 'k', 'v')
        assert a.call('BGREWRITEAOF') == b'Background append only file rewriting started'
        assert wait_until(lambda: persistence(a)['aof_rewrites'] == '1', 10)
        with open(os.path.join(tmp, 'appendonlydir', 'appendonly.aof.2.base.aof'), 'rb') as f:
            base = f.read()
        assert base.startswith(b'*3\r\n$8\r\nFUNCTION\r\n$4\r\nLOAD\r\n$%d\r\n%s\r\n' % (
            len(lib), lib.encode())), base[:120]
        finish(a)
        b = xkvd(t, tmp, appendonly='yes', save='')
        assert b.call('FCALL', 'hello', 0) == b'hi' and b.call('GET', 'k') == b'v'
        finish(b)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@test
@xkv_only
def xadd_and_approximate_trims_replay_as_decided(t):
    """XADD * goes to the AOF with the ID it made, and MAXLEN/MINID ~ (with
    LIMIT) as the exact trim it came to, as Redis rewrites them: the replay
    rebuilds the same streams (same IDs, same lengths, same group lag)."""
    tmp = tempfile.mkdtemp(prefix='xkv-it-aof-xadd-')
    try:
        a = xkvd(t, tmp, appendonly='yes', save='', **{'stream-node-max-entries': '10'})
        a.call('XGROUP', 'CREATE', 's', 'g', '$', 'MKSTREAM')
        for i in range(60):
            a.call('XADD', 's', 'MAXLEN', '~', '25', 'LIMIT', '10', '*', 'f', str(i))
        for i in range(30):
            a.call('XADD', 'm', '*', 'f', str(i))
        a.call('XTRIM', 'm', 'MINID', '~', a.call('XRANGE', 'm', '-', '+')[15][0])
        a.call('XREADGROUP', 'GROUP', 'g', 'c', 'COUNT', '3', 'STREAMS', 's', '>')
        before = [a.call('XRANGE', k, '-', '+') for k in ('s', 'm')] + \
            [a.call('XINFO', 'GROUPS', 's')]
        a.call('DEBUG', 'LOADAOF')
        after = [a.call('XRANGE', k, '-', '+') for k in ('s', 'm')] + \
            [a.call('XINFO', 'GROUPS', 's')]
        assert after == before, (before, after)
        finish(a)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
