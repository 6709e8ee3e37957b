# SPDX-License-Identifier: GPL-2.0-only
"""cjson in scripts (daemon/script_cjson.c): encodings, decodings, settings and
error texts as the lua-cjson 2.1.0 that Redis 8.8 bundles gives them (Debian's
7.0.15 reference links Debian's lua-cjson, which lacks
decode_array_with_array_mt, so the replies are Redis 8.8's, recorded in
data/cjson-redis-8.8.resp)."""

import os

from harness import REPO, Redis8, test

CASES = [
 "return cjson.encode({1,2,3})", "return cjson.encode({})", "return cjson.encode({a=1})",
 "return cjson.encode('a\\0b\\1\\127/\"\\\\\\n\\t\\r\\b\\f\\31 \\200')",
 "return cjson.encode(1/3)", "return cjson.encode(-0)", "return cjson.encode(1e15)", "return cjson.encode(123456789012345678)",
 "return cjson.encode(0.1)", "return cjson.encode(-1e-7)", "return cjson.encode(2^53)", "return cjson.encode(1/0)", "return cjson.encode(0/0)",
 "cjson.encode_invalid_numbers(true) return cjson.encode({1/0, -1/0, 0/0})",
 "cjson.encode_invalid_numbers('null') return cjson.encode({1/0, -1/0, 0/0})",
 "return tostring(cjson.encode_invalid_numbers('null'))", "return tostring(cjson.encode_invalid_numbers())", "return cjson.encode_invalid_numbers('x')",
 "return cjson.encode({[1]=1,[3]=3})", "return cjson.encode({[1]=1,[30]=3})", "return cjson.encode({[1]=1,[11]=3,[12]=4})",
 "return cjson.encode({[0]=1})", "return cjson.encode({[1.5]=1})", "return cjson.encode({[-1]=1})", "return cjson.encode({[2^31]=1})",
 "return table.concat({tostring(cjson.encode_sparse_array())}, ',')",
 "local a, b, c = cjson.encode_sparse_array(true, 1, 1) return tostring(a) .. b .. c",
 "cjson.encode_sparse_array(true) return cjson.encode({[1]=1,[30]=3})",
 "return cjson.encode({[true]=1})", "return cjson.encode(function() end)", "return cjson.encode(cjson.null)",
 "return cjson.encode()", "return cjson.encode(1,2)", "return cjson.decode()",
 "local t = {} t[1] = t return cjson.encode(t)",
 "return cjson.encode_max_depth(0)", "cjson.encode_max_depth(2) return cjson.encode({{{1}}})", "return cjson.encode_max_depth('a')",
 "return cjson.encode_number_precision(15)", "cjson.encode_number_precision(3) return cjson.encode(3.14159)",
 "return cjson.encode_keep_buffer(1, 2)", "return tostring(cjson.encode_keep_buffer('off')) .. cjson.encode({1})",
 "return cjson.decode('')", "return cjson.decode(' ')", "return cjson.decode('[1,2')", "return cjson.decode('{\"a\" 1}')",
 "return cjson.decode('{1:1}')", "return cjson.decode('[1,]')", "return cjson.decode('\"abc')", "return cjson.decode('\"a\\\\x\"')",
 "return cjson.decode('\"\\\\u00e9\\\\ud83d\\\\ude00\\\\u0000\\\\/\"')", "return cjson.decode('\"\\\\udc00\"')", "return cjson.decode('\"\\\\ud800x\"')", "return cjson.decode('\"\\\\u12\"')",
 "return cjson.decode('0x10')", "return cjson.decode('+5')", "return cjson.decode('007')", "return tostring(cjson.decode('nan'))", "return tostring(cjson.decode('-Infinity'))",
 "return cjson.decode('tru')", "return cjson.decode('nul')", "return cjson.decode('x')", "return cjson.decode('1 2')", "return cjson.decode('-')",
 "cjson.decode_invalid_numbers(false) return cjson.decode('0x10')", "cjson.decode_invalid_numbers(false) return cjson.decode('nan')",
 "return cjson.decode('a\\0')", "return cjson.decode('[1]\\0junk')[1]",
 "return cjson.decode(string.rep('[', 1001) .. string.rep(']', 1001))", "return #cjson.encode(cjson.decode(string.rep('[', 1000) .. string.rep(']', 1000)))",
 "cjson.decode_max_depth(2) return cjson.decode('[[[1]]]')",
 "return tostring(cjson.decode('{\"a\":null}').a == cjson.null)",
 "return type(cjson.null) .. cjson._NAME .. cjson._VERSION", "local c = cjson.new() c.encode_number_precision(2) return c.encode(1/3) .. cjson.encode(1/3)",
 "return tostring(cjson.decode('[1, 2, {\"a\": [true, false]}]')[3].a[1])",
 "return cjson.encode(cjson.decode('{\"a\":[1,{\"b\":null}], \"c\":\"x\\\\/y\"}'))",
 "return cjson.decode(123)", "return cjson.decode({})",
 "return cjson.encode(cjson.decode('[]')) .. cjson.encode(cjson.decode('{\"item\":[]}'))",
 "cjson.decode_array_with_array_mt(true) return cjson.encode(cjson.decode('[]')) .. cjson.encode(cjson.decode('{\"item\":[]}'))",
 "cjson.decode_array_with_array_mt(true) local t = cjson.decode('[1,2,3]') t[3] = nil return cjson.encode(t)",
 "return tostring(cjson.decode_array_with_array_mt('on'))",
 "cjson.decode_array_with_array_mt(true) local t = cjson.decode('[]') getmetatable(t).x = 1",
 "cjson.decode_array_with_array_mt(true) local t = cjson.decode('[]') return rawset(getmetatable(t), 'a', 1)",
 "return cjson.encode({1, nil, 3})", "return cjson.encode({n=1, 1})", "return cjson.encode(setmetatable({}, {__is_cjson_array=true}))",
 "return cjson.encode(setmetatable({1, 2, nil, 4}, {__is_cjson_array=true}))",
 "return #cjson.encode(string.rep('x', 100000))",
]


