// SPDX-License-Identifier: BSD-3-Clause
//
// xkv-client: an ioredis Redis whose GET and MGET go over UDP first.
//
// Everything else is ioredis's own. A GET or MGET is sent as one datagram to
// the server's UDP port, where the kernel answers a cached key and the daemon
// the rest; whatever UDP does not settle (no answer, TRUNCATED, an error reply
// such as NOAUTH or WRONGTYPE, a malformed reply) is asked again over TCP by
// ioredis itself, so every result and every error is the one the TCP client
// gives. UDP is used only where it can give the same answer: a connected
// host:port client (not a unix socket, not TLS, whose secrecy UDP would lose,
// not Sentinel), on database 0 (the only one UDP serves), outside subscriber
// mode.
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
} = require('./lib/udp');

const { Cluster } = require('./lib/cluster');

const GET = Buffer.from('GET');
const MGET = Buffer.from('MGET');

// What the GETs and MGETs of one client did (one count per call). udp:
// answered over UDP (kernel: of those, by the XDP program); fallbacks: tried
// UDP, then asked over TCP, by reason in `reasons`; tcpOnly: went straight to
// TCP (UDP off for this client or its state, or backing off after a failure).
class FastpathStats {
  constructor() {
    this.udp = 0;
    this.kernel = 0;
    this.fallbacks = 0;
    this.tcpOnly = 0;
    this.reasons = {};
  }
}

// The callback style of ioredis: the promise is returned either way.
function asCallback(promise, callback) {
  if (callback) {
    promise.then(
      (v) => process.nextTick(callback, null, v),
      (e) => process.nextTick(callback, e),
    );
  }
  return promise;
}

// Options, besides ioredis's own (all optional):
//   fastpathToken  the server's fastpath-token (a number or BigInt); by
//                  default derived from `password`, or 0 without one
//   udp            false turns UDP off (a plain ioredis client)
//   udpPort        the server's udp-port (default: the TCP port)
//   udpPadding     request datagram size in bytes, header included (1200):
//                  the largest reply accepted over UDP; larger ones come back
//                  TRUNCATED and are asked over TCP
//   udpTimeout     ms to wait for each UDP attempt (200)
//   udpRetries     UDP attempts after the first (2)
//   udpBackoff     ms UDP is left alone after it timed out, was refused or
//                  answered NOAUTH (5000; MGET alone after an error reply, as
//                  from a server without MGET over UDP)
class Redis extends IORedis {
  constructor(...args) {
    super(...args);
    const o = this.options;
    this.stats = new FastpathStats();
    this.udpBackoff = o.udpBackoff ?? 5000;
    this._udpOffUntil = 0;
    this._mgetOffUntil = 0;
    this._endpoint = null;
    if (o.udp === false || o.path || o.tls || o.sentinels) return;
    let token = NO_TOKEN;
    if (o.fastpathToken !== undefined && o.fastpathToken !== null) {
      token = tokenFromNumber(o.fastpathToken);
    } else if (o.password !== undefined && o.password !== null) {
      token = tokenFromPassword(o.password);
    }
    this._endpoint = new Endpoint(o.host || 'localhost', o.udpPort ?? o.port ?? 6379, {
      token,
      padding: o.udpPadding ?? DEFAULT_PADDING,
      timeout: o.udpTimeout ?? 200,
      retries: o.udpRetries ?? 2,
    });
    this.on('end', () => this._endpoint.close());
  }

  // The key's bytes as ioredis would send them, its keyPrefix included.
  _keyBytes(key) {
    const prefix = this.options.keyPrefix;
    if (prefix) {
      if (Buffer.isBuffer(key)) {
        key = Buffer.concat([Buffer.isBuffer(prefix) ? prefix : Buffer.from(prefix), key]);
      } else if (Buffer.isBuffer(prefix)) {
        key = Buffer.concat([prefix, Buffer.from(String(key))]);
      } else {
        key = prefix + key;
      }
    }
    if (Buffer.isBuffer(key)) return key;
    return Buffer.from(key === null || key === undefined ? '' : String(key));
  }

  _udpReady(mget) {
    const now = Date.now();
    const db = this.condition?.select ?? this.options.db ?? 0;
    if (
      !this._endpoint ||
      this.status !== 'ready' ||
      this.condition?.subscriber ||
      Number(db) !== 0 ||
      now < this._udpOffUntil ||
      (mget && now < this._mgetOffUntil)
    ) {
      this.stats.tcpOnly++;
      return false;
    }
    return true;
  }

  _failed(reason, mget) {
    this.stats.fallbacks++;
    this.stats.reasons[reason] = (this.stats.reasons[reason] || 0) + 1;
    if (['timeout', 'refused', 'noauth', 'unreachable'].includes(reason)) {
      this._udpOffUntil = Date.now() + this.udpBackoff;
    } else if (mget && reason === 'error') {
      this._mgetOffUntil = Date.now() + this.udpBackoff;
    }
  }

  _hit(flags) {
    this.stats.udp++;
    if (flags & F_KERNEL) this.stats.kernel++;
  }

  // GET over UDP, else super[fn] (get or getBuffer) with the caller's args.
  _get(fn, asString, args) {
    const callback = typeof args[args.length - 1] === 'function' ? args.pop() : undefined;
    const keys = args.flat();
    const tcp = () => (callback ? super[fn](...args, callback) : super[fn](...args));
    if (keys.length !== 1 || !this._udpReady(false)) return tcp();
    const key = this._keyBytes(keys[0]);
    const cmd = encodeCommand([GET, key]);
    const promise = this._endpoint.request(cmd).then(
      ({ flags, resp }) => {
        const value = parseBulk(resp);
        this._hit(flags);
        return asString && value ? value.toString() : value;
      }
    ).catch((err) => {
      if (!(err instanceof UdpFallback)) throw err;
      this._failed(err.reason, false);
      return super[fn](...args);
    });
    return asCallback(promise, callback);
  }

  _mget(fn, asString, args) {
    const callback = typeof args[args.length - 1] === 'function' ? args.pop() : undefined;
    const keys = args.flat();
    const tcp = () => (callback ? super[fn](...args, callback) : super[fn](...args));
    if (keys.length === 0 || !this._udpReady(true)) return tcp();
    const cmd = encodeCommand([MGET, ...keys.map((k) => this._keyBytes(k))]);
    const promise = this._endpoint.request(cmd).then(
      ({ flags, resp }) => {
        const values = parseBulkArray(resp, keys.length);
        this._hit(flags);
        return asString ? values.map((v) => (v ? v.toString() : v)) : values;
      }
    ).catch((err) => {
      if (!(err instanceof UdpFallback)) throw err;
      this._failed(err.reason, true);
      return super[fn](...args);
    });
    return asCallback(promise, callback);
  }

  get(...args) {
    return this._get('get', true, args);
  }

  getBuffer(...args) {
    return this._get('getBuffer', false, args);
  }

  mget(...args) {
    return this._mget('mget', true, args);
  }

  mgetBuffer(...args) {
    return this._mget('mgetBuffer', false, args);
  }
}

// As ioredis: the class is the module, and also its Redis and default
// (ioredis's own statics, such as Redis.Redis, are getters: defined anew).
module.exports = Redis;
for (const [name, value] of Object.entries({
  Redis,
  Cluster,
  default: Redis,
  FastpathStats,
  tokenFromPassword,
  tokenFromNumber,
})) {
  Object.defineProperty(Redis, name, { value, enumerable: true });
}
