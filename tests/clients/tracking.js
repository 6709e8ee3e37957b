#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0-only
//
// node-redis's client-side cache against a server: a RESP3 client with
// `clientSideCache` connects (it sends CLIENT TRACKING ON), answers a
// repeated GET from its cache, and drops the entry when another client's SET
// changes the key (the server's `invalidate` push), so the next GET reads
// the new value from the server. Prints one JSON line with what it saw;
// exits 1 on a failed check. Every wait is bounded.
//
// Usage: node tracking.js --port N [--host H]
'use strict';

const path = require('node:path');

const clientDir = path.join(__dirname, '..', '..', 'clients', 'node');
const { createClient } = require(require.resolve('redis', { paths: [clientDir] }));

function parseArgs(argv) {
  const out = { host: '127.0.0.1' };
  for (let i = 0; i < argv.length; i += 2) out[argv[i].replace(/^--/, '')] = argv[i + 1];
  out.port = Number(out.port);
  return out;
}

function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
}

// Resolves once pred() holds, polling every 10 ms for at most ms.
async function waitFor(pred, ms, what) {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error('timed out waiting for ' + what);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const url = `redis://${args.host}:${args.port}`;
  const noRetry = { connectTimeout: 5000, reconnectStrategy: false };
  const cached = createClient({ url, RESP: 3, socket: noRetry, clientSideCache: { ttl: 0, maxEntries: 0 } });
  const plain = createClient({ url, socket: noRetry });
  const invalidated = [];
  const out = {};

  cached.on('error', (e) => { out.error = String(e); });
  plain.on('error', (e) => { out.error = String(e); });
  await cached.connect();
  await plain.connect();
  try {
    const csc = cached.clientSideCache;
    check(csc, 'the client has a cache');
    csc.on('invalidate', (key) => invalidated.push(key === null ? null : String(key)));

    const info = String(await plain.sendCommand(['CLIENT', 'LIST']));
    out.tracking_clients = info.split('\n').filter((l) => / flags=\S*t/.test(l)).length;
    check(out.tracking_clients === 1, 'one client tracks: ' + info);

    await plain.set('csc:key', 'v1');
    out.first = await cached.get('csc:key');
    out.second = await cached.get('csc:key');
    const s1 = csc.stats();
    out.hits = s1.hitCount;
    out.misses = s1.missCount;
    check(out.first === 'v1' && out.second === 'v1', 'both GETs read v1');
    check(s1.hitCount === 1 && s1.missCount === 1, 'the second GET came from the cache');

    await plain.set('csc:key', 'v2');
    await waitFor(() => invalidated.includes('csc:key'), 5000, 'the invalidation of csc:key');
    out.invalidated = invalidated.slice();
    out.third = await cached.get('csc:key');
    check(out.third === 'v2', 'the GET after the invalidation reads v2, not ' + out.third);
    const s2 = csc.stats();
    check(s2.missCount === 2, 'the GET after the invalidation missed the cache');

    // FLUSHALL invalidates everything (a null key).
    await plain.flushAll();
    await waitFor(() => invalidated.includes(null), 5000, 'the flush invalidation');
    out.after_flush = await cached.get('csc:key');
    check(out.after_flush === null, 'the key is gone after FLUSHALL');
    check(!out.error, 'no client error: ' + out.error);
    out.ok = true;
  } finally {
    await cached.quit().catch(() => cached.disconnect());
    await plain.quit().catch(() => plain.disconnect());
  }
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
