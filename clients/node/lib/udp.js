// SPDX-License-Identifier: BSD-3-Clause
//
// The UDP side of the xkv client: one request datagram, one reply
// (docs/udp-protocol.md of the xkv checkout).
//
// A request is the 24-byte header, one RESP command and zero padding up to
// the largest reply the client accepts, because a reply is never larger than
// its request. Whatever UDP cannot settle rejects with a UdpFallback that
// names the reason, and the caller asks over TCP instead.
//
// One Endpoint is one connected UDP socket with every request of its client
// in flight on it at once, told apart by request id: a reply is taken if it
// answers any attempt of its request (a late answer to the first attempt is as
// good as one to the retry), and anything else is dropped.
'use strict';

const crypto = require('node:crypto');
const dgram = require('node:dgram');
const dns = require('node:dns');
const net = require('node:net');

const MAGIC = 0x584b;
const VERSION = 1;
const F_REPLY = 0x01;
const F_TRUNCATED = 0x02;
const F_KERNEL = 0x04;
const HDR_LEN = 24;
const MAX_DATAGRAM = 65507; // the largest UDP payload over IPv4
const DEFAULT_PADDING = 1200; // as libxkv: one frame at IPv6's minimum MTU
const NO_TOKEN = Buffer.alloc(8);

function closeQuietly(s) {
  try {
    s.close();
  } catch {
    // already closed
  }
}

// The token a server derives from its requirepass when no fastpath-token is
// set: the first 8 bytes of SHA-256("xkv-fastpath-token:" + password), sent as
// those raw bytes.
function tokenFromPassword(password) {
  return crypto
    .createHash('sha256')
    .update('xkv-fastpath-token:')
    .update(Buffer.isBuffer(password) ? password : String(password))
    .digest()
    .subarray(0, 8);
}

// An operator's fastpath-token (a number or a BigInt, 1 .. 2^63-1) as the
// server compares it: its own uint64 in host order, little-endian on x86-64
// and arm64 servers.
function tokenFromNumber(token) {
  const n = BigInt(token);
  if (n < 0n || n >= 1n << 64n) {
    throw new RangeError('fastpathToken must be between 0 and 2^64-1');
  }
  const buf = Buffer.alloc(8);
  buf.writeBigUInt64LE(n);
  return buf;
}

// reason: 'timeout', 'refused', 'truncated', 'noauth', 'redirect', 'error',
// 'protocol', 'too_large' or 'unreachable'.
class UdpFallback extends Error {
  constructor(reason) {
    super('xkv: UDP fallback (' + reason + ')');
    this.reason = reason;
  }
}

function encodeCommand(args) {
  const parts = [Buffer.from('*' + args.length + '\r\n')];
  for (const a of args) {
    parts.push(Buffer.from('$' + a.length + '\r\n'), a, Buffer.from('\r\n'));
  }
  return Buffer.concat(parts);
}

// The bulk string at buf[i..]: [Buffer or null, index after it].
function bulkAt(buf, i) {
  if (buf[i] !== 0x24 /* $ */) throw new UdpFallback('protocol');
  const nl = buf.indexOf('\r\n', i);
  if (nl < 0) throw new UdpFallback('protocol');
  const text = buf.toString('latin1', i + 1, nl);
  if (text === '-1') return [null, nl + 2];
  if (!/^[0-9]+$/.test(text)) throw new UdpFallback('protocol');
  const start = nl + 2;
  const end = start + Number(text);
  if (end + 2 > buf.length || buf[end] !== 0x0d || buf[end + 1] !== 0x0a) {
    throw new UdpFallback('protocol');
  }
  return [buf.subarray(start, end), end + 2];
}

// An error reply: NOAUTH, a cluster redirect (MOVED or ASK: the key's slot is
// served elsewhere), or any other error.
function checkError(resp) {
  if (resp[0] === 0x2d /* - */) {
    const head = resp.toString('latin1', 0, 7);
    if (head === '-NOAUTH') throw new UdpFallback('noauth');
    if (head === '-MOVED ' || head.startsWith('-ASK ')) throw new UdpFallback('redirect');
    throw new UdpFallback('error');
  }
}

// A GET reply: the value (a copy), or null. Error replies throw.
function parseBulk(resp) {
  checkError(resp);
  const [value, end] = bulkAt(resp, 0);
  if (end !== resp.length) throw new UdpFallback('protocol');
  return value && Buffer.from(value);
}

// An MGET reply of count bulk strings (null for a miss). Errors throw.
function parseBulkArray(resp, count) {
  checkError(resp);
  const nl = resp.indexOf('\r\n');
  if (resp[0] !== 0x2a /* * */ || nl < 0 || resp.toString('latin1', 1, nl) !== String(count)) {
    throw new UdpFallback('protocol');
  }
  const out = [];
  let i = nl + 2;
  for (let n = 0; n < count; n++) {
    const [value, next] = bulkAt(resp, i);
    out.push(value && Buffer.from(value));
    i = next;
  }
  if (i !== resp.length) throw new UdpFallback('protocol');
  return out;
}

