// SPDX-License-Identifier: GPL-2.0-only
// ioredis's defineCommand against a server: custom commands built on
// EVALSHA (with ioredis's fallback to EVAL on NOSCRIPT after SCRIPT FLUSH),
// fixed and per-call key counts, in pipelines and MULTI, and a script error
// reaching the caller. Prints one JSON line of results; exits 1 on failure.
'use strict';
const path = require('node:path');
const assert = require('node:assert');

const clientDir = path.join(__dirname, '..', '..', 'clients', 'node');
const Redis = require(require.resolve('ioredis', { paths: [clientDir] }));

const args = process.argv.slice(2);
const port = Number(args[args.indexOf('--port') + 1]);

async function main() {
  const r = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
  const out = {};
  try {
    r.defineCommand('getIncr', {
      numberOfKeys: 1,
      lua: "local v = redis.call('GET', KEYS[1]) redis.call('INCRBY', KEYS[1], ARGV[1]) return v",
    });
    r.defineCommand('swapKeys', {
      lua: "local a = redis.call('GET', KEYS[1]) local b = redis.call('GET', KEYS[2]) " +
        "redis.call('SET', KEYS[1], b) redis.call('SET', KEYS[2], a) return {a, b}",
    });
    r.defineCommand('boom', { numberOfKeys: 0, lua: "return redis.error_reply('MYERR custom failure')" });

    await r.del('dc:n', 'dc:a', 'dc:b');
    assert.strictEqual(await r.getIncr('dc:n', 5), null);
    assert.strictEqual(await r.getIncr('dc:n', 5), '5');
    out.afterTwo = await r.get('dc:n');
    assert.strictEqual(out.afterTwo, '10');
    // The cache gone: ioredis gets NOSCRIPT from EVALSHA and sends EVAL.
    await r.script('FLUSH');
    assert.strictEqual(await r.getIncr('dc:n', 1), '10');
    await r.mset('dc:a', 'A', 'dc:b', 'B');
    assert.deepStrictEqual(await r.swapKeys(2, 'dc:a', 'dc:b'), ['A', 'B']);
    assert.deepStrictEqual(await r.mget('dc:a', 'dc:b'), ['B', 'A']);
    const piped = await r.pipeline().getIncr('dc:n', 1).getIncr('dc:n', 1).get('dc:n').exec();
    out.pipeline = piped.map(([err, v]) => (err ? 'ERR ' + err.message : v));
    assert.deepStrictEqual(out.pipeline, ['11', '12', '13']);
    const tx = await r.multi().getIncr('dc:n', 10).get('dc:n').exec();
    out.multi = tx.map(([err, v]) => (err ? 'ERR ' + err.message : v));
    assert.deepStrictEqual(out.multi, ['13', '23']);
    try {
      await r.boom();
      assert.fail('boom succeeded');
    } catch (e) {
      out.error = e.message;
      assert.match(e.message, /^MYERR custom failure/);
    }
    out.shaLoaded = (await r.script('EXISTS', r.scriptsSet.getIncr.sha))[0];
    assert.strictEqual(out.shaLoaded, 1);
    await r.del('dc:n', 'dc:a', 'dc:b');
    out.ok = true;
  } finally {
    r.disconnect();
  }
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
