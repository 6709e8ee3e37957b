# SPDX-License-Identifier: GPL-2.0-only
"""python3-rq (Debian) on xkvd: 1,000 jobs run by 2 workers, every result
readable afterwards (rq 1.12+ keeps results in streams: XADD, XREVRANGE),
failures recorded with their traceback, as on redis-server."""

import os
import subprocess
import sys
import tempfile

from harness import test

JOBS = '''
def double(x):
    return 2 * x


def fail(x):
    raise ValueError('job %d fails' % x)
'''


def run_rq(srv, n):
    """Enqueues n jobs (every 50th one fails), runs two burst workers to the
    end, and returns (results, failures) read back through rq."""
    tmp = tempfile.mkdtemp(prefix='xkv-rq-')
    with open(os.path.join(tmp, 'rqjobs.py'), 'w') as f:
        f.write(JOBS)
    url = 'redis://127.0.0.1:%d' % srv.port
    env = dict(os.environ, PYTHONPATH=tmp)
    script = '''
import sys, redis, rq
from rqjobs import double, fail
conn = redis.Redis.from_url(sys.argv[1])
q = rq.Queue('t', connection=conn)
ids = [q.enqueue(fail if i %% 50 == 0 else double, i).id for i in range(%d)]
open(sys.argv[2], 'w').write('\\n'.join(ids))
''' % n
    ids_path = os.path.join(tmp, 'ids')
    subprocess.run(['/usr/bin/python3', '-c', script, url, ids_path], env=env, check=True,
                   timeout=120)
    workers = [subprocess.Popen(['/usr/bin/python3', '-m', 'rq.cli', 'worker', '--burst',
                                 '--url', url, '--name', 'w%d-%d' % (i, os.getpid()), 't'],
                                env=env, cwd=tmp, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
               for i in range(2)]
    try:
        for w in workers:
            assert w.wait(timeout=300) == 0, 'an rq worker failed'
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait()
    check = '''
import sys, json, redis, rq
conn = redis.Redis.from_url(sys.argv[1])
out = {'ok': {}, 'failed': {}}
for i, jid in enumerate(open(sys.argv[2]).read().split()):
    job = rq.job.Job.fetch(jid, connection=conn)
    if job.get_status() == 'finished':
        out['ok'][i] = job.return_value()
    else:
        r = job.latest_result()
        out['failed'][i] = (job.get_status(), 'ValueError' in (r.exc_string or '') if r else None)
print(json.dumps(out))
'''
    p = subprocess.run(['/usr/bin/python3', '-c', check, url, ids_path], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    import json
    out = json.loads(p.stdout)
    return out['ok'], out['failed']


@test
def rq_runs_a_thousand_jobs(t):
    n = 1000
    ok, failed = run_rq(t.sut, n)
    assert {int(i): v for i, v in ok.items()} == {i: 2 * i for i in range(n) if i % 50}, \
        'results missing or wrong: %d of %d' % (len(ok), n - n // 50)
    assert {int(i): v for i, v in failed.items()} == \
        {i: ['failed', True] for i in range(0, n, 50)}, failed