class Endpoint {
  constructor(host, port, { token = NO_TOKEN, padding = DEFAULT_PADDING, timeout = 200, retries = 2 } = {}) {
    if (!(padding >= HDR_LEN && padding <= MAX_DATAGRAM)) {
      throw new RangeError('udpPadding must be ' + HDR_LEN + '..' + MAX_DATAGRAM + ' bytes');
    }
    this.host = host;
    this.port = Number(port);
    this.token = token;
    this.padding = padding;
    this.timeout = timeout;
    this.retries = retries;
    this.pending = new Map(); // request id -> its request (every attempt's id)
    this.nextId = crypto.randomBytes(4).readUInt32BE(0);
    this.addrs = null; // resolved once: [{address, family}]
    this.addr = 0; // the one in use
    this.socket = null; // a Promise of the connected socket
  }

  close() {
    const sock = this.socket;
    this.socket = null;
    this._failAll('refused');
    if (sock) sock.then(closeQuietly, () => {});
  }

  async _resolve() {
    if (!this.addrs) {
      if (net.isIP(this.host)) {
        this.addrs = [{ address: this.host, family: net.isIP(this.host) }];
      } else {
        try {
          this.addrs = await dns.promises.lookup(this.host, { all: true });
        } catch {
          throw new UdpFallback('unreachable');
        }
      }
    }
    return this.addrs;
  }

  _open() {
    if (!this.socket) {
      this.socket = this._connect();
      this.socket.catch(() => {
        this.socket = null;
      });
    }
    return this.socket;
  }

  // A socket connected to the address in use, or the next one that takes it.
  async _connect() {
    const addrs = await this._resolve();
    for (; this.addr < addrs.length; this.addr++) {
      try {
        return await this._connectTo(addrs[this.addr]);
      } catch {
        // ENETUNREACH and the like: the next address.
      }
    }
    this.addr = 0;
    throw new UdpFallback('refused');
  }

  async _connectTo({ address, family }) {
    const s = dgram.createSocket(family === 6 ? 'udp6' : 'udp4');
    s.unref(); // an idle client must not keep the process alive
    try {
      await new Promise((resolve, reject) => {
        s.once('error', reject);
        s.connect(this.port, address, () => {
          s.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      closeQuietly(s);
      throw err;
    }
    s.on('message', (msg) => this._onMessage(msg));
    // A connected socket hears ICMP port-unreachable as ECONNREFUSED: the
    // next address (or TCP) at once instead of a timeout.
    s.on('error', () => this._onError(s));
    return s;
  }

  // The address in use refused (or failed): the requests in flight go to the
  // next one, and once every address has refused, to TCP.
  _onError(s) {
    if (!this.socket) return;
    this.socket.then((cur) => {
      if (cur !== s) return;
      this.socket = null;
      closeQuietly(s);
      this.addr++;
      if (this.addr >= this.addrs.length) {
        this.addr = 0;
        this._failAll('refused');
        return;
      }
      const reqs = new Set(this.pending.values());
      for (const req of reqs) {
        clearTimeout(req.timer);
        req.attempts--; // refused is not a lost attempt
      }
      this._open().then(
        (sock) => reqs.forEach((req) => this._send(sock, req)),
        (err) => reqs.forEach((req) => this._finish(req, err)),
      );
    }, () => {});
  }

  _failAll(reason) {
    for (const req of new Set(this.pending.values())) this._finish(req, new UdpFallback(reason));
  }

  _finish(req, err, value) {
    clearTimeout(req.timer);
    for (const id of req.ids) this.pending.delete(id);
    if (err) req.reject(err);
    else req.resolve(value);
  }

  _onMessage(msg) {
    if (msg.length < HDR_LEN || msg.readUInt16BE(0) !== MAGIC || msg[2] !== VERSION) return;
    const flags = msg[3];
    const req = this.pending.get(msg.readUInt32BE(4));
    if (!(flags & F_REPLY) || !req) return;
    if (flags & F_TRUNCATED) return this._finish(req, new UdpFallback('truncated'));
    const cmdLen = msg.readUInt16BE(8);
    if (cmdLen === 0 || cmdLen > msg.length - HDR_LEN) {
      return this._finish(req, new UdpFallback('protocol'));
    }
    this._finish(req, null, { flags, resp: msg.subarray(HDR_LEN, HDR_LEN + cmdLen) });
  }

  _send(sock, req) {
    const id = this.nextId;
    this.nextId = (id + 1) >>> 0;
    req.ids.push(id);
    req.attempts++;
    this.pending.set(id, req);
    req.buf.writeUInt32BE(id, 4);
    sock.send(req.buf);
    req.timer = setTimeout(() => {
      if (req.attempts <= this.retries) this._send(sock, req);
      else this._finish(req, new UdpFallback('timeout'));
    }, this.timeout);
  }

  // Sends the RESP command cmd (a Buffer): resolves to {flags, resp}, or
  // rejects with a UdpFallback when there is no usable reply.
  async request(cmd) {
    const size = Math.max(this.padding, HDR_LEN + cmd.length);
    if (size > MAX_DATAGRAM) throw new UdpFallback('too_large');
    const sock = await this._open();
    const buf = Buffer.alloc(size); // zeroed: the padding
    buf.writeUInt16BE(MAGIC, 0);
    buf[2] = VERSION;
    buf.writeUInt16BE(cmd.length, 8);
    this.token.copy(buf, 16);
    cmd.copy(buf, HDR_LEN);
    return new Promise((resolve, reject) => {
      this._send(sock, { buf, ids: [], attempts: 0, timer: null, resolve, reject });
    });
  }
}

module.exports = {
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
};
