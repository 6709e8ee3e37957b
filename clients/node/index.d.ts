// SPDX-License-Identifier: BSD-3-Clause
// Types of xkv-client: ioredis's Redis, with the options and stats of the UDP fast path.
import IORedis, { RedisOptions } from 'ioredis';

declare namespace XkvRedis {
  interface XkvOptions extends RedisOptions {
    /** The server's fastpath-token; by default derived from `password`, or 0 without one. */
    fastpathToken?: number | bigint;
    /** false: a plain ioredis client. */
    udp?: boolean;
    /** The server's udp-port (default: the TCP port). */
    udpPort?: number;
    /** Bytes of each request datagram, header included (1200). */
    udpPadding?: number;
    /** ms to wait for each UDP attempt (200). */
    udpTimeout?: number;
    /** UDP attempts after the first (2). */
    udpRetries?: number;
    /** ms UDP is left alone after a timeout, a refusal or NOAUTH (5000). */
    udpBackoff?: number;
  }

  class FastpathStats {
    /** GETs and MGETs answered over UDP. */
    udp: number;
    /** Of those, answered by the kernel's XDP program. */
    kernel: number;
    /** Tried UDP, then asked over TCP. */
    fallbacks: number;
    /** Went straight to TCP. */
    tcpOnly: number;
    /** Fallbacks by reason: truncated, timeout, refused, noauth, error, protocol, too_large. */
    reasons: Record<string, number>;
  }

  function tokenFromPassword(password: string | Buffer): Buffer;
  function tokenFromNumber(token: number | bigint): Buffer;
}

declare class XkvRedis extends IORedis {
  constructor(options?: XkvRedis.XkvOptions);
  constructor(port: number, options?: XkvRedis.XkvOptions);
  constructor(port: number, host: string, options?: XkvRedis.XkvOptions);
  constructor(path: string, options?: XkvRedis.XkvOptions);
  stats: XkvRedis.FastpathStats;
  static readonly Redis: typeof XkvRedis;
  static readonly default: typeof XkvRedis;
}

export = XkvRedis;
