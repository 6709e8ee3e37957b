# SPDX-License-Identifier: GPL-2.0-only
"""OBJECT ENCODING / REFCOUNT / IDLETIME / FREQ / HELP."""

from harness import Redis8, Within, test, xkv_only


@test
def object_strings_and_sets(t):
    t.compare([
        ('SET', 'int', '123'), ('SET', 'big', '99999'), ('SET', 'neg', '-5'),
        ('SET', 'short', 'hello'), ('SET', 'long', 'x' * 45), ('SET', 'notcanon', '0123'),
        ('APPEND', 'short2', 'a'), ('SADD', 'ints', '1', '2', '3'),
        ('OBJECT', 'ENCODING', 'int'), ('OBJECT', 'ENCODING', 'big'),
        ('OBJECT', 'ENCODING', 'neg'), ('OBJECT', 'ENCODING', 'short'),
        ('OBJECT', 'ENCODING', 'long'), ('OBJECT', 'ENCODING', 'notcanon'),
        ('OBJECT', 'ENCODING', 'short2'), ('OBJECT', 'ENCODING', 'ints'),
        ('OBJECT', 'ENCODING', 'nope'),
        # Redis 7 shares the integers 0..9999 (refcount INT_MAX); Redis 8
        # embeds the key in every value's object, so nothing is shared.
        Redis8(b':1\r\n', 'OBJECT', 'REFCOUNT', 'int'), ('OBJECT', 'REFCOUNT', 'big'),
        ('OBJECT', 'REFCOUNT', 'neg'), ('OBJECT', 'REFCOUNT', 'short'),
        ('OBJECT', 'REFCOUNT', 'nope'),
        Within(0, 2, 'OBJECT', 'IDLETIME', 'short'), ('OBJECT', 'IDLETIME', 'nope'),
        ('OBJECT', 'FREQ', 'short'), ('OBJECT', 'FREQ', 'nope'),
        ('OBJECT', 'HELP'), ('OBJECT', 'NOSUCH', 'k'), ('OBJECT',),
        ('OBJECT', 'ENCODING'), ('OBJECT', 'ENCODING', 'a', 'b'),
    ])
    t.compare([('OBJECT', 'ENCODING', 'short'), ('OBJECT', 'HELP')], proto=3)


@test
@xkv_only
def object_encodings_follow_redis_7_2(t):
    # Redis 7.0 reports quicklist for every list and hashtable for small
    # string sets; xkv packs small ones as 7.2 does (listpack).
    c = t.sut
    c.call('RPUSH', 'l', 'a')
    c.call('SADD', 's', 'a')
    assert c.call('OBJECT', 'ENCODING', 'l') == b'listpack'
    assert c.call('OBJECT', 'ENCODING', 's') == b'listpack'
    c.call('RPUSH', 'big', *['x' * 100] * 200)
    assert c.call('OBJECT', 'ENCODING', 'big') == b'quicklist'
