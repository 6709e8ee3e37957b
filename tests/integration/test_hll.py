# SPDX-License-Identifier: GPL-2.0-only
"""HyperLogLog: PFADD, PFCOUNT, PFMERGE, PFDEBUG and PFSELFTEST, compared with
redis-server 7.0 byte for byte: replies, errors, and the values' own bytes
(GET) through the sparse encoding, its promotion to dense and merges, so a
HyperLogLog written by either server reads the same on the other."""

import random

from harness import test

CORRUPT_SPARSE = b'HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xfe'


@test
def pfadd_pfcount_bytes(t):
    t.compare([
        ('PFADD', 'h'), ('GET', 'h'), ('PFCOUNT', 'h'), ('PFADD', 'h'),
        ('PFADD', 'h', 'a', 'b', 'c', 'd', 'e', 'f', 'g'), ('GET', 'h'), ('PFCOUNT', 'h'),
        ('GET', 'h'),   # the cached cardinality is part of the value
        ('PFADD', 'h', 'a'), ('PFADD', 'h', 'zz'), ('PFCOUNT', 'h'), ('PFCOUNT', 'missing'),
        ('OBJECT', 'ENCODING', 'h'), ('STRLEN', 'h'), ('TYPE', 'h'),
        ('PFDEBUG', 'ENCODING', 'h'), ('PFDEBUG', 'DECODE', 'h'),
    ])


@test
def sparse_grows_then_turns_dense(t):
    steps = []
    rnd = random.Random(12)
    for i in range(60):
        steps.append(('PFADD', 'g') + tuple('e%d' % rnd.randrange(10 ** 6) for _ in range(50)))
        steps.append(('GET', 'g'))
        if i % 7 == 0:
            steps.append(('PFCOUNT', 'g'))
    steps += [('PFDEBUG', 'ENCODING', 'g'), ('PFCOUNT', 'g'), ('STRLEN', 'g')]
    t.compare(steps)


@test
def sparse_max_bytes_sets_the_promotion(t):
    t.compare([
        ('CONFIG', 'SET', 'hll-sparse-max-bytes', '30'),
        ('PFADD', 's', 'a', 'b', 'c'), ('PFDEBUG', 'ENCODING', 's'),
        ('PFADD', 's', 'd', 'e', 'f', 'g', 'h'), ('PFDEBUG', 'ENCODING', 's'), ('STRLEN', 's'),
        ('CONFIG', 'SET', 'hll-sparse-max-bytes', '3000'),
    ])


@test
def pfmerge_sparse_and_dense(t):
    steps = [('PFADD', 'a', 'x', 'y', 'z'), ('PFADD', 'b', 'z', 'w'),
             ('PFMERGE', 'm', 'a', 'b'), ('GET', 'm'), ('PFCOUNT', 'm'),
             ('PFCOUNT', 'a', 'b'), ('PFCOUNT', 'a', 'b', 'missing'),
             ('PFMERGE', 'a', 'b'), ('GET', 'a'),          # the destination is an input too
             ('PFMERGE', 'new'), ('GET', 'new'), ('PFMERGE', 'new2', 'missing'), ('GET', 'new2')]
    steps.append(('PFADD', 'd') + tuple('m%d' % i for i in range(3000)))
    steps += [('PFDEBUG', 'ENCODING', 'd'), ('PFMERGE', 'md', 'a', 'd'), ('GET', 'md'),
              ('PFDEBUG', 'ENCODING', 'md'), ('PFCOUNT', 'md'), ('PFCOUNT', 'a', 'd')]
    t.compare(steps)


@test
def dense_merges_and_counts_of_several_keys(t):
    # Large enough sets that every register is set and some reach high
    # values: the dense loops take registers four at a time.
    steps = []
    for key, n in (('d1', 40000), ('d2', 60000), ('d3', 25000)):
        for first in range(0, n, 5000):
            steps.append(('PFADD', key) + tuple('%s:%d' % (key, i)
                                                for i in range(first, first + 5000)))
        steps.append(('PFDEBUG', 'ENCODING', key))
    steps += [('PFCOUNT', 'd1', 'd2'), ('PFCOUNT', 'd1', 'd2', 'd3'), ('PFCOUNT', 'd3'),
              ('PFMERGE', 'dm', 'd1', 'd2', 'd3'), ('GET', 'dm'), ('PFCOUNT', 'dm'),
              ('PFADD', 's', 'few', 'members'), ('PFCOUNT', 's', 'd2'),
              ('PFMERGE', 's', 'd1'), ('GET', 's'), ('PFDEBUG', 'GETREG', 'dm')]
    t.compare(steps)


@test
def errors_and_wrong_types(t):
    t.compare([
        ('PFADD',), ('PFCOUNT',), ('PFMERGE',),
        ('SET', 's', 'not an hll'), ('PFADD', 's', 'a'), ('PFCOUNT', 's'), ('PFCOUNT', 's', 'x'),
        ('PFMERGE', 'd', 's'), ('PFMERGE', 's', 'x'), ('EXISTS', 'd'),
        ('SET', 'n', '12345'), ('PFADD', 'n', 'a'), ('SET', 'short', 'HYLL'), ('PFCOUNT', 'short'),
        ('SET', 'baddense', b'HYLL\x00' + b'\x00' * 20), ('PFCOUNT', 'baddense'),
        ('RPUSH', 'l', 'a'), ('PFADD', 'l', 'a'), ('PFCOUNT', 'l'), ('PFMERGE', 'l', 'x'),
        ('SET', 'c', CORRUPT_SPARSE), ('PFCOUNT', 'c'), ('PFADD', 'c', 'a'), ('PFCOUNT', 'c', 'c'),
        ('PFMERGE', 'm', 'c'), ('PFDEBUG', 'GETREG', 'c'),
        ('PFDEBUG', 'NOPE', 'h'), ('PFDEBUG', 'ENCODING', 'missing'),
        ('PFADD', 'h', 'a'), ('PFDEBUG', 'NOPE', 'h'), ('PFDEBUG', 'ENCODING', 'h', 'x'),
    ])


@test
def pfdebug_getreg_todense(t):
    t.compare([
        ('PFADD', 'h', 'a', 'b', 'c'), ('PFDEBUG', 'TODENSE', 'h'), ('PFDEBUG', 'TODENSE', 'h'),
        ('PFDEBUG', 'ENCODING', 'h'), ('GET', 'h'), ('PFDEBUG', 'GETREG', 'h'),
        ('PFADD', 'h2', 'q'), ('PFDEBUG', 'GETREG', 'h2'), ('PFDEBUG', 'ENCODING', 'h2'),
        ('PFDEBUG', 'DECODE', 'h2'),
    ])


@test
def pfselftest_passes(t):
    t.compare([('PFSELFTEST',)])
