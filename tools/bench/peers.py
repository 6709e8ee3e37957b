#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""xkvd against peer servers given by path, with clients we did not write.

Every server (xkvd, Debian's redis-server, and each PEERS entry name=path,
e.g. redis8=/opt/redis-8.8/src/redis-server valkey=/opt/valkey/valkey-server)
runs on its own free loopback port with persistence off. Each row runs
Debian's redis-benchmark (--threads, pinned) and, if installed,
memtier_benchmark, against each server in turn, rounds alternating the order.
Next to each rate is the server's CPU time per request, read from
/proc/PID/stat before and after (user + system, all threads).

Modes:
  percore  servers pinned to CPU 0 (xkvd --threads 1, Valkey io-threads 1),
           the client pinned to CPU 1: the work one core does
  machine  default threads (Valkey also with io-threads 2), nothing pinned
  aof-everysec  as percore, with appendonly yes, appendfsync everysec on
           every server (issue 13: SET per core with the AOF on)
  aof-always    as machine, with appendonly yes, appendfsync always (issue
           13: group commit of 50 clients; use --rows set256,incr)

Rows: GET and SET with 16 B, 256 B and 4 KiB values, INCR, LPUSH, LPOP,
HSET, HGET, SADD, ZADD, ZRANGE (first 10), MGET of 10 keys, MSET of 10 keys,
EVALSHA of a script doing GET + INCR on its one declared key (evalsha) and
of the same script on a key it builds from ARGV, undeclared (evalsha_undecl),
each at pipeline 1 and 16 over 50 connections, on 100k keys. Redis 8's
types: XADD to one stream, XREADGROUP COUNT 1 of new entries (its PEL
grows), PFADD to one HLL, PFCOUNT of one HLL (cached) and of two (merged),
ARSET/ARGET at random indexes below 100k, ARRING of a 1,000-slot ring,
GEOSEARCH FROMMEMBER BYRADIUS 10 km ASC COUNT 10 among 1M points (a server
without the command shows n/a).

Usage: tools/bench/peers.py [-o OUTPUT] [-T SECONDS] [-r ROUNDS] [-m percore,machine]
                            [--rows get256,set256,...] [--md FILE] [--ports LO-HI]
PEERS comes from the environment (make bench-peers PEERS="..."); a peer whose
file is named xkvd is another xkvd build, run with xkvd's options (an A/B of
two builds). The table
is printed as markdown; --md appends it to FILE with the command line."""

import argparse
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

CLK_TCK = os.sysconf('SC_CLK_TCK')
KEYS = 100000


PORT_RANGE = []   # --ports LO-HI: servers take ports from it in turn
_next_port = [0]


def free_port():
    """A free loopback port: from --ports, else from $BENCH_PORTS
    ("first-last", taken in turn, so that servers alive together never get
    the same one) when set, else any the kernel picks."""
    if PORT_RANGE:
        PORT_RANGE.append(PORT_RANGE.pop(0))
        return PORT_RANGE[-1]
    rng = os.environ.get('BENCH_PORTS')
    if not rng:
        s = socket.socket()
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
        s.close()
        return port
    first, last = (int(x) for x in rng.split('-'))
    for _ in range(last - first + 1):
        port = first + _next_port[0] % (last - first + 1)
        _next_port[0] += 1
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(('127.0.0.1', port))
                return port
            except OSError:
                continue
    raise RuntimeError('no free port in ' + rng)


def cpu_seconds(pid):
    """User + system CPU of every thread of pid, in seconds."""
    with open('/proc/%d/stat' % pid) as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class Server:
    def __init__(self, name, argv, kind):
        self.name, self.argv, self.kind = name, argv, kind
        self.proc = None
        self.port = None
        self.dir = tempfile.mkdtemp(prefix='xkv-peers-%s-' % name)

    def start(self, pin):
        self.port = free_port()
        argv = list(self.argv) + ['--port', str(self.port), '--bind', '127.0.0.1',
                                  '--dir', self.dir]
        if pin is not None:
            argv = ['taskset', '-c', str(pin)] + argv
        self.log = open(os.path.join(self.dir, 'server.log'), 'wb')
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        for _ in range(200):
            if self.cli('PING') == 'PONG':
                return self
            time.sleep(0.05)
        raise RuntimeError('%s did not start: %s' % (self.name, ' '.join(argv)))

    def cli(self, *args):
        try:
            return subprocess.run(['redis-cli', '-p', str(self.port)] + list(args),
                                  capture_output=True, text=True, timeout=30).stdout.strip()
        except subprocess.TimeoutExpired:
            return ''

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)


def pinned(mode):
    return mode in ('percore', 'aof-everysec')


def aof_args(mode):
    """The persistence options of the mode: the AOF off, or on with the
    mode's appendfsync policy (aof-everysec, aof-always)."""
    if mode.startswith('aof-'):
        return ['--appendonly', 'yes', '--appendfsync', mode[len('aof-'):]]
    return ['--appendonly', 'no']


