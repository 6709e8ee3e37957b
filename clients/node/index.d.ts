// SPDX-License-Identifier: BSD-3-Clause
// Types of xkv-client: ioredis's Redis, with the options and stats of the UDP fast path.
import IORedis, { ClusterNode, ClusterOptions, RedisOptions } from 'ioredis';

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
    /** Fallbacks by reason: truncated, timeout, refused, noauth, redirect, error, protocol, too_large. */
    reasons: Record<string, number>;
  }

  interface XkvClusterOptions extends ClusterOptions {
    /** The nodes' fastpath-token; by default derived from `redisOptions.password`. */
    fastpathToken?: number | bigint;
    /** false: a plain ioredis Cluster. */
    udp?: boolean;
    udpPadding?: number;
    udpTimeout?: number;
    udpRetries?: number;
    /** ms UDP to one node is left alone after a timeout, a refusal or NOAUTH (5000). */
    udpBackoff?: number;
  }

  /** An ioredis Cluster whose GET and MGET go over UDP to each key's node. */
  class Cluster extends IORedis.Cluster {
    constructor(startupNodes: ClusterNode[], options?: XkvClusterOptions);
    stats: FastpathStats;
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
  static readonly Cluster: typeof XkvRedis.Cluster;
}

export = XkvRedis;
