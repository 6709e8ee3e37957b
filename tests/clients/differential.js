#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0-only
//
// The xkv Node client (clients/node) against ioredis's own TCP client, on one
// server: every GET and MGET (string and Buffer forms, promise and callback
// styles) must give the same result, value or error. Prints one JSON line,
// {"checks": N, "stats": {...}}; exits 1 after listing the differences.
//
// Usage: node differential.js --port N [--host H] [--password P]
//        [--fastpath-token N] [--udp-port N] [--udp-timeout MS]
//        [--udp-backoff MS] [--rounds N]
'use strict';

const path = require('node:path');

const clientDir = path.join(__dirname, '..', '..', 'clients', 'node');
const XkvRedis = require(clientDir);
const IORedis = require(require.resolve('ioredis', { paths: [clientDir] }));

function parseArgs(argv) {
  const out = { host: '127.0.0.1', rounds: 3, udpTimeout: 200, udpBackoff: 0 };
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    out[name] = argv[i + 1];
  }
  for (const n of ['port', 'udpPort', 'udpTimeout', 'udpBackoff', 'rounds']) {
    if (out[n] !== undefined) out[n] = Number(out[n]);
  }
  return out;
}

const FITS = 1200 - 24 - '$1167\r\n\r\n'.length; // the largest value a 1200-byte request holds

function values() {
  return [
    [Buffer.from('small'), Buffer.from('hello')],
    [Buffer.from('bin'), Buffer.from([...Array(256).keys()])],
    [Buffer.from('empty'), Buffer.alloc(0)],
    [Buffer.from('utf8'), Buffer.from('h\u00e9llo w\u00f6rld \u2713')],
    [Buffer.from('num'), Buffer.from('12345')],
    [Buffer.from('edge'), Buffer.alloc(FITS, 'e')],
    [Buffer.from('edge+1'), Buffer.alloc(FITS + 1, 'f')],
    [Buffer.from('big'), Buffer.from(Array.from({ length: 5000 }, (_, i) => i % 251))],
    [Buffer.from('huge'), Buffer.alloc(100000, 'z')],
    [Buffer.from('k\x00\r\n\xff', 'latin1'), Buffer.from('binary key')],
    [Buffer.from('long'.repeat(50)), Buffer.from('a 200-byte key')],
  ];
}

// A result as comparable JSON: Buffers as hex, errors by class and message.
function norm(v) {
  if (Buffer.isBuffer(v)) return { buffer: v.toString('hex') };
  if (Array.isArray(v)) return v.map(norm);
  return v === undefined ? { undefined: true } : v;
}

async function outcome(fn) {
  try {
    return JSON.stringify(['value', norm(await fn())]);
  } catch (e) {
    return JSON.stringify(['error', e.constructor.name, e.message]);
  }
}

