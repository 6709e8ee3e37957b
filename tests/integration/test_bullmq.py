# SPDX-License-Identifier: GPL-2.0-only
"""BullMQ (npm, a dev dependency of clients/node) on xkvd: a queue of 1,000
jobs, 2 workers, a seventh of the jobs failing once and retried with
backoff, a tenth delayed; every job completes exactly once. BullMQ runs on
Lua scripts (with cmsgpack), streams and BZPOPMIN; tests/clients/bullmq.js
does the work and reports counts."""

import json
import os
import shutil
import subprocess

from harness import REPO, test

SCRIPT = os.path.join(REPO, 'tests', 'clients', 'bullmq.js')


@test
def bullmq_queue_runs_every_job_once(t):
    node = shutil.which('node')
    assert node, 'node is not installed (make deps)'
    assert os.path.isdir(os.path.join(REPO, 'clients', 'node', 'node_modules', 'bullmq')), \
        'clients/node/node_modules is missing (make deps runs npm ci)'
    p = subprocess.run([node, SCRIPT, '--port', str(t.sut.port), '--jobs', '1000'],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, 'bullmq run failed (rc %d):\n%s\n%s' % (
        p.returncode, p.stdout[-3000:], p.stderr[-3000:])
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out['completed'] == 1000 and out['twice'] == 0, out
    assert out['failedOnce'] == 143 and out['counts']['completed'] == 1000, out
