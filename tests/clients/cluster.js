// SPDX-License-Identifier: GPL-2.0-only
// Cluster clients' basic flows on an xkvd cluster: ioredis Cluster and
// node-redis createCluster each write keys spread over every slot, read them
// back (following MOVED when they do not know the slot map yet), and run a
// hash-tagged multi-key command and a transaction.
// Usage: node cluster.js --ports P1,P2,P3 --keys N
'use strict';

const path = require('path');
const mods = path.join(__dirname, '..', '..', 'clients', 'node', 'node_modules');
const IORedis = require(path.join(mods, 'ioredis'));
const { createCluster } = require(path.join(mods, 'redis'));

function arg(name, def) {
	const i = process.argv.indexOf('--' + name);
	return i >= 0 ? process.argv[i + 1] : def;
}

const ports = arg('ports', '').split(',').map(Number);
const nkeys = Number(arg('keys', '1000'));

function check(cond, what) {
	if (!cond)
		throw new Error('check failed: ' + what);
}

async function ioredisFlow() {
	const c = new IORedis.Cluster(ports.map((port) => ({ host: '127.0.0.1', port })));
	try {
		for (let i = 0; i < nkeys; i++)
			await c.set('io:' + i, String(i));
		for (let i = 0; i < nkeys; i++)
			check((await c.get('io:' + i)) === String(i), 'ioredis get io:' + i);
		await c.mset('{io}a', '1', '{io}b', '2');
		const got = await c.mget('{io}a', '{io}b');
		check(got[0] === '1' && got[1] === '2', 'ioredis mget ' + got);
		const res = await c.multi().incr('{io}n').incr('{io}n').exec();
		check(res[1][1] === 2, 'ioredis multi ' + JSON.stringify(res));
		let crossslot = '';
		try {
			await c.mget('io:1', 'io:2');
		} catch (e) {
			crossslot = e.message;
		}
		check(crossslot.startsWith('CROSSSLOT'), 'ioredis crossslot ' + crossslot);
	} finally {
		c.disconnect();
	}
}

async function nodeRedisFlow() {
	const c = createCluster({
		rootNodes: ports.map((port) => ({ url: 'redis://127.0.0.1:' + port })),
	});
	c.on('error', () => {});
	await c.connect();
	try {
		for (let i = 0; i < nkeys; i++)
			await c.set('nr:' + i, String(i));
		for (let i = 0; i < nkeys; i++)
			check((await c.get('nr:' + i)) === String(i), 'node-redis get nr:' + i);
		await c.mSet([['{nr}a', '1'], ['{nr}b', '2']]);
		const got = await c.mGet(['{nr}a', '{nr}b']);
		check(got[0] === '1' && got[1] === '2', 'node-redis mget ' + got);
		const res = await c.multi().incr('{nr}n').incr('{nr}n').exec();
		check(Number(res[1]) === 2, 'node-redis multi ' + JSON.stringify(res));
	} finally {
		await c.quit();
	}
}

(async () => {
	await ioredisFlow();
	await nodeRedisFlow();
	console.log('ok ' + 2 * nkeys + ' keys');
})().catch((e) => {
	console.error(e && e.stack ? e.stack : e);
	process.exit(1);
});
