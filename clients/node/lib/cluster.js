// SPDX-License-Identifier: BSD-3-Clause
//
// xkv-client's Cluster: an ioredis Cluster whose GET and MGET go over UDP to
// the node that serves each key's slot.
//
// Everything else is ioredis's own. The node is the one ioredis's slot table
// names (the primary); its UDP port is its TCP port. Whatever UDP does not
// settle is asked again over TCP by the Cluster itself, so every result and
// every error is the one the TCP client gives: in particular a MOVED or ASK
// over UDP (the slot moved since the table was read) makes the Cluster follow
// the redirect and refresh its table, and the next request goes over UDP to
// the new owner. An MGET goes over UDP only when its keys share a slot, as
// the Cluster requires over TCP.
'use strict';

const IORedis = require('ioredis');
const {
  DEFAULT_PADDING,
  Endpoint,
  F_KERNEL,
  NO_TOKEN,
  UdpFallback,
  encodeCommand,
  parseBulk,
  parseBulkArray,
  tokenFromNumber,
  tokenFromPassword,
} = require('./udp');

const GET = Buffer.from('GET');
const MGET = Buffer.from('MGET');

// Redis Cluster's hash slot: CRC16 (XMODEM) of the key, or of its first
// non-empty {tag}, mod 16384.
const CRC16 = new Uint16Array(256);
for (let i = 0; i < 256; i++) {
  let c = i << 8;
  for (let b = 0; b < 8; b++) c = c & 0x8000 ? (c << 1) ^ 0x1021 : c << 1;
  CRC16[i] = c & 0xffff;
}

function keySlot(key) {
  let from = 0;
  let to = key.length;
  const open = key.indexOf(0x7b /* { */);
  if (open >= 0) {
    const close = key.indexOf(0x7d /* } */, open + 1);
    if (close > open + 1) {
      from = open + 1;
      to = close;
    }
  }
  let crc = 0;
  for (let i = from; i < to; i++) crc = ((crc << 8) & 0xffff) ^ CRC16[((crc >> 8) ^ key[i]) & 0xff];
  return crc % 16384;
}

function asCallback(promise, callback) {
  if (callback) {
    promise.then(
      (v) => process.nextTick(callback, null, v),
      (e) => process.nextTick(callback, e),
    );
  }
  return promise;
}

// Options, besides ioredis Cluster's own: fastpathToken, udp, udpPadding,
// udpTimeout, udpRetries, udpBackoff, as for Redis (index.js); the token is
// derived from redisOptions.password when not given; the backoff is per node.
class Cluster extends IORedis.Cluster {
  constructor(startupNodes, options = {}) {
    super(startupNodes, options);
    this.stats = { udp: 0, kernel: 0, fallbacks: 0, tcpOnly: 0, reasons: {} };
    this.udpBackoff = options.udpBackoff ?? 5000;
    this._udp = options.udp !== false && !options.redisOptions?.tls;
    const password = options.redisOptions?.password;
    if (options.fastpathToken !== undefined && options.fastpathToken !== null) {
      this._token = tokenFromNumber(options.fastpathToken);
    } else if (password !== undefined && password !== null) {
      this._token = tokenFromPassword(password);
    } else {
      this._token = NO_TOKEN;
    }
    this._endpointOptions = {
      token: this._token,
      padding: options.udpPadding ?? DEFAULT_PADDING,
      timeout: options.udpTimeout ?? 200,
      retries: options.udpRetries ?? 2,
    };
    this._endpoints = new Map(); // "host:port" -> Endpoint
    this._offUntil = new Map(); // "host:port" -> ms UDP is left alone until
    this.on('end', () => {
      for (const ep of this._endpoints.values()) ep.close();
      this._endpoints.clear();
    });
  }

  _keyBytes(key) {
    const prefix = this.options.keyPrefix;
    if (prefix) key = Buffer.concat([Buffer.from(prefix), Buffer.from(key)]);
    if (Buffer.isBuffer(key)) return key;
    return Buffer.from(key === null || key === undefined ? '' : String(key));
  }

  // The slot's node's Endpoint, or null (no UDP for it now).
  _endpointOf(slot) {
    const nodes = this.slots[slot];
    if (!this._udp || this.status !== 'ready' || !nodes || !nodes.length) return null;
    const where = nodes[0];
    if (Date.now() < (this._offUntil.get(where) || 0)) return null;
    let ep = this._endpoints.get(where);
    if (!ep) {
      const at = where.lastIndexOf(':');
      ep = new Endpoint(where.slice(0, at), where.slice(at + 1), this._endpointOptions);
      this._endpoints.set(where, ep);
    }
    return ep;
  }

  _failed(ep, reason) {
    this.stats.fallbacks++;
    this.stats.reasons[reason] = (this.stats.reasons[reason] || 0) + 1;
    if (['timeout', 'refused', 'noauth', 'unreachable'].includes(reason)) {
      this._offUntil.set(ep.host + ':' + ep.port, Date.now() + this.udpBackoff);
    }
  }

  _hit(flags) {
    this.stats.udp++;
    if (flags & F_KERNEL) this.stats.kernel++;
  }

  // One UDP command for keys (one slot; exactly one key for GET), else
  // super[fn](...args).
  _over(fn, args, build, parse, single) {
    const callback = typeof args[args.length - 1] === 'function' ? args.pop() : undefined;
    const tcp = () => (callback ? super[fn](...args, callback) : super[fn](...args));
    const keys = args.flat().map((k) => this._keyBytes(k));
    if (!keys.length || (single && keys.length !== 1)) return tcp();
    const slot = keySlot(keys[0]);
    if (keys.some((k) => keySlot(k) !== slot)) return tcp();
    const ep = this._endpointOf(slot);
    if (!ep) {
      this.stats.tcpOnly++;
      return tcp();
    }
    const promise = ep.request(build(keys)).then(({ flags, resp }) => {
      const value = parse(resp, keys.length);
      this._hit(flags);
      return value;
    }).catch((err) => {
      if (!(err instanceof UdpFallback)) throw err;
      this._failed(ep, err.reason);
      return super[fn](...args);
    });
    return asCallback(promise, callback);
  }

  get(...args) {
    return this._over('get', args, (k) => encodeCommand([GET, k[0]]),
      (resp) => { const v = parseBulk(resp); return v ? v.toString() : v; }, true);
  }

  getBuffer(...args) {
    return this._over('getBuffer', args, (k) => encodeCommand([GET, k[0]]), parseBulk, true);
  }

  mget(...args) {
    return this._over('mget', args, (k) => encodeCommand([MGET, ...k]),
      (resp, n) => parseBulkArray(resp, n).map((v) => (v ? v.toString() : v)));
  }

  mgetBuffer(...args) {
    return this._over('mgetBuffer', args, (k) => encodeCommand([MGET, ...k]), parseBulkArray);
  }
}

module.exports = { Cluster, keySlot };