def _lua_quote(s):
    return '"' + ''.join('\\%03d' % ord(c) if (c in '"\\' or ord(c) < 32 or ord(c) > 126) else c
                         for c in s) + '"'


# Each case runs under pcall in its own chunk; the settings go back to their
# defaults after each.
VECTORS = "\n".join([
    "local out = {}",
    "local cases = {" + ", ".join(_lua_quote(c) for c in CASES) + "}",
    "for i, src in ipairs(cases) do",
    "  local ok, r = pcall(loadstring(src))",
    "  out[i] = tostring(ok) .. ' ' .. tostring(r)",
    "  cjson.encode_max_depth(1000) cjson.decode_max_depth(1000) cjson.encode_invalid_numbers(false)",
    "  cjson.decode_invalid_numbers(true) cjson.encode_sparse_array(false, 2, 10)",
    "  cjson.encode_number_precision(14) cjson.encode_keep_buffer(true)",
    "  cjson.decode_array_with_array_mt(false)",
    "end",
    "return out"])


@test
def cjson_vectors_as_redis_8_8(t):
    with open(os.path.join(REPO, 'tests', 'integration', 'data', 'cjson-redis-8.8.resp'), 'rb') as fh:
        want = fh.read()
    t.compare([Redis8(want, 'EVAL', VECTORS, '0')])


@test
def cjson_settings_and_cycles(t):
    """Settings last until SCRIPT FLUSH; a cyclic or deep table fails cleanly;
    decoded arrays keep their marker through a round trip."""
    t.compare([
        ('EVAL', "cjson.encode_max_depth(3) return cjson.encode_max_depth()", '0'),
        ('EVAL', "return cjson.encode_max_depth()", '0'),
        ('SCRIPT', 'FLUSH'),
        ('EVAL', "return cjson.encode_max_depth()", '0'),
        ('EVAL', "local t = {} t.a = t return cjson.encode(t)", '0'),
        ('EVAL', "local t = {} t[1] = {t} return cjson.encode(t)", '0'),
        ('EVAL', "return cjson.decode(string.rep('{\"a\":', 999) .. '1' .. string.rep('}', 999)).a.a.a", '0'),
        ('EVAL', "return #cjson.encode(cjson.decode(string.rep('[1,', 5000) .. '1' .. string.rep(']', 5000)))", '0'),
        ('EVAL', "cjson.encode = nil", '0'),
        ('EVAL', "return cjson.decode(cjson.encode({a={1,2,{b='c'}}})).a[3].b", '0'),
        ('EVAL', "return cjson.decode(ARGV[1]).x", '0', '{"x": "\\u00fc"}'),
    ])
