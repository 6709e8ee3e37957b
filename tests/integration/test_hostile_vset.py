# SPDX-License-Identifier: GPL-2.0-only
"""Hostile arguments for the vector-set commands: random VADD / VSIM / VEMB /
VLINKS / VRANGE / VRANDMEMBER / VSIM.* argument lists (malformed blobs,
NaN and infinite components, zero vectors, wrong dimensions, huge and
negative COUNT / EF / M / REDUCE, unknown options, FILTER expressions good and bad), sent
pipelined from a fixed seed. The server must answer every one and stay up;
make test runs this against the AddressSanitizer build too (hostile tier).
VSET_FUZZ_RUNS sets the count (default 20,000)."""

import os
import random
import struct

from harness import test, xkv_only

WORDS = ['REDUCE', 'FP32', 'VALUES', 'CAS', 'NOQUANT', 'Q8', 'BIN', 'EF', 'SETATTR', 'M',
         'ELE', 'WITHSCORES', 'WITHATTRIBS', 'COUNT', 'EPSILON', 'FILTER', 'FILTER-EF',
         'TRUTH', 'NOTHREAD', 'RAW', 'K', 'ATTR', 'DIM', 'METRIC', 'L2', 'IP', 'COSINE',
         'TYPE', 'INT8', 'FLOAT32', 'EF_CONSTRUCTION', '-', '+', '[a', '(b', '']
NUMS = ['0', '1', '2', '3', '-1', '4', '16', '100', '1000000', '1000001', '4096', '4097',
        '99999999999999999999', '-9223372036854775808', '9223372036854775807',
        '-9223372036854775807', 'nan',
        'inf', '-inf', '1e308', '0.5', '2.5', 'x', '3 ']
FILTERS = ['.a > 1', '"x" in .t', '.year >= 1950 and .x', '.a ** 400', '(.a + 1) * 2 == 4',
           'not .b', '.t in ["a", "b"]', '.a ==', '(', '.a and', '1 +* 2', '[1,2,', 'not']


def rand_blob(rng):
    n = rng.choice([0, 1, 3, 4, 8, 12, 16, 64, 65])
    if rng.random() < 0.5 and n % 4 == 0:
        vals = [rng.choice([0.0, 1.0, -1.0, float('nan'), float('inf'), -float('inf'),
                            1e38, -1e-38, rng.uniform(-1, 1)]) for _ in range(n // 4)]
        return struct.pack('<%df' % len(vals), *vals)
    return bytes(rng.randrange(256) for _ in range(n))


def rand_arg(rng):
    r = rng.random()
    if r < 0.35:
        return rng.choice(WORDS)
    if r < 0.7:
        return rng.choice(NUMS)
    if r < 0.85:
        return rand_blob(rng)
    if r < 0.95:
        return rng.choice(FILTERS)
    return rng.choice(['e1', 'e2', 'e3', 'k'])


def rand_command(rng):
    key = rng.choice(['h1', 'h2', 'hs'])
    cmd = rng.choice(['VADD', 'VADD', 'VADD', 'VSIM', 'VSIM', 'VEMB', 'VLINKS', 'VREM',
                      'VRANGE', 'VRANDMEMBER', 'VSETATTR', 'VINFO', 'VSIM.CREATEINDEX',
                      'VSIM.SET', 'VSIM.SEARCH', 'DEL'])
    args = [cmd, key]
    if cmd == 'VADD' and rng.random() < 0.7:
        dim = rng.choice([1, 2, 3, 4])
        if rng.random() < 0.5:
            args += ['VALUES', str(dim)] + [rng.choice(NUMS) for _ in range(dim)]
        else:
            args += ['FP32', rand_blob(rng) if rng.random() < 0.3 else
                     struct.pack('<%df' % dim, *[rng.uniform(-1, 1) for _ in range(dim)])]
        args.append(rng.choice(['e1', 'e2', 'e3', 'e4']))
    elif cmd == 'VSIM' and rng.random() < 0.6:
        args += rng.choice([['ELE', 'e1'], ['VALUES', '3', '1', '0', '0'],
                            ['FP32', rand_blob(rng)]])
    args += [rand_arg(rng) for _ in range(rng.randrange(0, 7))]
    if cmd == 'VRANDMEMBER' and len(args) > 2 and args[2] in (
            '-9223372036854775808', '-99999999999999999999', '-1000000',
            '-9223372036854775807'):
        # A huge negative count asks for that many replies (Redis 8.8 itself
        # dies on -2^63): not an argument check, just a flood.
        args[2] = '-3'
    return args


@test
@xkv_only
def vset_hostile_arguments(t):
    runs = int(os.environ.get('VSET_FUZZ_RUNS', '20000'))
    rng = random.Random(16)
    batch = 200
    with t.sut.client(timeout=60) as c:
        c.call('DEL', 'h1', 'h2', 'hs')
        done = 0
        while done < runs:
            n = min(batch, runs - done)
            for _ in range(n):
                c.send(*rand_command(rng))
            replies = c.read_replies(n)
            assert replies, 'no replies'
            done += n
            assert c.cmd('PING') == b'+PONG\r\n'
        c.call('DEL', 'h1', 'h2', 'hs')
