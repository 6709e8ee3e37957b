#!/usr/bin/env node
// SPDX-License-Identifier: BSD-3-Clause
//
// One measurement for tools/bench/clients.sh: GETs per second of one Node
// process on keys key:0 .. key:N-1 in turn, through xkv-client (--via udp) or
// ioredis (--via tcp), with --concurrency GETs in flight (1: each awaited
// before the next). Warms up first (the kernel cache admits a key on its
// second read), then prints one JSON line.
'use strict';

const path = require('node:path');

const clientDir = path.join(__dirname, '..', '..', 'clients', 'node');
const XkvRedis = require(clientDir);
const IORedis = require(require.resolve('ioredis', { paths: [clientDir] }));

function parse(argv) {
  const o = { keys: 1000, seconds: 5, warmup: 1, concurrency: 1 };
  for (let i = 0; i < argv.length; i += 2) o[argv[i].replace(/^--/, '')] = argv[i + 1];
  for (const n of ['port', 'keys', 'seconds', 'warmup', 'concurrency']) o[n] = Number(o[n]);
  return o;
}

async function phase(r, keys, secs, concurrency) {
  let done = 0;
  let misses = 0;
  const start = performance.now();
  const deadline = start + secs * 1000;
  async function worker(w) {
    let i = w;
    while (performance.now() < deadline) {
      for (let j = 0; j < 50; j++) {
        if ((await r.get(keys[i % keys.length])) === null) misses++;
        i += concurrency;
      }
      done += 50;
    }
  }
  await Promise.all(Array.from({ length: concurrency }, (_, w) => worker(w)));
  const seconds = (performance.now() - start) / 1000;
  return { gets: done, seconds, per_sec: done / seconds, misses };
}

async function main() {
  const o = parse(process.argv.slice(2));
  const Cls = o.via === 'udp' ? XkvRedis : IORedis;
  const r = new Cls({ host: '127.0.0.1', port: o.port });
  await r.ping();
  const keys = Array.from({ length: o.keys }, (_, i) => 'key:' + i);
  await phase(r, keys, o.warmup, o.concurrency);
  if (r.stats) r.stats = new XkvRedis.FastpathStats();
  const out = await phase(r, keys, o.seconds, o.concurrency);
  if (r.stats) out.stats = r.stats;
  await r.quit();
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
