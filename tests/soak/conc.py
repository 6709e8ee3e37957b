#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Concurrency soak: many clients against the sanitizer build of xkvd.

Starts a private xkvd (by default .output/asan/xkvd, two workers) and runs,
for a time budget, client threads whose connections the kernel spreads over
both workers, checking invariants that hold whatever the interleaving:
  - counters: INCR/INCRBY from several clients end at the exact total;
  - transfers: MULTI/EXEC moves amounts between accounts (plus WATCH-based
    optimistic moves); a reader's MULTI MGET always sees the same sum;
  - queues: pushers RPUSH numbered items, consumers BLPOP/BRPOP/BLMOVE them:
    every item is received exactly once, and each consumer sees each
    pusher's items on a queue in push order;
  - pub/sub: every subscriber (RESP2 and RESP3, SUBSCRIBE and PSUBSCRIBE)
    receives every published message, in order per publisher;
  - chaos: random commands of every type (tests/soak/fuzz.py's generator)
    in dbs 1-2 with short TTLs and SWAPDB 1 2; replies must parse;
  - churn: clients that disconnect mid-command, while blocked, while
    subscribed or inside MULTI;
  - the server answers PING within 5 s throughout;
  - at shutdown (SIGTERM) the sanitizer log is empty.
Every process is stopped by PID. Exit status 1 on any violation.

Usage: conc.py [--xkvd PATH] [--seconds S] [--seed N] [--io-engine E]"""

import argparse
import os
import random
import signal
import socket
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'integration'))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import fuzz  # noqa: E402

ACCOUNTS = ['acct:%d' % i for i in range(6)]
QUEUES = ['q:0', 'q:1', '{q}2']
START_BALANCE = 1000


class Soak:
    def __init__(self, srv, seconds, seed):
        self.srv, self.seed = srv, seed
        self.deadline = time.monotonic() + seconds
        self.errors = []
        self.lock = threading.Lock()
        self.counts = {}
        self.pushed = {}          # (pusher, queue) -> items pushed
        self.popped = []          # (consumer, queue, item)
        self.max_ping = 0.0
        self.pub_done = threading.Event()
        self.published = {}       # publisher -> count
        self.subs_ready = threading.Barrier(1 + 4)   # subscribers + main

    def running(self):
        return time.monotonic() < self.deadline and not self.errors

    def error(self, msg):
        with self.lock:
            self.errors.append(msg)

    def add(self, name, n=1):
        with self.lock:
            self.counts[name] = self.counts.get(name, 0) + n

    def client(self, proto=2, timeout=10):
        return self.srv.client(proto, timeout=timeout)

    def thread(self, fn, *args):
        def body():
            try:
                fn(*args)
            except Exception as e:
                import traceback
                self.error('%s%r: %s\n%s' % (fn.__name__, args, e, traceback.format_exc()))
        t = threading.Thread(target=body, name=fn.__name__, daemon=True)
        t.start()
        return t

    # ---- counters

    def counter(self, i):
        rnd = random.Random(self.seed * 100 + i)
        with self.client() as c:
            while self.running():
                n = rnd.randint(1, 50)
                by = [rnd.randint(-5, 100) for _ in range(n)]
                c.send_raw(harness.encode(('INCR', 'cnt')) +
                           b''.join(harness.encode(('INCRBY', 'cnt2', b)) for b in by))
                replies = [c.read_reply() for _ in range(n + 1)]
                if any(r[:1] != b':' for r in replies):
                    self.error('counter: bad reply %r' % replies)
                self.add('incr')
                self.add('incrby', sum(by))

    # ---- transfers

    def transfer(self, i):
        rnd = random.Random(self.seed * 200 + i)
        with self.client(proto=3 if i % 2 else 2) as c:
            while self.running():
                a, b = rnd.sample(ACCOUNTS, 2)
                x = rnd.randint(1, 50)
                if rnd.random() < 0.7:
                    out = [c.cmd('MULTI'), c.cmd('DECRBY', a, x), c.cmd('INCRBY', b, x), c.cmd('EXEC')]
                    if out[:3] != [b'+OK\r\n', b'+QUEUED\r\n', b'+QUEUED\r\n'] or out[3][:2] != b'*2':
                        self.error('transfer: %r' % out)
                    self.add('transfers')
                else:
                    # Optimistic: WATCH, read, write back; EXEC fails if raced.
                    c.cmd('WATCH', a, b)
                    va, vb = int(c.call('GET', a)), int(c.call('GET', b))
                    c.cmd('MULTI')
                    c.cmd('SET', a, va - x)
                    c.cmd('SET', b, vb + x)
                    r = c.cmd('EXEC')
                    if r[:2] == b'*2':
                        self.add('watched_transfers')
                    elif r in (b'*-1\r\n', b'_\r\n'):
                        self.add('watch_aborts')
                    else:
                        self.error('watched transfer: EXEC %r' % r)

    def auditor(self):
        with self.client() as c:
            while self.running():
                c.cmd('MULTI')
                c.cmd('MGET', *ACCOUNTS)
                vals = harness.decode(c.cmd('EXEC'))[0]
                total = sum(int(v) for v in vals)
                if total != START_BALANCE * len(ACCOUNTS):
                    self.error('auditor: accounts sum to %d, not %d: %r' % (
                        total, START_BALANCE * len(ACCOUNTS), vals))
                self.add('audits')
                time.sleep(0.01)

    # ---- queues

    def pusher(self, i):
        rnd = random.Random(self.seed * 300 + i)
        seq = {q: 0 for q in QUEUES}
        with self.client() as c:
            while self.running():
                q = rnd.choice(QUEUES)
                n = rnd.randint(1, 5)
                items = ['p%d:%d' % (i, seq[q] + k) for k in range(n)]
                r = c.cmd('RPUSH', q, *items)
                if r[:1] != b':':
                    self.error('pusher: %r' % r)
                seq[q] += n
                if rnd.random() < 0.3:
                    time.sleep(0.002)
        with self.lock:
            for q in QUEUES:
                self.pushed[(i, q)] = seq[q]

    def consumer(self, i):
        rnd = random.Random(self.seed * 400 + i)
        got = []
        with self.client(proto=3 if i == 0 else 2) as c:
            while self.running():
                how = rnd.randrange(3)
                if how == 0:
                    r = harness.decode(c.cmd('BLPOP', *QUEUES, '0.2'))
                    if r:
                        q, item = (r[0], r[1]) if isinstance(r, list) else r
                        got.append((q.decode(), item.decode()))
                elif how == 1:
                    q = rnd.choice(QUEUES)
                    r = harness.decode(c.cmd('BLMPOP', '0.2', '1', q, 'LEFT', 'COUNT', '3'))
                    if r:
                        got.extend((r[0].decode(), x.decode()) for x in r[1])
                else:
                    # Through a private list: BLMOVE then LPOP it back.
                    q = rnd.choice(QUEUES)
                    mine = 'mine:%d' % i
                    r = harness.decode(c.cmd('BLMOVE', q, mine, 'LEFT', 'RIGHT', '0.2'))
                    if r is not None:
                        back = harness.decode(c.cmd('LPOP', mine))
                        if back != r:
                            self.error('consumer: BLMOVE gave %r, LPOP %r' % (r, back))
                        got.append((q, r.decode()))
        with self.lock:
            self.popped.extend((i, q, item) for q, item in got)

    def check_queues(self):
        with self.client() as c:
            for q in QUEUES:
                rest = harness.decode(c.cmd('LRANGE', q, '0', '-1'))
                self.popped.extend(('rest', q, x.decode()) for x in rest)
        seen = {}
        last = {}
        for who, q, item in self.popped:
            key = (q, item)
            seen[key] = seen.get(key, 0) + 1
            p, n = item[1:].split(':')
            order = (who, q, p)
            if who != 'rest' and last.get(order, -1) >= int(n):
                self.error('queues: consumer %s got %s after p%s:%d on %s' % (
                    who, item, p, last[order], q))
            last[order] = int(n)
        dupes = [k for k, v in seen.items() if v > 1]
        want = {(q, 'p%d:%d' % (p, n)) for (p, q), total in self.pushed.items() for n in range(total)}
        lost = want - set(seen)
        extra = set(seen) - want
        if dupes or lost or extra:
            self.error('queues: %d duplicated, %d lost, %d unknown (e.g. %r %r %r)' % (
                len(dupes), len(lost), len(extra), dupes[:3], sorted(lost)[:3], sorted(extra)[:3]))
        self.counts['queue_items'] = len(want)

    # ---- pub/sub

    def subscriber(self, i):
        proto = 3 if i % 2 else 2
        c = self.client(proto=proto, timeout=30)
        try:
            if i < 2:
                c.send('SUBSCRIBE', 'chan', 'other')
                c.read_replies(2)
            else:
                c.send('PSUBSCRIBE', 'ch*')
                c.read_reply()
            self.subs_ready.wait(30)
            nxt, done = {}, set()
            while len(done) < 2:
                msg = harness.decode(c.read_reply())
                body = msg[-1].decode()
                p, n = body.split(':')
                if n == 'end':
                    done.add(p)
                    continue
                if int(n) != nxt.get(p, 0):
                    self.error('subscriber %d: from %s got %s, expected %d' % (i, p, n, nxt.get(p, 0)))
                    return
                nxt[p] = int(n) + 1
            with self.lock:
                for p, n in nxt.items():
                    if n != self.published.get(p):
                        self.error('subscriber %d: %d of %s messages from %s' % (
                            i, n, self.published.get(p), p))
            self.add('subscribers_complete')
        finally:
            c.close()

    def publisher(self, i):
        n = 0
        p = 'pub%d' % i
        with self.client() as c:
            while self.running():
                r = c.cmd('PUBLISH', 'chan', '%s:%d' % (p, n))
                if r != b':4\r\n':
                    self.error('publisher: PUBLISH reached %r subscribers, not 4' % r)
                    break
                n += 1
            with self.lock:
                self.published[p] = n
            c.cmd('PUBLISH', 'chan', '%s:end' % p)

    # ---- chaos and churn

    def chaos(self, i):
        rnd = random.Random(self.seed * 500 + i)
        gen = fuzz.Gen(rnd)
        banned = {'SELECT', 'SWAPDB', 'MOVE', 'COPY', 'FLUSHALL', 'FLUSHDB', 'EXEC', 'DISCARD'}
        with self.client(proto=3 if i % 2 else 2) as c:
            c.cmd('SELECT', 1 + i % 2)
            while self.running():
                r = rnd.random()
                if r < 0.05:
                    args = ['PEXPIRE', gen.key(), str(rnd.randint(1, 200))]
                elif r < 0.08:
                    args = ['SET', gen.key(), 'v', 'PX', str(rnd.randint(1, 100))]
                elif r < 0.085:
                    args = ['SWAPDB', '1', '2']
                elif r < 0.087:
                    args = ['FLUSHDB']
                else:
                    args = gen.command(False)
                    if args[0].upper() in banned or args[0].upper() == 'MULTI':
                        continue
                c.cmd(*args)
                self.add('chaos_commands')

    def churn(self, i):
        rnd = random.Random(self.seed * 600 + i)
        while self.running():
            c = self.client()
            how = rnd.randrange(5)
            try:
                if how == 0:
                    c.send_raw(b'*3\r\n$3\r\nSET\r\n$3\r\nkey')      # cut mid-command
                elif how == 1:
                    c.send('BLPOP', 'never:%d' % i, '5')             # closed while blocked
                    time.sleep(rnd.random() * 0.05)
                elif how == 2:
                    c.send('SUBSCRIBE', 'chan-x', 'chan-y')           # closed while subscribed
                    c.read_replies(2)
                elif how == 3:
                    c.cmd('MULTI')
                    c.cmd('INCR', 'churn')
                    c.send('SET', 'churn2', 'x')                    # closed inside MULTI
                else:
                    c.send_raw(b'PING\r\nPING\r\n' * 50)             # inline, unread replies
            finally:
                c.close()
            self.add('churned')

    def pinger(self):
        while self.running():
            t = time.monotonic()
            try:
                with self.client(timeout=5) as c:
                    if c.cmd('PING') != b'+PONG\r\n':
                        self.error('pinger: bad PING reply')
            except (OSError, harness.ConnectionClosed) as e:
                self.error('pinger: no PONG within 5 s (%s)' % e)
                return
            self.max_ping = max(self.max_ping, time.monotonic() - t)
            time.sleep(0.5)

    # ---- the run

    def run(self):
        with self.client() as c:
            c.cmd('FLUSHALL')
            for a in ACCOUNTS:
                c.cmd('SET', a, START_BALANCE)
        subs = [self.thread(self.subscriber, i) for i in range(4)]
        self.subs_ready.wait(30)
        # PUBLISH must count all four before publishing starts.
        harness.wait_until(lambda: self.srv.call('PUBSUB', 'NUMSUB', 'chan')[1] == 2)
        threads = [self.thread(self.publisher, i) for i in range(2)]
        threads += [self.thread(self.counter, i) for i in range(4)]
        threads += [self.thread(self.transfer, i) for i in range(3)]
        threads += [self.thread(self.auditor)]
        threads += [self.thread(self.pusher, i) for i in range(2)]
        threads += [self.thread(self.consumer, i) for i in range(3)]
        threads += [self.thread(self.chaos, i) for i in range(3)]
        threads += [self.thread(self.churn, i) for i in range(2)]
        threads += [self.thread(self.pinger)]
        for t in threads:
            t.join()
        for t in subs:
            t.join(30)
            if t.is_alive():
                self.error('a subscriber did not receive every publisher\'s end message')
        if self.errors:
            return
        with self.client() as c:
            cnt = int(c.call('GET', 'cnt') or 0)
            cnt2 = int(c.call('GET', 'cnt2') or 0)
            total = sum(int(v) for v in harness.decode(c.cmd('MGET', *ACCOUNTS)))
        if cnt != self.counts.get('incr', 0) or cnt2 != self.counts.get('incrby', 0):
            self.error('counters: cnt %d (want %d), cnt2 %d (want %d)' % (
                cnt, self.counts.get('incr', 0), cnt2, self.counts.get('incrby', 0)))
        if total != START_BALANCE * len(ACCOUNTS):
            self.error('accounts: final sum %d' % total)
        self.check_queues()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--xkvd', default=os.path.join(harness.REPO, '.output', 'asan', 'xkvd'))
    ap.add_argument('--io-engine', choices=('io_uring', 'epoll'), default='io_uring')
    ap.add_argument('--seconds', type=float, default=60)
    ap.add_argument('--seed', type=int, default=None)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    seed = args.seed if args.seed is not None else int(time.time()) % 1000000
    t0 = time.monotonic()
    srv = harness.Server('xkvd', binary=os.path.abspath(args.xkvd), engine=args.io_engine,
                         label='xkvd').start()
    soak = Soak(srv, args.seconds, seed)
    try:
        soak.run()
        if not srv.alive():
            soak.error('xkvd exited (rc %s)\n%s' % (srv.proc.returncode, srv.log_tail()))
        srv.stop()
        if srv.proc.returncode not in (0, None):
            soak.error('xkvd exited with status %s at shutdown\n%s' % (
                srv.proc.returncode, srv.log_tail()))
        reports = srv.sanitizer_reports()
        if reports:
            soak.error('sanitizer reports:\n%s' % srv.log_tail(200))
    finally:
        srv.close()
    counts = ' '.join('%s=%d' % kv for kv in sorted(soak.counts.items()))
    print('conc: seed %d, %.0f s, max PING %.3f s, %s' % (seed, time.monotonic() - t0,
                                                         soak.max_ping, counts))
    for e in soak.errors[:10]:
        print('conc: FAILED: ' + e)
    return 1 if soak.errors else 0


if __name__ == '__main__':
    sys.exit(main())
