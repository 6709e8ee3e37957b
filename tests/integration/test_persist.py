# SPDX-License-Identifier: GPL-2.0-only
"""SAVE, BGSAVE, LASTSAVE and loading dump.rdb at start-up: xkvd reads back
what it wrote, and what redis-server 7.0 wrote (RDB version 10)."""

import os
import shutil
import time

from harness import info_fields, Server, test, wait_until, xkv_only
from test_dump import SETUP, build, content



def fill(srv, with_field_ttls):
    with srv.client() as c:
        for step in SETUP + [('SET', 'ttl', 'v', 'PX', '100000000')]:
            c.call(*step)
        if with_field_ttls:
            c.call('HSET', 'hx', 'a', '1', 'b', '2')
            c.call('HPEXPIREAT', 'hx', '4102444800000', 'FIELDS', '1', 'b')
            c.call('HPEXPIREAT', 'hbig', '4102444800000', 'FIELDS', '2', 'f3', 'f9')
        c.call('SELECT', '3')
        c.call('SET', 'other', 'db3')
        c.call('RPUSH', 'otherlist', 'x')


def snapshot(srv, field_ttls):
    """Every key of databases 0 and 3 with its value and deadline."""
    out = {}
    with srv.client() as c:
        for db in (0, 3):
            c.call('SELECT', db)
            for key in sorted(c.call('KEYS', '*')):
                t, v = content(c, key)
                extra = [c.call('PEXPIRETIME', key)]
                if t == b'hash' and field_ttls:
                    extra.append(c.call('HPEXPIRETIME', key, 'FIELDS', 3, 'b', 'f3', 'f9'))
                out[(db, key)] = (t, v, extra)
    return out


def restart_in(t, directory):
    """A fresh xkvd started in directory (so it loads its dump.rdb)."""
    return t.spawn('sut', dir=directory)


@test
@xkv_only
def save_then_start_up_loads_the_same_keys(t):
    a = t.spawn('sut')
    fill(a, True)
    before = snapshot(a, True)
    assert a.call('SAVE') == b'OK'
    assert os.path.getsize(os.path.join(a.dir, 'dump.rdb')) > 0
    with open(os.path.join(a.dir, 'dump.rdb'), 'rb') as f:
        assert f.read(9) == b'REDIS0014'
    b = restart_in(t, a.dir)
    assert snapshot(b, True) == before
    assert b.call('DBSIZE') == len([k for k in before if k[0] == 0])


@test
@xkv_only
def bgsave_forks_a_child_that_writes_the_file(t):
    a = t.spawn('sut')
    fill(a, True)
    before = snapshot(a, True)
    path = os.path.join(a.dir, 'dump.rdb')
    assert a.call('BGSAVE') == b'Background saving started'
    # A write after the fork does not reach the snapshot.
    a.call('SET', 'after', 'fork')
    assert wait_until(lambda: b'Background saving terminated with success' in a.log_bytes(), 10)
    copy = os.path.join(t.sut.dir, 'bgsave-copy')
    os.mkdir(copy)
    try:
        shutil.copy(path, copy)
        b = restart_in(t, copy)
        assert snapshot(b, True) == before
        b.stop()
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    assert a.call('BGSAVE', 'SCHEDULE') == b'Background saving started'
    assert wait_until(lambda: a.log_bytes().count(b'terminated with success') == 2, 10)
    # INFO persistence tells what the saves did, as Redis's does.
    def persistence():
        return info_fields(a.call('INFO', 'persistence'))['persistence']
    assert wait_until(lambda: persistence()['rdb_bgsave_in_progress'] == '0', 10)
    info = persistence()
    assert info['rdb_last_save_time'] == str(a.call('LASTSAVE')), info
    assert info['rdb_last_bgsave_status'] == 'ok' and int(info['rdb_saves']) >= 2, info
    assert info['rdb_changes_since_last_save'] == '0', info
    a.call('SET', 'one', 'more')
    a.call('DEL', 'after')
    info = persistence()
    assert info['rdb_changes_since_last_save'] == '2', info


@test
@xkv_only
def start_up_loads_a_file_redis_7_0_wrote(t):
    r = t.spawn('ref')
    fill(r, False)
    assert r.call('SAVE') == b'OK'
    with open(os.path.join(r.dir, 'dump.rdb'), 'rb') as f:
        assert f.read(9) == b'REDIS0010'
    x = restart_in(t, r.dir)
    assert snapshot(x, False) == snapshot(r, False)


