#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0-only
//
// Runs a list of GET/MGET calls on one xkv Node client and prints, as one
// JSON line, each call's result and then the client's stats:
//   node ops.js '{"port": 6379, "udpPort": 7000}' '[["get", "k"], ["mget", "a", "b"]]'
// Values are printed as strings (Buffers from getBuffer/mgetBuffer as hex).
// For tests that put a fake UDP responder in front of a real TCP server.
'use strict';

const path = require('node:path');

const Redis = require(path.join(__dirname, '..', '..', 'clients', 'node'));

function show(v) {
  if (Buffer.isBuffer(v)) return { hex: v.toString('hex') };
  if (Array.isArray(v)) return v.map(show);
  return v;
}

async function main() {
  const options = JSON.parse(process.argv[2]);
  const calls = JSON.parse(process.argv[3]);
  const client = new Redis({ maxRetriesPerRequest: 1, ...options });
  await client.ping();
  const results = [];
  for (const [method, ...args] of calls) {
    try {
      results.push({ value: show(await client[method](...args)) });
    } catch (e) {
      results.push({ error: e.message });
    }
  }
  await client.quit();
  console.log(JSON.stringify({ results, stats: client.stats }));
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 2;
});
