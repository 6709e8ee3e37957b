#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Records what Redis 8.8's VSIM FILTER does with a list of expressions over
a list of JSON attributes, as the C table tests/unit/vset_filter_cases.h
that tests/unit/test_vset_filter.c replays against daemon/vset_filter.c.

Each attribute string is one element of a vector set; each expression runs
as `VSIM k VALUES 2 1 0 COUNT 1000 TRUTH FILTER expr` (a linear scan, so
every matching element comes back) and the reply becomes either the error
text or the bit mask of the matching attributes. Element 0 has no
attributes at all. Besides the hand-written expressions, --random N adds N
random ones (--seed S), about 40% of them syntax errors.

    tools/record-vset-filter.py --redis /path/to/redis-server [--port 7420] \
        > tests/unit/vset_filter_cases.h
"""

import argparse
import math
import os
import random
import subprocess
import sys
import tempfile
import time

import redis

# index 0: no attributes (VSETATTR never called)
ATTRS = [
    None,
    '{"year": 1984, "name": "The Matrix", "rating": 8.7, "genre": "action"}',
    '{"year": 1950, "name": "foo", "rating": 4, "genre": "drama", "ok": true}',
    '{"year":2024,"name":"barfoobar","rating":-1.5,"ok":false,"tags":["a","b",3]}',
    '{"year": "1990", "name": "", "n": null, "tags": []}',
    '{"a": 1, "a": 2}',
    '{"s": "x\\"y", "t": "tab\\there", "u": "\\u0041", "bs": "a\\\\b"}',
    '{"arr": [1, 2, 3], "mix": [1, "foo", "bar"], "nested": [1, [2, 3]], "withnull": [1, null]}',
    '{"obj": {"year": 1984}, "arrobj": [{"a": 1}], "year": 1984}',
    '{"num": 1e3, "neg": -0, "plus": +5, "hexs": "0x10", "infs": "inf", "sp": " 5", "ws": "5 "}',
    'not json',
    '{"year": 1984',
    '{"year": 1984,}',
    '{ "year" : 1984 , "x" : [ 1 , 2 ] }',
    '[1, 2, 3]',
    '{}',
    '{"bad": 1abc, "year": 1}',
    '{"first": 1abc}',
    '{"tr": trueish, "year": 7}',
    '{"tr": trueish}',
    '{"f": false, "t": true, "z": 0}',
    '{"x": "10", "y": "abc", "e": ""}',
    '{"arr": [1, 2,], "year": 3}',
    '{"arr": [[[[1]]], 2], "deep": [[[[[]]]]]}',
    '{"esc\\"key": 5, "year": 12}',
    '{"big": 1e400, "nan": "nan", "m": -7, "p": 2.5}',
    '{"k-1": 3, "k_2": 4, "9x": 5}',
    '{"arr": ["x\\"y", "a b"], "s": "a b"}',
    '{"unterminated": "abc',
    '{"year": 1984} trailing',
    '  \n {"year":\t1984}',
    '{"e": [], "n": null}',
    '{"year": 2000, "name": "Spielberg", "director": "Nolan", "rating": 9}',
    '{"v": 3, "w": 2}',
    '{"v": 10, "w": 3}',
    '{"v": -4, "w": 0}',
]

EXPRS = [
    # basics
    '1', '0', '-1', '1 + 1', '2 - 2', '"foo"', '""', "'a'", 'null', '!null',
    '.year', '.year > 1950', '.year >= 1950', '.year < 1990', '.year <= 1984',
    '.year == 1984', '.year != 1984', '.year == "1984"', '.name == "foo"',
    '.name == \'foo\'', '.name', '!.name', 'not .name', '.genre == "action" and .rating > 8.0',
    '.year >= 1980 and .year < 1990', '.year > 2000 or .year < 1960',
    '.year > 2000 || .year < 1960', '.year > 2000 && .rating < 0',
    '(.year - 2000) ** 2 < 100 and .rating / 2 > 4',
    '.missing', '.missing or 1', '1 or .missing', '!.missing', '.missing == null',
    '.n == null', '.n', '!.n', '.n != null', 'null == null', 'null == 0', 'null != 0',
    '.ok', '.ok == 1', '.ok == true', '.ok == false', '!.ok', '.f == 0', '.t == 1', '.z == .f',
    # in
    '"foo" in .name', '.name in "xxfooxx"', '"foo" in ["foo", "bar"]', '5 in [1, 2, 3]',
    '2 in .arr', '"foo" in .mix', '"1" in .arr', '1 in .mix', '2 in .nested', '0 in .nested',
    '1 in .withnull', 'null in .withnull', '0 in .withnull', '.director in ["Spielberg", "Nolan"]',
    '.name in ["Spielberg", "Nolan", "foo"]', '3 in .tags', '"a" in .tags', '"" in .name',
    '"" in ""', '1 in []', '.arr in .arr', '[1] == [2]', '[1] == 0', '[] == null', '.tags == 0',
    '"a b" in .arr', '"x\\"y" in .arr', '.s == "x\\"y"', '.s == \'x"y\'', '"x" in .s',
    '1 in 1', '"1" in 1', '1 in "1"', '.e in .e', '[1, 2,] == 0', '1 in [1,]',
    '1 in [ 1 , 2 ]', '[ ]', '[1]', '"ab" in "abc" in [1]', '.x in .x',
    # arithmetic and precedence
    '1 + 2 * 3 == 7', '(1 + 2) * 3 == 9', '2 ** 3 ** 2 == 512', '(2 ** 3) ** 2 == 64',
    '-2 ** 2', '10 % 3 == 1', '-7 % 3 == -1', '7 / 2 == 3.5', '1 / 0 > 1000', '0 / 0',
    '0 / 0 == 0 / 0', '.v * .w > 10', '.v % .w == 1', '.v - .w', '.v / .w < 0', '.v ** .w > 100',
    '5-3 == 2', '5--3 == 8', '5 - -3 == 8', '3 * -2 == -6', '!1 + 2', '!0 + 0', '1 + !0 == 2',
    '1 < 2 == 1', '1 == 1 == 1', '3 > 2 > 1', '1 and 0 or 1', '0 or 1 and 0', '1 or 0 and 0',
    'not 0 and 0', 'not (0 and 0)', '!(1)', '.x + 1 == 11', '.x * 2 == 20', '.y + 1 == 1',
    '.y == 0', '.x == 10', '.x > 9', '.x == "10"', '.e == 0', '.e + 0 == 0', '"abc" > 0',
    '"10" > 9', '"0x10" == 16', '.hexs == 16', '.infs > 1e300', '.sp == 5', '.ws == 5',
    '.ws == 0', '.num == 1000', '.neg == 0', '.plus == 5', '.big > 1e300', '.nan == .nan',
    '.nan != .nan', '.m % .p', '.p ** 2 == 6.25', '1e3 == 1000', '1E3 == 1000', '1.5e1 == 15',
    '1e-5', '1e+5', '.5', '5.', '5. == 5', '1.2.3', '1e', '0.0', '00012 == 12',
    # selectors and odd tokens
    '.k-1 == 3', '.k_2 == 4', '.9x == 5', '.k - 1', '.year-1', '.year - 1 == 1983',
    '.', '. == 1', '1 == .', '..year', '.year.x', '.obj', '.obj == 0', '.arrobj', '.esc',
    '.bad', '.first == 1', '.tr', '.year == 7', '.arr', '.deep', '.unterminated', '.u',
    '.t == "tab\\there"', '.bs == "a\\\\b"', '.bs', '.s', '.u == "u0041"', '.u == "\\u0041"',
    # syntax errors
    '', ' ', '(', ')', '()', '(1', '1)', '((1)', '1 +', '+ 1', '* 1', '1 2', '1 2 +',
    '1 2 3 + +', '!!1', 'not not 1', '! !1', '!(!1)', '1 !', 'true', 'false', 'TRUE', 'AND',
    '1 AND 1', 'nul', 'null1', 'nullx', 'null(', 'null (1)', 'andx', '1 andx 1', '1 and1',
    '1 &1', '1 & 1', '1 | 1', '1 = 1', '1 === 1', '1 !== 1', '1 <> 1', '1 >< 1', '1 => 1',
    '"abc', "'abc", '"abc\\"', '"a\\\\" == 1', '[1, 2', '[1 2]', '[1, [2]]', '[a]', '[.x]',
    '[null]', '[1,,2]', '[,]', '[-]', '[-1]', '[1e]', '[1.2.3] ', '1 in [1', 'foo',
    '.year > 1950 foo', '.year > 1950 and', '@', '#', '1 # comment', '$x', '.year >> 1',
    '.year <<= 1', '.year ** ** 2', '1 ++ 1', '1 +- 1', '1 -+ 1', '- 1', '-', '-a', '-.year',
    '(-1)', '(- 1)', '(1) -1', '(1) - 1', '1 -1', '.year -1', '"a" -1', 'in', 'in 1',
    '1 in', 'or', '1 or', 'not', 'not 1', 'not1', 'note', 'no', 'x', '1x', '1 x',
    '.a == 1', '.a == 2', '"1" == 1', '\t1\n', '1 \x01', '\u00e9', '1 == "\u00e9"',
    '"\u00e9" in "a\u00e9b"',
    '1' * 255, '1' * 256, '1' * 300 + ' == 1', '(' * 40 + '1' + ')' * 40,
    '(' * 40 + '1' + ')' * 39, '1' + ' + 1' * 50 + ' == 51', '.year\n> 1950',
    '"multi\nline" == 1', '.year > 1950\r\n', '1 in [1, "a", \'b\']',
]


FIELDS = ['a', 'year', 'name', 'tags', 'x', 'k-1', 'n', 'arr', 'mix', 's', 'v', 'w', 'ok',
          'nested', 'e', 'bs', 'hexs', 'missing']
SOUP = ['(', ')', '!', 'not ', '**', '*', '/', '%', '+', '-', '>', '>=', '<', '<=', '==', '!=',
        ' in ', ' and ', '&&', ' or ', '||', 'null', '1', '0', '-3', '2.5', '1e3', '1e', '"foo"',
        "'b'", '"a\\"b"', '[1, 2]', '["a", 3]', '[]', '[1,', '.', '..', 'true', '=', ' ', '\\',
        '@', ',', '"', '3 ']
BINOPS = [' + ', ' - ', ' * ', ' / ', ' % ', ' ** ', ' > ', ' >= ', ' < ', ' <= ', ' == ',
          ' != ', ' in ', ' and ', ' && ', ' or ', ' || ', '+', '-', '*', '==']


def random_expr(rnd, d=0):
    """A mostly well-formed expression over FIELDS, with stray tokens."""
    k = rnd.randrange(4 if d > 4 else 9)
    if k == 0:
        return str(rnd.choice([rnd.randrange(-20, 20), round(rnd.random() * 10, 3), 1984, 1950]))
    if k == 1:
        return '.' + rnd.choice(FIELDS)
    if k == 2:
        return rnd.choice(SOUP)
    if k == 3:
        return rnd.choice(['"foo"', "'b'", '"1990"', '"a"', '""', '"bar"'])
    if k == 4:
        return '(' + random_expr(rnd, d + 1) + ')'
    if k == 5:
        return rnd.choice(['!', 'not ']) + random_expr(rnd, d + 1)
    return random_expr(rnd, d + 1) + rnd.choice(BINOPS) + random_expr(rnd, d + 1)


def random_exprs(n, seed):
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        e = random_expr(rnd)
        if e and rnd.randrange(5) == 0:
            i = rnd.randrange(len(e))
            e = e[:i] + rnd.choice(['', ' ', '(', ')', '-', '.', '"']) + e[i + 1:]
        out.append(e)
    return out


def cstr(s):
    out = []
    for ch in s.encode('utf-8'):
        c = chr(ch)
        if c == '\\':
            out.append('\\\\')
        elif c == '"':
            out.append('\\"')
        elif 32 <= ch < 127:
            out.append(c)
        else:
            out.append('\\%03o' % ch)
    return '"' + ''.join(out) + '"'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--redis', required=True, help='path of a redis-server 8.8 binary')
    ap.add_argument('--port', type=int, default=7420)
    ap.add_argument('--random', type=int, default=1000, help='random expressions to add')
    ap.add_argument('--seed', type=int, default=1)
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix='vfilter-rec-')
    srv = subprocess.Popen([args.redis, '--port', str(args.port), '--bind', '127.0.0.1',
                            '--save', '', '--appendonly', 'no', '--dir', tmp],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        r = None
        for _ in range(100):
            try:
                r = redis.Redis(port=args.port)
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        version = r.info('server')['redis_version']
        for i, a in enumerate(ATTRS):
            ang = 2 * math.pi * i / (len(ATTRS) * 2)
            r.execute_command('VADD', 'k', 'VALUES', 2, repr(math.cos(ang)), repr(math.sin(ang)),
                              'e%d' % i, 'NOQUANT')
            if a is not None:
                assert r.execute_command('VSETATTR', 'k', 'e%d' % i, a) == 1
        rows = []
        for e in EXPRS + random_exprs(args.random, args.seed):
            try:
                got = r.execute_command('VSIM', 'k', 'VALUES', 2, 1, 0, 'COUNT', 1000, 'TRUTH',
                                        'FILTER', e)
                mask = 0
                for name in got:
                    mask |= 1 << int(name.decode()[1:])
                rows.append('\t{ %s, NULL, 0x%xULL },' % (cstr(e), mask))
            except redis.ResponseError as err:
                msg = str(err)
                rows.append('\t{ %s, %s, 0 },' % (cstr(e), cstr(msg)))
    finally:
        srv.terminate()
        srv.wait()
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        os.rmdir(tmp)

    out = []
    w = out.append
    w('/* SPDX-License-Identifier: BSD-3-Clause */\n')
    w('/* Generated by tools/record-vset-filter.py from redis-server %s: do not edit. */\n'
      % version)
    w('static const char *const vf_attrs[] = {\n')
    for a in ATTRS:
        w('\t%s,\n' % ('NULL' if a is None else cstr(a)))
    w('};\n\n')
    w('/* expression, error text (without "ERR ") or NULL, mask of matching attributes */\n')
    w('static const struct vf_case {\n\tconst char *expr;\n\tconst char *err;\n'
      '\tunsigned long long mask;\n} vf_cases[] = {\n')
    w('\n'.join(rows) + '\n};\n')
    # In the house format, so that make format-check passes as generated.
    sys.stdout.write(subprocess.run(['clang-format', '--assume-filename=cases.h'],
                                    input=''.join(out), capture_output=True, text=True,
                                    check=True).stdout)


if __name__ == '__main__':
    main()
