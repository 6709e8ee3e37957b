#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Writes a running server's CONFIG GET * as "name<TAB>value" lines, sorted,
for tests/integration/data/. Start the reference server with its defaults
(no config file) first, e.g.:

    redis-server --port 7777 &
    tools/gen-redis-config-list.py 7777 > tests/integration/data/redis-8.8-config.tsv
"""

import socket
import sys


def read_line(f):
    line = f.readline()
    if not line.endswith(b'\r\n'):
        raise SystemExit('connection closed')
    return line[:-2]


def read_reply(f):
    line = read_line(f)
    kind, rest = line[:1], line[1:]
    if kind in (b'*', b'%'):
        n = int(rest) * (2 if kind == b'%' else 1)
        return [read_reply(f) for _ in range(n)]
    if kind == b'$':
        n = int(rest)
        data = f.read(n + 2)[:-2]
        return data
    if kind == b'-':
        raise SystemExit(rest.decode())
    return rest


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 6379
    with socket.create_connection(('127.0.0.1', port), timeout=10) as s:
        f = s.makefile('rb')
        s.sendall(b'*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n')
        info = read_reply(f).decode()
        version = [l.split(':', 1)[1] for l in info.splitlines()
                   if l.startswith('redis_version:')][0]
        s.sendall(b'*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$1\r\n*\r\n')
        flat = read_reply(f)
    pairs = sorted(zip(flat[::2], flat[1::2]))
    out = sys.stdout.buffer
    out.write(b'# CONFIG GET * of redis-server %s with its defaults, written by '
              b'tools/gen-redis-config-list.py\n' % version.encode())
    for name, value in pairs:
        out.write(name + b'\t' + value + b'\n')


if __name__ == '__main__':
    main()
