# SPDX-License-Identifier: GPL-2.0-only
"""Start-up configuration: a redis.conf-style file plus command-line pairs,
and the FATAL CONFIG report (line and reason, in Redis's words) for bad input."""

import os
import subprocess
import tempfile

from harness import Server, test, xkv_only


def run_xkvd(t, *argv):
    """Runs xkvd expecting it to refuse to start; returns (rc, stderr)."""
    proc = subprocess.run([t.env.xkvd] + list(argv), stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=10)
    return proc.returncode, proc.stderr.decode('utf-8', 'replace')


@test
@xkv_only
def config_file_and_overrides(t):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'xkv.conf')
        with open(path, 'w') as f:
            f.write('# a comment\n\nmaxclients 123\ntimeout "7"\nrequirepass secret\n'
                    'loglevel verbose\n')
        srv = Server('xkvd', binary=t.env.xkvd, engine=t.env.engine, config_file=path,
                     directives={'timeout': 9}).start()
        t.spawned.append(srv)
        with srv.client() as c:
            assert c.cmd('AUTH', 'secret') == b'+OK\r\n'
            got = dict(zip(*[iter(c.call('CONFIG', 'GET', 'maxclients', 'timeout',
                                         'loglevel'))] * 2))
            assert got == {b'maxclients': b'123', b'timeout': b'9', b'loglevel': b'verbose'}, got
            info = c.call('INFO', 'server').decode()
            assert 'config_file:%s' % os.path.realpath(path) in info, info


@test
@xkv_only
def bad_config_is_fatal(t):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'bad.conf')
        with open(path, 'w') as f:
            f.write('port 7000\n# fine so far\nmaxclients lots\n')
        rc, err = run_xkvd(t, path)
        assert rc != 0, rc
        assert 'FATAL CONFIG FILE ERROR' in err and 'configuration file, at line 3' in err, err
        assert "'maxclients lots'" in err and "couldn't be parsed into an integer" in err, err

        with open(path, 'w') as f:
            f.write('nosuchdirective\n')
        rc, err = run_xkvd(t, path)
        assert rc != 0 and 'at line 1' in err and 'Bad directive' in err, (rc, err)
        # With a value, Redis 8.8 takes it for a module's and refuses it at the end.
        with open(path, 'w') as f:
            f.write('nosuchdirective 1\n')
        rc, err = run_xkvd(t, path)
        assert rc != 0 and ">>> 'nosuchdirective 1'" in err, (rc, err)
        assert 'Module Configuration detected without loadmodule' in err, (rc, err)

    rc, err = run_xkvd(t, '--io-engine', 'fast')
    assert rc != 0 and 'must be one of the following: auto, io_uring, epoll' in err, (rc, err)
    rc, err = run_xkvd(t, '--port', '70000')
    assert rc != 0 and 'between 0 and 65535' in err, (rc, err)
    # The command line continues the file's lines, each shown as Redis shows it.
    rc, err = run_xkvd(t, '--port', '6379', '6380')
    assert rc != 0 and 'at line 2' in err and "'port \"6379\" \"6380\"'" in err, (rc, err)
    assert 'wrong number of arguments' in err, err
    rc, err = run_xkvd(t, '--port', '--bla', '--loglevel', 'verbose')
    assert rc != 0 and "'port \"--bla\"'" in err and 'parsed into an integer' in err, err
    rc, err = run_xkvd(t, '--shutdown-on-sigint', 'now force', '--shutdown-on-sigterm')
    assert rc != 0 and "'shutdown-on-sigterm'" in err, err
    assert 'argument(s) must be one of the following' in err, err
    rc, err = run_xkvd(t, '--replicaof', '127.0.0.1', 'abc')
    assert rc != 0 and 'Invalid master port' in err, (rc, err)


@test
@xkv_only
def a_taken_port_is_refused(t):
    # SO_REUSEPORT must not let a second server share the port silently.
    rc, err = run_xkvd(t, '--port', str(t.sut.port), '--bind', '127.0.0.1', '--fastpath', 'no',
                       '--logfile', '')
    assert rc != 0, rc


@test
@xkv_only
def file_include_save_lines_and_deprecated(t):
    with tempfile.TemporaryDirectory() as tmp:
        inc = os.path.join(tmp, 'inc.conf')
        with open(inc, 'w') as f:
            f.write('maxclients 321\n')
        path = os.path.join(tmp, 'xkv.conf')
        with open(path, 'w') as f:
            # save lines add up (the first replaces the default); directives Redis
            # no longer reads are ignored, as Redis ignores them.
            # A pattern matching nothing includes nothing.
            f.write('include %s\ninclude %s/none*.conf\nsave 60 1\nsave "300 10"\n'
                    'list-max-ziplist-entries 5\nhash-max-ziplist-value 1k\n' % (inc, tmp))
        srv = Server('xkvd', binary=t.env.xkvd, engine=t.env.engine, config_file=path,
                     directives={'save': '900 2'}).start()
        t.spawned.append(srv)
        with srv.client() as c:
            got = dict(zip(*[iter(c.call('CONFIG', 'GET', 'maxclients', 'save',
                                         'hash-max-listpack-value'))] * 2))
        assert got == {b'maxclients': b'321', b'save': b'60 1 300 10 900 2',
                       b'hash-max-listpack-value': b'1000'}, got


@test
@xkv_only
def memory_tracking_only_from_start_up(t):
    """key-memory-histograms and cluster-slot-stats-enabled's mem: fixed at
    start-up, as Redis 8.8's updateMemoryTrackingEnabled (off may follow on,
    never on after off); replies checked against redis-server 8.8.0."""
    refused = (b'-ERR CONFIG SET failed (possibly related to argument '
               b"'%s') - memory tracking cannot be enabled at runtime\r\n")
    with t.sut.client() as c:
        for value in ('yes', 'mem'):
            assert c.cmd('CONFIG', 'SET', 'cluster-slot-stats-enabled', value) == \
                refused % b'cluster-slot-stats-enabled'
        assert c.cmd('CONFIG', 'SET', 'key-memory-histograms', 'yes') == \
            refused % b'key-memory-histograms'
        assert c.cmd('CONFIG', 'SET', 'cluster-slot-stats-enabled', 'cpu net') == b'+OK\r\n'
        assert c.cmd('CONFIG', 'SET', 'cluster-slot-stats-enabled', 'no') == b'+OK\r\n'
    srv = Server('xkvd', binary=t.env.xkvd, engine=t.env.engine,
                 directives={'key-memory-histograms': 'yes'}).start()
    t.spawned.append(srv)
    with srv.client() as c:
        assert c.cmd('CONFIG', 'SET', 'cluster-slot-stats-enabled', 'mem') == b'+OK\r\n'
        assert c.cmd('CONFIG', 'SET', 'key-memory-histograms', 'no') == b'+OK\r\n'
        assert c.cmd('CONFIG', 'SET', 'cluster-slot-stats-enabled', 'no') == b'+OK\r\n'
        assert c.cmd('CONFIG', 'SET', 'key-memory-histograms', 'yes') == \
            refused % b'key-memory-histograms'