function viaCallback(client, method, ...args) {
  return new Promise((resolve, reject) => {
    client[method](...args, (err, v) => (err ? reject(err) : resolve(v)));
  });
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const tcpOpts = { host: a.host, port: a.port, password: a.password, maxRetriesPerRequest: 1 };
  const udpOpts = {
    ...tcpOpts,
    fastpathToken: a.fastpathToken,
    udpPort: a.udpPort,
    udpTimeout: a.udpTimeout,
    udpBackoff: a.udpBackoff,
  };
  const plain = new IORedis(tcpOpts);
  const fast = new XkvRedis(udpOpts);
  await fast.ping(); // ready: UDP is used from the next command on
  let checks = 0;
  const diffs = [];
  async function same(what, ref, sut) {
    checks++;
    const [x, y] = [await outcome(ref), await outcome(sut)];
    if (x !== y) diffs.push(what + ':\n  tcp: ' + x.slice(0, 400) + '\n  xkv: ' + y.slice(0, 400));
  }

  await plain.flushall();
  const data = values();
  for (const [k, v] of data) await plain.set(k, v);
  await plain.rpush('list', 'x');
  const keys = data.map(([k]) => k).concat([Buffer.from('list'), 'nokey', 'str key', 12345]);
  const show = (k) => (Buffer.isBuffer(k) ? JSON.stringify(k.toString('latin1')) : String(k));

  for (let round = 0; round < a.rounds; round++) {
    for (const k of keys) {
      for (const m of ['get', 'getBuffer']) {
        await same(`${m} ${show(k)} (round ${round})`, () => plain[m](k), () => fast[m](k));
      }
    }
  }
  const sets = [
    ['small', 'nokey', 'bin'],
    ['small'],
    keys,
    ['nokey', 'nokey'],
    ['small', 'edge'],
    ['huge', 'small'],
  ];
  for (const ks of sets) {
    for (const m of ['mget', 'mgetBuffer']) {
      await same(`${m} [${ks.map(show)}]`, () => plain[m](ks), () => fast[m](ks));
      await same(`${m} ...[${ks.map(show)}]`, () => plain[m](...ks), () => fast[m](...ks));
    }
  }
  await same('mget []', () => plain.mget([]), () => fast.mget([]));
  await same('get (no key)', () => plain.get(), () => fast.get());
  await same('get callback', () => viaCallback(plain, 'get', 'small'), () => viaCallback(fast, 'get', 'small'));
  await same('get callback, miss', () => viaCallback(plain, 'get', 'nokey'), () => viaCallback(fast, 'get', 'nokey'));
  await same('get callback, WRONGTYPE', () => viaCallback(plain, 'get', 'list'), () => viaCallback(fast, 'get', 'list'));
  await same('mget callback', () => viaCallback(plain, 'mget', ['small', 'nokey']), () => viaCallback(fast, 'mget', ['small', 'nokey']));
  await same('many at once', () => Promise.all(keys.map((k) => plain.get(k))), () => Promise.all(keys.map((k) => fast.get(k))));
  // Writes are seen at once, cached or not.
  for (const [k, v] of [['small', 'changed'], ['edge', 'short now'], ['bin', '']]) {
    await plain.set(k, v);
    await same(`get ${k} after SET`, () => plain.get(k), () => fast.get(k));
    await same(`mget ${k} after SET`, () => plain.mget(k, 'nokey'), () => fast.mget(k, 'nokey'));
  }
  await plain.del('small');
  await same('get after DEL', () => plain.get('small'), () => fast.get('small'));
  // UDP serves database 0 only: after SELECT 1 the client uses TCP, after SELECT 0 UDP again.
  await plain.set('dbkey', 'in 0');
  await same('select 1', () => plain.select(1), () => fast.select(1));
  await plain.set('dbkey', 'in 1');
  await same('get on db 1', () => plain.get('dbkey'), () => fast.get('dbkey'));
  await same('mget on db 1', () => plain.mget('dbkey', 'nokey'), () => fast.mget('dbkey', 'nokey'));
  await same('select 0', () => plain.select(0), () => fast.select(0));
  await same('get on db 0', () => plain.get('dbkey'), () => fast.get('dbkey'));
  // A key prefix applies to UDP GETs as to TCP ones.
  const prefixed = new XkvRedis({ ...udpOpts, keyPrefix: 'bi' });
  const plainPrefixed = new IORedis({ ...tcpOpts, keyPrefix: 'bi' });
  await prefixed.ping();
  await same('keyPrefix get', () => plainPrefixed.getBuffer('g'), () => prefixed.getBuffer('g'));
  await same('keyPrefix mget', () => plainPrefixed.mget('g', 'n'), () => prefixed.mget('g', 'n'));

  const stats = { ...fast.stats, reasons: { ...fast.stats.reasons } };
  for (const [n, v] of Object.entries(prefixed.stats)) {
    if (n === 'reasons') {
      for (const [r, c] of Object.entries(v)) stats.reasons[r] = (stats.reasons[r] || 0) + c;
    } else {
      stats[n] += v;
    }
  }
  await Promise.all([plain.quit(), fast.quit(), prefixed.quit(), plainPrefixed.quit()]);
  console.log(JSON.stringify({ checks, stats }));
  for (const d of diffs) console.error(d);
  process.exitCode = diffs.length ? 1 : 0;
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 2;
});
