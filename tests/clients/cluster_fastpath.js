// SPDX-License-Identifier: GPL-2.0-only
// xkv-client's Cluster (clients/node/lib/cluster.js) on an xkvd cluster: GETs
// and MGETs over UDP to each key's node; a slot moved by hand meanwhile gives
// one 'redirect' fallback (the Cluster follows MOVED over TCP), then UDP to
// the new owner.
// Usage: node cluster_fastpath.js --ports P1,P2,P3 --keys N
'use strict';

const path = require('path');
const client = path.join(__dirname, '..', '..', 'clients', 'node');
const mods = path.join(client, 'node_modules');
const IORedis = require(path.join(mods, 'ioredis'));
const xkv = require(client);

function arg(name, def) {
	const i = process.argv.indexOf('--' + name);
	return i >= 0 ? process.argv[i + 1] : def;
}

const ports = arg('ports', '').split(',').map(Number);
const nkeys = Number(arg('keys', '300'));

function check(cond, what) {
	if (!cond)
		throw new Error('check failed: ' + what);
}

// Moves slot from its owner to another node: IMPORTING, MIGRATING, MIGRATE of
// its keys, then NODE on every node (as redis-cli --cluster reshard does).
async function moveSlot(nodes, slot) {
	const owners = await nodes[0].cluster('SLOTS');
	const range = owners.find((r) => r[0] <= slot && slot <= r[1]);
	const src = nodes.find((n) => n.options.port === range[2][1]);
	const dst = nodes.find((n) => n !== src);
	const srcId = await src.cluster('MYID');
	const dstId = await dst.cluster('MYID');
	await dst.cluster('SETSLOT', slot, 'IMPORTING', srcId);
	await src.cluster('SETSLOT', slot, 'MIGRATING', dstId);
	const keys = await src.cluster('GETKEYSINSLOT', slot, 100);
	if (keys.length)
		await src.migrate('127.0.0.1', dst.options.port, '', 0, 5000, 'KEYS', ...keys);
	for (const n of nodes)
		await n.cluster('SETSLOT', slot, 'NODE', dstId);
}

(async () => {
	const nodes = ports.map((port) => new IORedis({ host: '127.0.0.1', port }));
	const plain = new IORedis.Cluster(ports.map((port) => ({ host: '127.0.0.1', port })));
	const fast = new xkv.Cluster(ports.map((port) => ({ host: '127.0.0.1', port })));
	try {
		for (let i = 0; i < nkeys; i++)
			await plain.set('n:' + i, 'v' + i);
		await fast.get('n:0'); // the first call waits for the slot table
		const before = fast.stats.udp + fast.stats.tcpOnly;
		for (let i = 0; i < nkeys; i++)
			check((await fast.get('n:' + i)) === 'v' + i, 'get n:' + i);
		check((await fast.get('n:missing')) === null, 'get of a missing key');
		await plain.set('{t}a', '1');
		const got = await fast.mget('{t}a', '{t}b');
		check(got[0] === '1' && got[1] === null, 'mget ' + got);
		const buf = await fast.getBuffer('n:1');
		check(Buffer.isBuffer(buf) && buf.toString() === 'v1', 'getBuffer');
		check(fast.stats.udp >= nkeys + 3 && fast.stats.fallbacks === 0,
		      'over UDP ' + JSON.stringify(fast.stats) + ' before ' + before);
		const slot = await nodes[0].cluster('KEYSLOT', 'n:0');
		await moveSlot(nodes, slot);
		check((await fast.get('n:0')) === 'v0', 'get after the move');
		check(fast.stats.reasons.redirect === 1, 'one redirect ' + JSON.stringify(fast.stats));
		const udp = fast.stats.udp;
		check((await fast.get('n:0')) === 'v0', 'get from the new owner');
		check(fast.stats.udp === udp + 1, 'UDP to the new owner ' + JSON.stringify(fast.stats));
		console.log('ok ' + JSON.stringify(fast.stats));
	} finally {
		fast.disconnect();
		plain.disconnect();
		for (const n of nodes)
			n.disconnect();
	}
})().catch((e) => {
	console.error(e && e.stack ? e.stack : e);
	process.exit(1);
});
