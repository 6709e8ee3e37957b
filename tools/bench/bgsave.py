#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""BGSAVE of N keys (DEBUG POPULATE, 256 B values): wall time to completion and the
longest PING round trip a client sees from BGSAVE to completion; then the load time of
one RDB file (given, or the one just written) by a fresh server: exec to first PONG and
the server's own "DB loaded from disk" line.

Usage: tools/bench/bgsave.py --bin PATH [--kind xkvd|redis] [--port P] [--keys N]
                             [--load FILE.rdb] [--keep-rdb FILE]"""
import socket, subprocess, sys, time, os, shutil, tempfile, threading, re, argparse
ap = argparse.ArgumentParser()
ap.add_argument('--bin'); ap.add_argument('--kind', default='xkvd'); ap.add_argument('--port', type=int, default=7305)
ap.add_argument('--keys', type=int, default=1000000); ap.add_argument('--load', help='rdb file to load instead of populating')
ap.add_argument('--keep-rdb', help='copy the written rdb here')
a = ap.parse_args()
d = tempfile.mkdtemp(prefix='xkv-bgsave-')
def start():
    argv = [a.bin, '--port', str(a.port), '--save', '', '--appendonly', 'no', '--dir', d, '--logfile', d + '/log',
            '--enable-debug-command', 'yes']
    if a.kind == 'xkvd': argv += ['--fastpath', 'no']
    t0 = time.time()
    p = subprocess.Popen(argv, cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        try:
            s = socket.create_connection(('127.0.0.1', a.port), timeout=1)
            s.sendall(b'PING\r\n'); r = s.recv(100); s.close()
            if r.startswith(b'+PONG'): break
        except OSError: pass
        if p.poll() is not None: raise SystemExit('server died')
        time.sleep(0.005)
    return p, time.time() - t0
def cmd(s, *args):
    s.sendall(b''.join([b'*%d\r\n' % len(args)] + [b'$%d\r\n%s\r\n' % (len(x), x) for x in (str(v).encode() for v in args)]))
    buf = b''
    while not buf.endswith(b'\r\n') or (buf.startswith(b'$') and len(buf) < int(buf[1:buf.index(b'\r\n')]) + buf.index(b'\r\n') + 4):
        buf += s.recv(1 << 20)
    return buf
if a.load:
    shutil.copy(a.load, d + '/dump.rdb')
    p, t = start()
    log = open(d + '/log').read()
    m = re.findall(r'DB loaded from disk: ([\d.]+) seconds', log)
    s = socket.create_connection(('127.0.0.1', a.port)); n = cmd(s, 'DBSIZE')
    print('%s load %s: first PONG after %.3f s, log says %s s, dbsize %s' % (os.path.basename(a.bin), a.load, t, m, n.strip()), flush=True)
    p.terminate(); p.wait(); shutil.rmtree(d, ignore_errors=True); sys.exit(0)
p, _ = start()
s = socket.create_connection(('127.0.0.1', a.port))
cmd(s, 'DEBUG', 'POPULATE', a.keys, 'key', 256)
print('dbsize', cmd(s, 'DBSIZE').strip(), 'used_memory', re.search(rb'used_memory:(\d+)', cmd(s, 'INFO', 'memory')).group(1).decode())
stop = threading.Event(); worst = [0.0]; pings = [0]
def pinger():
    c = socket.create_connection(('127.0.0.1', a.port))
    while not stop.is_set():
        t0 = time.perf_counter(); c.sendall(b'PING\r\n'); c.recv(100); dt = time.perf_counter() - t0
        worst[0] = max(worst[0], dt); pings[0] += 1
        time.sleep(0.0005)
th = threading.Thread(target=pinger); th.start(); time.sleep(0.3); worst[0] = 0
t0 = time.time(); r = cmd(s, 'BGSAVE')
while b'rdb_bgsave_in_progress:1' in cmd(s, 'INFO', 'persistence'): time.sleep(0.005)
dt = time.time() - t0; stop.set(); th.join()
info = cmd(s, 'INFO', 'persistence').decode()
st = re.search(r'rdb_last_bgsave_status:(\w+)', info).group(1)
cow = re.search(r'rdb_last_cow_size:(\d+)', info).group(1)
fork = re.search(r'latest_fork_usec:(\d+)', cmd(s, 'INFO', 'stats').decode())
print('%s BGSAVE %d keys: %.3f s (%s), longest PING %.2f ms over %d pings, fork %s us, cow %s, rdb %d B' % (
    os.path.basename(a.bin), a.keys, dt, st, worst[0] * 1000, pings[0], fork.group(1) if fork else '?', cow, os.path.getsize(d + '/dump.rdb')), flush=True)
if a.keep_rdb: shutil.copy(d + '/dump.rdb', a.keep_rdb)
p.terminate(); p.wait(); shutil.rmtree(d, ignore_errors=True)
