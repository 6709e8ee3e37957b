# SPDX-License-Identifier: GPL-2.0-only
"""The generated docs match the tables they come from: docs/configuration.md
(xkvd --config-doc) and docs/commands.md (tools/gen-commands-md.py). Run
`make docs` when this fails."""

import os
import subprocess
import sys

from harness import REPO, test, xkv_only


def generated(argv):
    return subprocess.run(argv, capture_output=True, check=True, timeout=60).stdout


def committed(name):
    with open(os.path.join(REPO, 'docs', name), 'rb') as f:
        return f.read()


def first_difference(a, b):
    for n, (x, y) in enumerate(zip(a.splitlines(), b.splitlines()), 1):
        if x != y:
            return 'line %d:\n  docs:      %r\n  generated: %r' % (n, x, y)
    return 'lengths differ (%d vs %d lines)' % (len(a.splitlines()), len(b.splitlines()))


@test
@xkv_only
def configuration_md_is_current(t):
    want = generated([t.env.xkvd, '--config-doc'])
    have = committed('configuration.md')
    assert have == want, 'docs/configuration.md is stale (make docs): ' + \
        first_difference(have, want)
    # Every directive CONFIG GET knows is documented (an alias next to its name).
    names = t.sut.call('CONFIG', 'GET', '*')[::2]
    for name in names:
        assert b'| `%s` |' % name in have or b'| `%s` (`' % name in have or \
            b' (`%s`) |' % name in have, name


@test
@xkv_only
def commands_md_is_current(t):
    want = generated([sys.executable, os.path.join(REPO, 'tools', 'gen-commands-md.py'),
                      t.env.xkvd])
    have = committed('commands.md')
    assert have == want, 'docs/commands.md is stale (make docs): ' + first_difference(have, want)