def servers_for(mode, xkvd, peers):
    """(name, argv, kind) of each server, configured for the mode."""
    percore = pinned(mode)
    out = [('xkvd', [xkvd, '--fastpath', 'no', '--save', ''] +
            (['--threads', '1'] if percore else []) +
            (aof_args(mode) if mode.startswith('aof-') else []), 'xkvd')]
    debian = shutil.which('redis-server')
    if debian:
        out.append(('redis7', [debian, '--save', ''] + aof_args(mode), 'redis'))
    for name, path in peers:
        if os.path.basename(path) == 'xkvd':
            # Another xkvd build (an A/B of two builds), configured as ours.
            out.append((name, [path] + out[0][1][1:], 'xkvd'))
            continue
        argv = [path, '--save', ''] + aof_args(mode)
        out.append((name, argv, 'peer'))
        if not percore and 'valkey' in os.path.basename(path):
            out.append((name + '-io2', argv + ['--io-threads', '2'], 'peer'))
    return out


# The scripts of the EVALSHA rows, loaded by prefill (SCRIPT LOAD).
SCRIPT_DECLARED = "local v = redis.call('GET', KEYS[1]) redis.call('INCR', KEYS[1]) return v"
SCRIPT_UNDECLARED = ("local k = 'key:' .. ARGV[1] local v = redis.call('GET', k) "
                     "redis.call('INCR', k) return v")


def sha1(text):
    return hashlib.sha1(text.encode()).hexdigest()


# name: (redis-benchmark arguments, what to prefill)
ROWS = {
    'get16': (['-t', 'get', '-d', '16'], 'strings16'),
    'get256': (['-t', 'get', '-d', '256'], 'strings256'),
    'get4k': (['-t', 'get', '-d', '4096'], 'strings4096'),
    'set16': (['-t', 'set', '-d', '16'], None),
    'set256': (['-t', 'set', '-d', '256'], None),
    'set4k': (['-t', 'set', '-d', '4096'], None),
    'incr': (['-t', 'incr'], None),
    'lpush': (['-t', 'lpush', '-d', '16'], None),
    'lpop': (['-t', 'lpop'], 'list'),
    'hset': (['-t', 'hset', '-d', '16'], None),
    'hget': (['HGET', 'myhash', 'element:__rand_int__'], 'hash'),
    'sadd': (['-t', 'sadd'], None),
    'zadd': (['-t', 'zadd'], None),
    'zrange': (['ZRANGE', 'myzset', '0', '9'], 'zset'),
    'mget10': (['MGET'] + ['key:__rand_int__'] * 10, 'strings256'),
    'mset10': (['-t', 'mset', '-d', '16'], None),
    'evalsha': (['EVALSHA', sha1(SCRIPT_DECLARED), '1', 'key:__rand_int__'],
                'script:' + SCRIPT_DECLARED),
    'evalsha_undecl': (['EVALSHA', sha1(SCRIPT_UNDECLARED), '0', '__rand_int__'],
                       'script:' + SCRIPT_UNDECLARED),
    # The data types of Redis 8 (rows a server without the command shows n/a).
    'xadd': (['XADD', 'mystream', '*', 'field', '__rand_int__'], None),
    'xreadgroup': (['XREADGROUP', 'GROUP', 'g', 'c', 'COUNT', '1', 'STREAMS', 'mystream', '>'],
                   'stream'),
    'pfadd': (['PFADD', 'hll', 'e:__rand_int__'], None),
    'pfcount': (['PFCOUNT', 'hll'], 'hll'),
    'pfcount2': (['PFCOUNT', 'hll', 'hll2'], 'hll'),
    'arset': (['ARSET', 'arr', '__rand_int__', 'value'], 'needs:ARSET'),
    'arget': (['ARGET', 'arr', '__rand_int__'], 'array'),
    'arring': (['ARRING', 'ring', '1000', '__rand_int__'], 'needs:ARRING'),
    'geosearch': (['GEOSEARCH', 'geo', 'FROMMEMBER', 'm:__rand_int__', 'BYRADIUS', '10', 'km',
                   'ASC', 'COUNT', '10'], 'geo'),
}

# XREADGROUP consumes ('>') what it reads: the stream is refilled before
# each step with this many entries a second of the step, more than any
# server here reads on one core, so that no step runs dry.
STREAM_ENTRIES_PER_SECOND = 2000000
GEO_POINTS = 1000000


def has_command(srv, name):
    return srv.cli('COMMAND', 'INFO', name) != ''


def resp(*args):
    out = b'*%d\r\n' % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b'$%d\r\n%s\r\n' % (len(a), a)
    return out