@test
@xkv_only
def a_corrupt_file_stops_start_up(t):
    a = t.spawn('sut')
    a.call('RPUSH', 'l', *['e%d' % i for i in range(100)])
    assert a.call('SAVE') == b'OK'
    bad = os.path.join(t.sut.dir, 'bad')
    os.mkdir(bad)
    with open(os.path.join(a.dir, 'dump.rdb'), 'rb') as f:
        data = f.read()
    with open(os.path.join(bad, 'dump.rdb'), 'wb') as f:
        f.write(data[:len(data) // 2])
    srv = Server('xkvd', binary=t.env.xkvd, engine=t.engine, directives={'dir': bad})
    try:
        srv.start()
        started = True
    except RuntimeError as e:
        started = False
        assert 'exited at start' in str(e), e
        assert 'Short read or OOM loading DB' in str(e), e
    finally:
        srv.close()
        shutil.rmtree(bad, ignore_errors=True)
    assert not started


@test
def save_commands_replies(t):
    t.compare([
        ('SAVE', 'x'), ('BGSAVE', 'x'), ('BGSAVE', 'SCHEDULE', 'x'), ('LASTSAVE', 'x'),
        ('CONFIG', 'GET', 'dbfilename'),
        ('CONFIG', 'GET', 'rdbcompression'), ('CONFIG', 'GET', 'rdbchecksum'),
    ])
    for srv in (t.ref, t.sut):
        now = srv.call('TIME')[0]
        assert 0 <= int(now) - srv.call('LASTSAVE') < 3600, srv.label
        assert srv.call('SAVE') == b'OK'
        assert abs(srv.call('LASTSAVE') - int(srv.call('TIME')[0])) <= 1


@test
@xkv_only
def a_second_sigint_during_the_final_save_exits_at_once(t):
    import signal
    import stat
    a = t.spawn('sut')
    a.call('SET', 'k', 'v')
    # The final save's temporary file is a FIFO nobody reads: the save
    # blocks in open() until the second signal.
    fifo = os.path.join(a.dir, 'temp-%d.rdb' % a.proc.pid)
    os.mkfifo(fifo)
    os.kill(a.proc.pid, signal.SIGINT)
    assert wait_until(lambda: b'Saving the final RDB snapshot' in a.log_bytes(), timeout=5)
    time.sleep(0.2)
    assert a.alive()
    os.kill(a.proc.pid, signal.SIGTERM)            # only SIGINT insists, as Redis
    time.sleep(0.2)
    assert a.alive()
    os.kill(a.proc.pid, signal.SIGINT)
    assert a.proc.wait(5) == 1
    assert b'You insist... exiting now.' in a.log_bytes()
    assert not os.path.exists(fifo) and not os.path.exists(os.path.join(a.dir, 'dump.rdb'))


@test
@xkv_only
def the_fork_children_report_their_copy_on_write(t):
    a = t.spawn('sut')
    info = info_fields(a.call('INFO', 'persistence'))['persistence']
    assert (info['rdb_last_cow_size'], info['aof_last_cow_size'], info['current_cow_size']) == \
        ('0', '0', '0')
    a.call('DEBUG', 'POPULATE', 20000, 'key', 100)
    assert a.call('BGSAVE') == b'Background saving started'
    with a.client() as c:                       # writes while the child runs
        for i in range(2000):
            c.call('SET', 'key:%d' % i, 'x' * 100)
    assert wait_until(lambda: info_fields(a.call('INFO', 'persistence'))['persistence'][
        'rdb_bgsave_in_progress'] == '0', timeout=10)
    info = info_fields(a.call('INFO', 'persistence'))['persistence']
    # Private_Dirty of the child: what it wrote of its own, and the pages the
    # parent changed under it (Redis counts the same way).
    assert int(info['rdb_last_cow_size']) > 0, info
    assert info['current_cow_size'] == '0'
    a.call('CONFIG', 'SET', 'appendonly', 'yes')
    assert wait_until(lambda: int(info_fields(a.call('INFO', 'persistence'))['persistence'][
        'aof_last_cow_size']) > 0, timeout=10)
