# SPDX-License-Identifier: GPL-2.0-only
"""A bounded run of the script fuzzer (tests/soak/script_fuzz.py): random
Lua scripts from its grammar (syntax and runtime errors, nested and cyclic
tables returned, huge replies, errors thrown with non-string values,
redis.call with wrong types), each answered by one well-formed reply, the
server alive at the end. make test runs it on the release build and on the
sanitizer build (tier script-fuzz-asan); make fuzz-scripts runs 1M."""

import os
import sys

from harness import REPO, test, xkv_only

sys.path.insert(0, os.path.join(REPO, 'tests', 'soak'))
import script_fuzz  # noqa: E402

SCRIPTS = int(os.environ.get('XKV_SCRIPT_FUZZ', '3000'))


@test
@xkv_only
def random_scripts_get_one_reply_each(t):
    sent, errors = script_fuzz.run(t.sut.port, SCRIPTS, seed=7)
    assert sent == SCRIPTS, sent
    # Both kinds happen: a grammar that only fails would test little.
    assert 0 < errors < sent, (errors, sent)
    with t.sut.client() as c:
        assert c.cmd('PING') == b'+PONG\r\n'
        c.cmd('FLUSHALL')
        c.cmd('SCRIPT', 'FLUSH')


@test
@xkv_only
def what_the_fuzzer_found(t):
    """An error table whose __index raises (Redis 8.8 crashes on it: Lua
    panics outside a protected call) gets an error reply; an error whose
    fields are numbers keeps them until the reply is written (they were
    read after the collector could free them)."""
    with t.sut.client() as c:
        r = c.cmd('EVAL', 'error(setmetatable({}, {__index=function() error("x") end}))', '0')
        assert r.startswith(b'-ERR unknown error script: '), r
        r = c.cmd('EVAL', 'return setmetatable({err="E1"}, {__index=function() error("x") end})', '0')
        assert r == b'-E1\r\n', r
        r = c.cmd('EVAL', "return {verbatim_string=setmetatable({}, {__index=function() error('x') end})}", '0')
        assert r == b'*0\r\n', r
        for _ in range(200):
            r = c.cmd('EVAL', 'collectgarbage() error({err=12345})', '0')
            assert r.startswith(b'-12345 script: ') and r.endswith(b', on @user_script:1.\r\n'), r
        assert c.cmd('PING') == b'+PONG\r\n'
