#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Long soaks: `make soak` (not part of `make test`).

Three parts share one time budget (default 25 minutes, `make soak
SOAK_MINUTES=5` to change it):

  fuzz       tests/soak/fuzz.py, half the budget: a randomized differential
             fuzzer that sends the same random (and malformed) commands of
             every data type to a private xkvd and a private Redis 8.8
             (--redis PATH, a peer built outside the checkout: xkvd answers
             as 8.8, whose doubles and checks differ from Debian's 7.0; the
             part is skipped without one) and compares every reply byte for byte
             (multisets for unordered replies), and the whole dataset every
             500 steps. Several seeds, alternating io_uring and epoll. A
             mismatch prints the seed, the step, the last commands and the
             command line that replays it.
  conc       tests/soak/conc.py, 30%: many clients on both workers of the
             sanitizer build (.output/asan/xkvd) checking invariants that
             hold under any interleaving (exact counter totals, conserved
             MULTI transfers, exactly-once blocking pops, in-order pub/sub),
             responsiveness, and an empty sanitizer log at shutdown.
  coherence  tests/e2e/run.py's coherence checker with a large operation
             count (about 70,000 per second of its share, e.g. 21M for the
             default budget): readers GET over UDP from the kernel fast path
             while writers change the keys over TCP; no read may be stale.
             Needs root (it makes a network namespace).

Each part prints one summary line `soak: <part>: ok|FAILED (...)`; the last
line is `N passed, M failed`, and the exit status is 0 only if none failed.
Full output of each part is in .output/soak-logs/<part>.log.

Usage: run.py [--output DIR] [--redis PATH] [--minutes M] [--seed N] [--only PART]"""

import argparse
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, '..', '..'))
PYTHON = '/usr/bin/python3'
COHERENCE_RATE = 70000        # ops per second the checker sustains here, roughly


def part(name, argv, log_dir, timeout):
    """Runs one part, its output into a log and a few lines to stdout."""
    log = os.path.join(log_dir, name + '.log')
    t0 = time.monotonic()
    print('soak: %s: %s' % (name, ' '.join(os.path.relpath(a, REPO) if a.startswith(REPO)
                                              else a for a in argv)))
    sys.stdout.flush()
    with open(log, 'w') as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
        try:
            rc = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            # SIGTERM lets the part stop its own servers by PID.
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            rc = 'timeout'
        except BaseException:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
            raise
    with open(log, errors='replace') as f:
        text = f.read()
    return rc, text, time.monotonic() - t0, log


def summary_fuzz(text):
    last = [l for l in text.splitlines() if l.startswith('fuzz: ') and 'seeds,' in l]
    return last[-1][6:] if last else 'no summary'


def summary_conc(text):
    last = [l for l in text.splitlines() if l.startswith('conc: seed')]
    return last[-1][6:] if last else 'no summary'


def summary_coherence(text):
    last = [l[2:] for l in text.splitlines() if l.startswith('# ops ')]
    return last[-1] if last else 'no summary'


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--output', default=os.path.join(REPO, '.output'))
    ap.add_argument('--minutes', type=float, default=25)
    ap.add_argument('--seed', type=int, default=None, help='first fuzz seed (default: the clock)')
    ap.add_argument('--only', default='', help='run only the parts whose name contains this')
    ap.add_argument('--redis', default='', help="the fuzz part's Redis 8.8 reference")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    output = os.path.abspath(args.output)
    log_dir = os.path.join(output, 'soak-logs')
    os.makedirs(log_dir, exist_ok=True)
    budget = args.minutes * 60
    seed = args.seed if args.seed is not None else int(time.time()) % 1000000
    fuzz_s, conc_s, coh_s = budget * 0.5, budget * 0.3, budget * 0.2
    ops = max(1000000, int(coh_s * COHERENCE_RATE))
    parts = [
        ('fuzz', [PYTHON, os.path.join(HERE, 'fuzz.py'), '--xkvd', os.path.join(output, 'xkvd'),
                  '--redis', args.redis,
                  '--seed', str(seed), '--seeds', str(max(1, int(fuzz_s // 120))),
                  '--seconds', str(int(fuzz_s)), '--io-engine', 'both'],
         fuzz_s * 1.5 + 120, summary_fuzz),
        ('conc', [PYTHON, os.path.join(HERE, 'conc.py'), '--xkvd',
                  os.path.join(output, 'asan', 'xkvd'), '--seed', str(seed),
                  '--seconds', str(int(conc_s))],
         conc_s * 1.5 + 120, summary_conc),
        ('coherence', [PYTHON, os.path.join(REPO, 'tests', 'e2e', 'run.py'), '--output', output,
                       '--only', 'coherence_checker', '--coherence-ops', str(ops)],
         max(600, ops // 20000) + 120, summary_coherence),
    ]
    passed = failed = 0
    if not os.access(args.redis, os.X_OK):
        print('soak: fuzz: skipped: no Redis 8.8 reference (--redis PATH, make soak REDIS_88=PATH)')
        parts = [p for p in parts if p[0] != 'fuzz']
    for name, argv, timeout, summarize in parts:
        if args.only not in name:
            continue
        rc, text, secs, log = part(name, argv, log_dir, timeout)
        ok = rc == 0
        print('soak: %s: %s in %.0f s: %s%s' % (
            name, 'ok' if ok else 'FAILED (%s)' % ('timed out' if rc == 'timeout' else 'rc %s' % rc),
            secs, summarize(text), '' if ok else '; see ' + os.path.relpath(log, REPO)))
        if not ok:
            # The lines that say what went wrong, not the whole log.
            for line in [l for l in text.splitlines() if not l.startswith('soak: ')][-60:]:
                print('  ' + line)
        sys.stdout.flush()
        passed, failed = passed + ok, failed + (not ok)
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
