# SPDX-License-Identifier: GPL-2.0-only
"""tools/xkv-vbench, the vector-set benchmark client: its generator is
deterministic for a seed, writes TEXMEX files of unit vectors whose ground
truth is the exact top 10 (checked here by brute force), and `run` loads and
queries the server under test with a recall the data allows (skipped while
xkvd has no VADD)."""

import json
import os
import shutil
import struct
import subprocess
import tempfile

from harness import Skip, test, xkv_only


def vbench(t):
    here = os.path.dirname(t.env.xkvd)
    exe = next((p for p in (os.path.join(here, 'xkv-vbench'),
                            os.path.join(os.path.dirname(here), 'xkv-vbench'))
                if os.access(p, os.X_OK)), None)
    assert exe, 'no xkv-vbench next to %s (make tools)' % t.env.xkvd
    return exe


def read_vecs(path, fmt):
    raw = open(path, 'rb').read()
    dim = struct.unpack_from('<i', raw)[0]
    rec = 4 + 4 * dim
    assert len(raw) % rec == 0
    return [list(struct.unpack_from('<%d%s' % (dim, fmt), raw, i + 4))
            for i in range(0, len(raw), rec)]


def gen(t, out, seed):
    p = subprocess.run([vbench(t), 'gen', '--dim', '24', '--base', '600', '--query', '20',
                        '--clusters', '6', '--rank', '4', '--seed', str(seed), '--out', out],
                       capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr.decode()


@test
def generator_is_deterministic_and_exact(t):
    d = tempfile.mkdtemp(prefix='vbench-smoke-')
    try:
        gen(t, d + '/a', 5)
        gen(t, d + '/b', 5)
        gen(t, d + '/c', 6)
        for f in ('base.fvecs', 'query.fvecs', 'groundtruth.ivecs'):
            assert open(d + '/a/' + f, 'rb').read() == open(d + '/b/' + f, 'rb').read(), f
        assert open(d + '/a/base.fvecs', 'rb').read() != open(d + '/c/base.fvecs', 'rb').read()
        base = read_vecs(d + '/a/base.fvecs', 'f')
        query = read_vecs(d + '/a/query.fvecs', 'f')
        gt = read_vecs(d + '/a/groundtruth.ivecs', 'i')
        assert (len(base), len(base[0]), len(query), len(gt[0])) == (600, 24, 20, 10)
        for v in base[:50] + query:
            assert abs(sum(x * x for x in v) - 1) < 1e-5
        for q, want in zip(query, gt):
            sims = [sum(a * b for a, b in zip(q, v)) for v in base]
            top = sorted(range(len(base)), key=lambda i: (-sims[i], i))[:10]
            assert top == want, (top, want)
        meta = json.load(open(d + '/a/meta.json'))
        assert meta['dim'] == 24 and meta['seed'] == 5
    finally:
        shutil.rmtree(d)


@test
@xkv_only
def run_loads_and_queries(t):
    with t.sut.client() as c:
        if c.cmd('VADD').startswith(b'-ERR unknown command'):
            raise Skip('xkvd has no vector sets yet (VADD: unknown command)')
    d = tempfile.mkdtemp(prefix='vbench-smoke-')
    try:
        gen(t, d, 7)
        p = subprocess.run([vbench(t), 'run', '--data', d, '-p', str(t.sut.port), '--ef', '200',
                            '--warmup', '0.1', '--seconds', '0.5', '--nothread', 'both',
                            '--json', d + '/out.json'], capture_output=True, timeout=120)
        assert p.returncode == 0, p.stdout.decode() + p.stderr.decode()
        out = json.load(open(d + '/out.json'))
        assert out['load']['vectors'] == 600 and out['load']['errors'] == 0
        assert out['load']['used_memory'] > 0
        assert [q['mode'] for q in out['queries']] == ['default', 'nothread']
        for q in out['queries']:
            assert q['recall'] >= 0.9 and q['qps1'] > 0 and q['qps2'] > 0, q
        with t.sut.client() as c:
            assert c.cmd('EXISTS', 'vbench') == b':0\r\n'
    finally:
        shutil.rmtree(d)
