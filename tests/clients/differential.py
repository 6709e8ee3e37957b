#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""The xkv Python client (clients/python) against redis-py's own TCP client,
on one server: every GET and MGET must give the same result, value or
exception. Prints one JSON line, {"checks": N, "stats": {...}}, the xkv
clients' fast-path counters summed; exits 1 after listing the differences.

Used by tests/integration/test_clients.py (daemon over UDP, no XDP) and
tests/e2e/run.py (the kernel fast path in a namespace)."""

import argparse
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'clients', 'python'))
import redis  # noqa: E402
import xkv  # noqa: E402

FITS = 1200 - 24 - len('$1167\r\n\r\n')     # the largest value a 1200-byte request holds


def values():
    return {
        b'small': b'hello',
        b'bin': bytes(range(256)),
        b'empty': b'',
        b'utf8': 'h\u00e9llo w\u00f6rld \u2713'.encode(),
        b'num': b'12345',
        b'edge': b'e' * FITS,
        b'edge+1': b'f' * (FITS + 1),
        b'big': bytes(i % 251 for i in range(5000)),
        b'huge': b'z' * 100000,
        b'k\x00\r\n\xff': b'binary key',
        b'long' * 50: b'a 200-byte key',
    }


def outcome(fn):
    try:
        return ('value', fn())
    except Exception as e:   # the exception is part of the result
        return ('raise', type(e).__name__, str(e))


class Checker:
    def __init__(self):
        self.checks, self.diffs = 0, []

    def same(self, what, ref, sut):
        self.checks += 1
        a, b = outcome(ref), outcome(sut)
        if a != b:
            self.diffs.append('%s:\n  tcp: %r\n  xkv: %r' % (what, a, b))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--host', default='127.0.0.1')
    ap.add_argument('--port', type=int, required=True)
    ap.add_argument('--password')
    ap.add_argument('--fastpath-token', type=int)
    ap.add_argument('--udp-port', type=int)
    ap.add_argument('--udp-timeout', type=float, default=0.2)
    ap.add_argument('--udp-backoff', type=float, default=0.0)
    ap.add_argument('--rounds', type=int, default=3, help='GETs of each key (kernel admission)')
    args = ap.parse_args()

    tcp_kw = dict(host=args.host, port=args.port, password=args.password,
                  socket_timeout=10)
    udp_kw = dict(tcp_kw, fastpath_token=args.fastpath_token, udp_port=args.udp_port,
                  udp_timeout=args.udp_timeout, udp_backoff=args.udp_backoff)
    plain = redis.Redis(**tcp_kw)
    plain_text = redis.Redis(decode_responses=True, **tcp_kw)
    fast = xkv.Redis(**udp_kw)
    fast_text = xkv.Redis(decode_responses=True, **udp_kw)
    pairs = ((plain, fast, 'bytes'), (plain_text, fast_text, 'text'))
    c = Checker()

    plain.flushall()
    data = values()
    for k, v in data.items():
        plain.set(k, v)
    plain.rpush('list', 'x')
    keys = list(data) + [b'list', b'nokey', 'str key', 12345]

    for rnd in range(args.rounds):
        for ref, sut, mode in pairs:
            for k in keys:
                c.same('GET %r (%s, round %d)' % (k, mode, rnd),
                       lambda: ref.get(k), lambda: sut.get(k))
    for ref, sut, mode in pairs:
        for ks in ([b'small', b'nokey', b'bin'], [b'small'], keys, [b'nokey', b'nokey'],
                   [b'small', b'edge'], [b'huge', b'small']):
            c.same('MGET %r (%s)' % (ks, mode), lambda: ref.mget(ks), lambda: sut.mget(ks))
        c.same('MGET k, *args (%s)' % mode, lambda: ref.mget('small', 'bin', 'nokey'),
               lambda: sut.mget('small', 'bin', 'nokey'))
        c.same('MGET [] (%s)' % mode, lambda: ref.mget([]), lambda: sut.mget([]))
    # Writes are seen at once, cached or not.
    for k, v in ((b'small', b'changed'), (b'edge', b'short now'), (b'bin', b'')):
        plain.set(k, v)
        for ref, sut, mode in pairs:
            c.same('GET %r after SET (%s)' % (k, mode), lambda: ref.get(k), lambda: sut.get(k))
            c.same('MGET %r after SET (%s)' % (k, mode), lambda: ref.mget([k, b'nokey']),
                   lambda: sut.mget([k, b'nokey']))
    plain.delete(b'small')
    for ref, sut, mode in pairs:
        c.same('GET after DEL (%s)' % mode, lambda: ref.get(b'small'), lambda: sut.get(b'small'))

    stats = {}
    for cl in (fast, fast_text):
        for name, v in cl.stats.as_dict().items():
            if name == 'reasons':
                for r, n in v.items():
                    stats.setdefault('reasons', {})[r] = stats.get('reasons', {}).get(r, 0) + n
            else:
                stats[name] = stats.get(name, 0) + v
    for cl in (plain, plain_text, fast, fast_text):
        cl.close()
    print(json.dumps({'checks': c.checks, 'stats': stats}))
    for d in c.diffs:
        print(d, file=sys.stderr)
    return 1 if c.diffs else 0


if __name__ == '__main__':
    sys.exit(main())
