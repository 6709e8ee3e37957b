#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The cost of CLIENT TRACKING (issue 12): one RESP3 client tracking 100k keys.

For each server (xkvd, Debian's redis-server, each PEERS entry name=path),
100,000 keys of 256 B are written (redis-benchmark's key:%012d names), then
rounds of: redis-benchmark SET and GET (-P 16, 50 connections, random keys of
the 100k) with no tracking client ("off"), and the same with one client that
sent HELLO 3, CLIENT TRACKING ON and read every key just before the run, and
drains its invalidation pushes meanwhile ("on": every key it read is tracked,
so the first SET of each sends it an invalidation). Beside each median rate,
the server's CPU per request (/proc/PID/stat).

Usage: [PEERS="redis8=/path/redis-server"] tools/bench/tracking.py [-o OUTPUT]
           [-n REQUESTS] [-r ROUNDS] [--ports LO-HI] [--md FILE]"""

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (Server, free_port, cpu_seconds)

KEYS = 100000


def key(i):
    return b'key:%012d' % i


class Tracker:
    """A RESP3 client tracking every key, draining its pushes on a thread."""

    def __init__(self, port):
        self.sock = socket.create_connection(('127.0.0.1', port))
        self.pushes = 0
        self.stop = False
        self.send(b'*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n'
                  b'*3\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$2\r\nON\r\n')
        out = []
        for i in range(KEYS):
            k = key(i)
            out.append(b'*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n' % (len(k), k))
        self.send(b''.join(out))
        # The last reply: every GET answered, every key tracked.
        self.send(b'*1\r\n$4\r\nPING\r\n')
        buf = b''
        while not buf.endswith(b'+PONG\r\n'):
            buf += self.sock.recv(1 << 20)
        self.thread = threading.Thread(target=self.drain, daemon=True)
        self.thread.start()

    def send(self, data):
        self.sock.sendall(data)

    def drain(self):
        self.sock.settimeout(0.2)
        while not self.stop:
            try:
                data = self.sock.recv(1 << 20)
            except socket.timeout:
                continue
            if not data:
                return
            self.pushes += data.count(b'invalidate')

    def close(self):
        self.stop = True
        self.thread.join(timeout=5)
        self.sock.close()


def fill(srv):
    argv = ['redis-benchmark', '-p', str(srv.port), '-q', '-c', '50', '-P', '64',
            '-n', str(KEYS), '-d', '256', '-t', 'set', '-r', str(KEYS)]
    subprocess.run(argv, stdout=subprocess.DEVNULL, timeout=600)
    # -r draws keys at random: write every one of them once more, in order.
    s = socket.create_connection(('127.0.0.1', srv.port))
    val = b'x' * 256
    for start in range(0, KEYS, 1000):
        s.sendall(b''.join(b'*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$256\r\n%s\r\n'
                           % (len(key(i)), key(i), val) for i in range(start, start + 1000)))
        got = b''
        while got.count(b'+OK\r\n') < 1000:
            got += s.recv(1 << 20)
    s.close()


def bench(srv, command, requests):
    argv = ['redis-benchmark', '-p', str(srv.port), '-t', command, '-n', str(requests),
            '-r', str(KEYS), '-d', '256', '-c', '50', '-P', '16', '--csv']
    c0 = peers.cpu_seconds(srv.proc.pid)
    p = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    dc = peers.cpu_seconds(srv.proc.pid) - c0
    m = re.search(r'^"%s","([0-9.]+)"' % command.upper(), p.stdout, re.M)
    return (float(m.group(1)) if m else 0.0), dc * 1e9 / requests


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('-o', '--output', default='.output')
    ap.add_argument('-n', '--requests', type=int, default=500000)
    ap.add_argument('-r', '--rounds', type=int, default=3)
    ap.add_argument('--ports', help='LO-HI: the ports servers take in turn')
    ap.add_argument('--md', help='append the table to this file')
    args = ap.parse_args()
    if args.ports:
        lo, hi = (int(x) for x in args.ports.split('-'))
        peers.PORT_RANGE[:] = list(range(lo, hi + 1))
    kinds = [('xkvd', [os.path.join(args.output, 'xkvd'), '--fastpath', 'no', '--save', '',
                       '--appendonly', 'no'])]
    if shutil.which('redis-server'):
        kinds.append(('redis7', [shutil.which('redis-server'), '--save', '', '--appendonly', 'no']))
    for entry in os.environ.get('PEERS', '').split():
        name, _, path = entry.partition('=')
        kinds.append((name, [path, '--save', '', '--appendonly', 'no']))
    results, pushes = {}, {}
    load0 = os.getloadavg()[0]
    for name, argv in kinds:
        srv = peers.Server(name, argv, 'peer').start(None)
        try:
            fill(srv)
            for _ in range(args.rounds):
                for mode in ('off', 'on'):
                    tracker = Tracker(srv.port) if mode == 'on' else None
                    for command in ('set', 'get'):
                        results.setdefault((name, mode, command), []).append(
                            bench(srv, command, args.requests))
                    if tracker:
                        tracker.close()
                        pushes.setdefault(name, []).append(tracker.pushes)
        finally:
            srv.stop()
    load1 = os.getloadavg()[0]
    lines = ['One RESP3 client tracking 100,000 keys (on) or none (off); redis-benchmark -P 16 '
             '-c 50, 256 B values, %d rounds of %d requests, nothing pinned, default threads; '
             'load average %.1f at the start, %.1f at the end' % (args.rounds, args.requests,
                                                                  load0, load1), '',
             '| server | SET off | SET on | on / off | GET off | GET on | on / off | '
             'invalidations a round |', '|---|---:|---:|---:|---:|---:|---:|---:|']
    for name, _ in kinds:
        cells = []
        for command in ('set', 'get'):
            off = results[(name, 'off', command)]
            on = results[(name, 'on', command)]
            r_off = statistics.median(r for r, _ in off)
            r_on = statistics.median(r for r, _ in on)
            c_off = statistics.median(c for _, c in off)
            c_on = statistics.median(c for _, c in on)
            cells += ['%dk / %d ns' % (round(r_off / 1000), c_off),
                      '%dk / %d ns' % (round(r_on / 1000), c_on),
                      '%.2f' % (r_on / r_off if r_off else 0)]
        lines.append('| %s | %s | %d |' % (name, ' | '.join(cells),
                                           statistics.median(pushes.get(name, [0]))))
    text = '\n'.join(lines)
    print(text)
    if args.md:
        with open(args.md, 'a') as f:
            f.write('\n' + text + '\n')


if __name__ == '__main__':
    main()