def send_all(srv, commands):
    """Pipelines RESP commands to srv and reads one reply line per command
    (every reply here is a single line: an integer or a status)."""
    with socket.create_connection(('127.0.0.1', srv.port), timeout=120) as s:
        s.sendall(b''.join(commands))
        f = s.makefile('rb')
        for _ in commands:
            line = f.readline()
            if line.startswith(b'-'):
                raise RuntimeError('%s: %s' % (srv.name, line.strip().decode()))


def prefill_geo(srv):
    """GEO_POINTS points over 20 x 10 degrees (about 200 within 10 km of
    each), named m:<12 digits> as redis-benchmark's __rand_int__ spells
    them; the same points on every server (a fixed seed)."""
    import random
    rnd = random.Random(15)
    batch = 1000
    for first in range(0, GEO_POINTS, batch * 50):
        cmds = []
        for b in range(first, min(first + batch * 50, GEO_POINTS), batch):
            args = ['GEOADD', 'geo']
            for i in range(b, b + batch):
                args += ['%.6f' % rnd.uniform(-10, 10), '%.6f' % rnd.uniform(40, 50),
                         'm:%012d' % i]
            cmds.append(resp(*args))
        send_all(srv, cmds)


def prefill(srv, what, seconds):
    """Loads what a row reads (for a step of seconds); False when the
    server lacks the row's command (a Redis before 8.8 has no arrays)."""
    if what is None:
        return True
    if what.startswith('needs:'):
        return has_command(srv, what[len('needs:'):])
    if what.startswith('script:'):
        if srv.cli('SCRIPT', 'LOAD', what[len('script:'):]) != sha1(what[len('script:'):]):
            raise RuntimeError('%s: SCRIPT LOAD failed' % srv.name)
        return True
    elif what.startswith('strings'):
        size = what[len('strings'):]
        run_rb(srv, ['-t', 'set', '-d', size, '-r', str(KEYS), '-n', str(KEYS * 2), '-P', '64'],
               None)
    elif what == 'list':
        run_rb(srv, ['-t', 'lpush', '-d', '16', '-n', '3000000', '-P', '64'], None)
    elif what == 'hash':
        run_rb(srv, ['-t', 'hset', '-d', '16', '-r', str(KEYS), '-n', str(KEYS * 2), '-P', '64'],
               None)
    elif what == 'zset':
        run_rb(srv, ['-t', 'zadd', '-r', '1000', '-n', '20000', '-P', '64'], None)
    elif what == 'stream':
        srv.cli('DEL', 'mystream')
        run_rb(srv, ['-n', str(int(STREAM_ENTRIES_PER_SECOND * seconds)), '-P', '64',
                     'XADD', 'mystream', '*', 'field', '__rand_int__'], None)
        srv.cli('XGROUP', 'CREATE', 'mystream', 'g', '0')
    elif what == 'hll':
        for key in ('hll', 'hll2'):
            run_rb(srv, ['-n', str(KEYS * 2), '-P', '64', 'PFADD', key, 'e:__rand_int__'], None)
    elif what == 'array':
        if not has_command(srv, 'ARSET'):
            return False
        run_rb(srv, ['-n', str(KEYS * 2), '-P', '64', 'ARSET', 'arr', '__rand_int__', 'value'],
               None)
    elif what == 'geo':
        prefill_geo(srv)
    return True


def run_rb(srv, args, pin, seconds=None, pipeline=1, clients=50, threads=1):
    """redis-benchmark against srv; requests per second (the last rate line).
    Options go before a command: after it they are the command's arguments."""
    argv = ['redis-benchmark', '-p', str(srv.port), '-q', '-c', str(clients), '-P',
            str(pipeline), '--threads', str(threads)]
    argv += [] if '-r' in args else ['-r', str(KEYS)]
    if seconds:
        # Enough requests to outlast the time box; killed at its end.
        argv += ['-n', '100000000']
    argv += [a for a in args]
    if pin is not None:
        argv = ['taskset', '-c', str(pin)] + argv
    if not seconds:
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=600)
        return None
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    time.sleep(seconds)
    p.send_signal(signal.SIGINT)
    try:
        out, _ = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        # Stuck (a loaded machine): its rate lines so far still count.
        p.kill()
        out, _ = p.communicate()
    rates = re.findall(rb'rps=([0-9.]+) \(overall: ([0-9.]+)\)', out.replace(b'\r', b'\n'))
    if not rates:
        raise RuntimeError('redis-benchmark gave no rate: %r' % out[-300:])
    return float(rates[-1][1])


def ran_dry(srv):
    """The group has read every entry: the step measured empty reads."""
    pending = (srv.cli('XPENDING', 'mystream', 'g').split() or ['0'])[0]
    return int(srv.cli('XLEN', 'mystream') or 0) <= int(pending)


