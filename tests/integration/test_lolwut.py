# SPDX-License-Identifier: GPL-2.0-only
"""LOLWUT against Redis 8.8 (/work/peers or XKV_REDIS_88). Drawings without
randomness (Schotter with at most two rows of squares, the version line of
other versions, argument errors) are byte for byte Redis 8.8's, the version
number aside (ours is INFO's redis_version); the random ones (the default
poem, the skyline, Schotter's loose rows) keep Redis's shape."""

import os
import re

from harness import Client, Server, decode, test, xkv_only

REDIS_88 = os.environ.get('XKV_REDIS_88',
                          '/work/peers/redis-8.8.0/src/redis-server')

FIXED = [
    ('VERSION', 5, 66, 8, 2), ('VERSION', 5, 66, 8, 1), ('VERSION', 5, 1, 1, 1),
    ('VERSION', 5, 3, 2, 2), ('VERSION', 5, 100, 13, 2), ('VERSION', 5, 1000, 200, 2),
    ('VERSION', 5, 0, -3, 0), ('VERSION', 9), ('VERSION', 7), ('VERSION', 50), ('VERSION', -1),
    ('VERSION', 5, 'x'), ('VERSION', 'x'), ('VERSION', 6, 1, 'y'),
]


def version_free(raw):
    return re.sub(rb'Redis ver\. [0-9.]+', b'Redis ver. V', raw)


def verses(text):
    return [line for line in text.split(b'\n')[:10] if line.startswith(b' ')]


@test
@xkv_only
def lolwut_shapes(t):
    with t.sut.client() as c:
        poem = decode(c.cmd('LOLWUT'))
        assert b'TAPE MARK I' in poem and poem.endswith(b'Redis ver. 7.0.15\n'), poem
        lines = verses(poem)
        assert 1 <= len(lines) <= 10 and all(l == l.upper() and b'/' not in l for l in lines), lines
        it = decode(c.cmd('LOLWUT', 'VERSION', 8, 'it'))
        assert any(b'LA ' in l or b'IL ' in l or b'DI ' in l for l in verses(it)), it
        sky = decode(c.cmd('LOLWUT', 'VERSION', 6, 30, 8)).split(b'\n')
        assert len(sky) == 8 + 3 and all(l.count(b' \x1b[0m') == 30 for l in sky[:8]), sky
        assert b'Plaguemon' in sky[9], sky
        art = decode(c.cmd('LOLWUT', 'VERSION', 5, 40, 6, 6)).decode().split('\n')
        assert all(len(l) == 40 and all(0x2800 <= ord(ch) <= 0x28ff for ch in l)
                   for l in art[:-3]), art
    with Client(t.sut.port, proto=3) as c:
        assert c.cmd('LOLWUT', 'VERSION', 9) == b'=22\r\ntxt:Redis ver. 7.0.15\n\r\n'


@test
@xkv_only
def lolwut_equal_redis_88(t):
    if not os.access(REDIS_88, os.X_OK):
        print('# Redis 8.8 not built: LOLWUT not compared')
        return
    r88 = Server('redis', redis_binary=REDIS_88, label='redis-8.8').start()
    try:
        for proto in (2, 3):
            with Client(t.sut.port, proto=proto) as a, Client(r88.port, proto=proto) as b:
                for args in FIXED:
                    mine, theirs = a.cmd('LOLWUT', *args), b.cmd('LOLWUT', *args)
                    if mine[:1] not in b'-':
                        # The version's length changes the bulk's header.
                        mine, theirs = decode(mine), decode(theirs)
                    assert version_free(mine) == version_free(theirs), (proto, args, mine, theirs)
                # The poem's trailer and the skyline's legend are Redis's.
                mine, theirs = decode(a.cmd('LOLWUT')), decode(b.cmd('LOLWUT'))
                assert version_free(mine.split(b'\n\n', 1)[1]) == \
                    version_free(theirs.split(b'\n\n', 1)[1])
    finally:
        r88.close()
