# SPDX-License-Identifier: GPL-2.0-only
"""Runs the integration tests (test_*.py here) and prints TAP.

Each test file gets one reference redis-server and one server under test
(xkvd, or a second redis-server with --reference-only); both are flushed
between tests. A test fails on an exception, on the server under test
dying, or on a sanitizer report in its log. Exit status 1 if any failed."""

import argparse
import glob
import importlib
import os
import signal
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


class Tap:
    def __init__(self, tag):
        self.tag, self.n, self.passed, self.failed, self.skipped = tag, 0, 0, 0, 0

    def result(self, name, ok, diag=(), skip=None):
        self.n += 1
        line = '%s %d - %s [%s]' % ('ok' if ok else 'not ok', self.n, name, self.tag)
        print(line + (' # SKIP ' + skip if skip else ''))
        for d in diag:
            print('# ' + d)
        sys.stdout.flush()
        if skip:
            self.skipped += 1
        elif ok:
            self.passed += 1
        else:
            self.failed += 1


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--xkvd', default=os.path.join(harness.REPO, '.output', 'xkvd'))
    ap.add_argument('--io-engine', choices=('io_uring', 'epoll'), default='io_uring')
    ap.add_argument('--only', default='', help='run tests whose file:name contains this')
    ap.add_argument('--reference-only', action='store_true',
                    help='test a second redis-server instead of xkvd')
    args = ap.parse_args()
    # Make SIGTERM unwind like ^C so every server is stopped by PID.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    xkvd = os.path.abspath(args.xkvd)
    if not args.reference_only and not os.access(xkvd, os.X_OK):
        sys.exit('run.py: no xkvd binary at %s (build it, or pass --xkvd)' % xkvd)

    here = os.path.dirname(os.path.abspath(__file__))
    for path in sorted(glob.glob(os.path.join(here, 'test_*.py'))):
        importlib.import_module(os.path.basename(path)[:-3])
    by_file = {}
    for mod, fn in harness.TESTS:
        name = '%s.py:%s' % (mod, fn.__name__)
        if args.only in name:
            by_file.setdefault(mod, []).append((name, fn))

    env = harness.Env(xkvd, args.io_engine, args.reference_only)
    tap = Tap('reference' if args.reference_only else args.io_engine)
    try:
        for mod, tests in by_file.items():
            run_file(env, tap, mod, tests)
    finally:
        harness.close_all()
    print('1..%d' % tap.n)
    print('# skipped: %d' % tap.skipped)
    print('# integration: %d passed, %d failed' % (tap.passed, tap.failed))
    return 1 if tap.failed else 0


def run_file(env, tap, mod, tests):
    ref = sut = None
    try:
        ref, sut = env.make('ref'), env.make('sut')
    except Exception as e:
        for srv in (ref, sut):
            if srv:
                srv.close()
        tap.result('%s.py:<start servers>' % mod, False, str(e).splitlines())
        return
    try:
        for name, fn in tests:
            if getattr(fn, 'xkv_only', False) and env.reference_only:
                tap.result(name, True, skip='xkvd-only behaviour')
                continue
            ok, diag, skip = run_one(env, ref, sut, fn)
            tap.result(name, ok, diag, skip)
            if not sut.alive():
                sut.close()
                sut = env.make('sut')
            if not ref.alive():
                ref.close()
                ref = env.make('ref')
        # Sanitizers report leaks at exit.
        sut.stop()
        report = sut.sanitizer_reports()
        if report:
            tap.result('%s.py:<%s exit>' % (mod, sut.label), False, report + sut.log_tail().splitlines())
    finally:
        ref.close()
        sut.close()


def run_one(env, ref, sut, fn):
    """Run one test: (ok, diagnostic lines, reason it skipped or None)."""
    ctx = harness.Ctx(env, ref, sut)
    diag, skip = [], None
    try:
        for srv in (ref, sut):
            with srv.client() as c:
                assert c.cmd('FLUSHALL') == b'+OK\r\n', '%s: FLUSHALL failed' % srv.label
        fn(ctx)
    except harness.Skip as e:
        skip = str(e)
    except Exception:
        diag = traceback.format_exc().rstrip().splitlines()
    tested = [sut] + [s for s in ctx.spawned if s.label == sut.label]
    for srv in tested[1:]:
        srv.stop()
    if not sut.alive():
        diag.append('%s died (rc %s); restarting it' % (sut.label, sut.proc.returncode))
    elif diag and not sut.responsive():
        diag.append('%s does not answer PING; restarting it' % sut.label)
        sut.stop()
    for srv in tested:
        diag += srv.sanitizer_reports()
    if diag:
        for srv in tested:
            diag += srv.log_tail().splitlines()
    ctx.cleanup()
    return not diag, diag, None if diag else skip


if __name__ == '__main__':
    sys.exit(main())
