#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""One measurement for tools/bench/clients.sh: GETs per second of one Python
process, one GET at a time, on keys key:0 .. key:N-1 in turn, through
xkv.Redis (--via udp) or redis.Redis (--via tcp). Warms up first (the kernel
cache admits a key on its second read), then prints one JSON line."""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                                'clients', 'python'))
import redis  # noqa: E402
import xkv  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--port', type=int, required=True)
    ap.add_argument('--via', choices=('udp', 'tcp'), required=True)
    ap.add_argument('--keys', type=int, default=1000)
    ap.add_argument('--seconds', type=float, default=5)
    ap.add_argument('--warmup', type=float, default=1)
    a = ap.parse_args()
    cls = xkv.Redis if a.via == 'udp' else redis.Redis
    r = cls(host='127.0.0.1', port=a.port)
    keys = [b'key:%d' % i for i in range(a.keys)]
    n = len(keys)
    get = r.get
    for phase, secs in (('warmup', a.warmup), ('run', a.seconds)):
        if phase == 'run' and a.via == 'udp':
            r.stats = xkv.FastpathStats()
        done, misses, start = 0, 0, time.monotonic()
        deadline = start + secs
        while True:
            # Check the clock every 100 GETs: it costs as much as a GET.
            for i in range(done, done + 100):
                if get(keys[i % n]) is None:
                    misses += 1
            done += 100
            now = time.monotonic()
            if now >= deadline:
                break
    out = {'gets': done, 'seconds': now - start, 'per_sec': done / (now - start),
           'misses': misses}
    if a.via == 'udp':
        out['stats'] = r.stats.as_dict()
    r.close()
    print(json.dumps(out))


if __name__ == '__main__':
    main()