def measure(srv, row, pipeline, pin, seconds):
    args, what = ROWS[row]
    t0, c0 = time.monotonic(), cpu_seconds(srv.proc.pid)
    try:
        rps = run_rb(srv, args, pin, seconds, pipeline)
    except RuntimeError as e:  # one lost step (0 in the table), not the whole run
        print('peers.py: %s: %s' % (srv.name, e), file=sys.stderr)
        rps = 0
    dt, dc = time.monotonic() - t0, cpu_seconds(srv.proc.pid) - c0
    return rps, dc * 1e9 / (rps * dt) if rps else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('-o', '--output', default='.output')
    ap.add_argument('-T', '--seconds', type=float, default=5)
    ap.add_argument('-r', '--rounds', type=int, default=2)
    ap.add_argument('-m', '--modes', default='percore,machine')
    ap.add_argument('--rows', default=','.join(ROWS))
    ap.add_argument('--md', help='append the table to this markdown file')
    ap.add_argument('--ports', help='LO-HI: the servers\' ports (default: any free port)')
    a = ap.parse_args()
    if a.ports:
        lo, hi = map(int, a.ports.split('-'))
        PORT_RANGE.extend(range(lo, hi + 1))
    peers = [tuple(p.split('=', 1)) for p in os.environ.get('PEERS', '').split() if '=' in p]
    for _, path in peers:
        if not os.access(path, os.X_OK):
            sys.exit('peers.py: %s is not an executable' % path)
    if not shutil.which('redis-benchmark'):
        sys.exit('peers.py: redis-benchmark is missing (make deps)')
    xkvd = os.path.abspath(os.path.join(a.output, 'xkvd'))
    rows = a.rows.split(',')
    lines = []
    load = os.getloadavg()[0]
    for mode in a.modes.split(','):
        if mode not in ('percore', 'machine', 'aof-everysec', 'aof-always'):
            sys.exit('peers.py: unknown mode %s' % mode)
        server_pin, client_pin = (0, 1) if pinned(mode) else (None, None)
        specs = servers_for(mode, xkvd, peers)
        names = [s[0] for s in specs]
        results = {}      # (row, P, name) -> [(rps, ns)]
        for row in rows:
            for rnd in range(a.rounds):
                order = specs if rnd % 2 == 0 else specs[::-1]
                for name, argv, kind in order:
                    srv = Server(name, argv, kind).start(server_pin)
                    try:
                        has = prefill(srv, ROWS[row][1], a.seconds)
                        for p in (1, 16):
                            if p > 1 and has and ROWS[row][1] == 'stream':
                                prefill(srv, 'stream', a.seconds)
                            r = measure(srv, row, p, client_pin, a.seconds) if has else None
                            if row == 'xreadgroup' and has and ran_dry(srv):
                                print('peers.py: %s read the whole stream at P%d: not '
                                      'counted; raise STREAM_ENTRIES_PER_SECOND' % (name, p),
                                      file=sys.stderr)
                                r = None
                            results.setdefault((row, p, name), []).append(r)
                    finally:
                        srv.stop()
        lines.append('\n%s (redis-benchmark --threads 1%s, 50 connections, %g s a step, %d '
                     'rounds: the median rate, server CPU ns per request)\n' % (
                         mode, ', servers on CPU 0, client on CPU 1' if pinned(mode)
                         else ', nothing pinned', a.seconds, a.rounds))
        lines.append('| row | P | ' + ' | '.join(names) + ' | xkvd / best peer |')
        lines.append('|---|---:|' + '---:|' * (len(names) + 1))
        for row in rows:
            for p in (1, 16):
                cells, best = [], 0
                for name in names:
                    got = sorted(r for r in results[(row, p, name)] if r is not None)
                    if not got:
                        cells.append('n/a')
                        continue
                    rps, ns = got[len(got) // 2]
                    cells.append('%.0fk / %.0f ns' % (rps / 1000, ns))
                    if name != 'xkvd':
                        best = max(best, rps)
                mine = sorted(r for r in results[(row, p, 'xkvd')] if r is not None)
                ratio = '%.2f' % (mine[len(mine) // 2][0] / best) if mine and best else 'n/a'
                lines.append('| %s | %d | %s | %s |' % (row, p, ' | '.join(cells), ratio))
    head = 'Machine: %d CPUs (%s), Linux %s, load %.2f at start. Command: PEERS="%s" %s' % (
        os.cpu_count(), open('/proc/cpuinfo').read().split('model name')[1].split(':')[1]
        .split('\n')[0].strip(), os.uname().release, load, os.environ.get('PEERS', ''),
        ' '.join(['tools/bench/peers.py'] + sys.argv[1:]))
    text = head + '\n' + '\n'.join(lines) + '\n'
    print(text)
    if a.md:
        with open(a.md, 'a') as f:
            f.write('\n' + text)


if __name__ == '__main__':
    main()
