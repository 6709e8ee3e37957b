# SPDX-License-Identifier: BSD-3-Clause
"""xkv.RedisCluster: redis-py's RedisCluster whose GETs and MGETs go over UDP
to the node that serves each key's slot.

Everything else is redis-py's own. The node is the one redis-py's slot table
names (the primary); its UDP port is its TCP port. Whatever UDP does not
settle is asked again over TCP by RedisCluster itself, so every result and
every exception is the one the TCP client gives: in particular a MOVED or
ASK over UDP (the slot moved since the table was read) makes RedisCluster
follow the redirect and refresh its table, and the next request goes over
UDP to the new owner.
"""

import threading
import time

from redis.cluster import RedisCluster as _RedisCluster
from redis.commands.helpers import list_or_args
from redis.crc import key_slot

from .client import GET_PREFIX, FastpathStats
from .udp import (DEFAULT_PADDING, NO_TOKEN, Endpoint, UdpFallback, encode_command, parse_bulk,
                  parse_bulk_array, token_from_number, token_from_password)


class RedisCluster(_RedisCluster):
    """A drop-in redis.cluster.RedisCluster with GET and MGET over UDP.

    The same extra keyword arguments as xkv.Redis (fastpath_token, udp,
    udp_padding, udp_timeout, udp_retries, udp_backoff); the backoff is per
    node. mget_nonatomic() sends one UDP MGET per slot, as redis-py sends
    one MGET per slot over TCP; if any of them is not settled, the whole
    call is asked over TCP."""

    def __init__(self, *args, fastpath_token=None, udp=True, udp_padding=DEFAULT_PADDING,
                 udp_timeout=0.2, udp_retries=2, udp_backoff=5.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.stats = FastpathStats()
        self.udp_backoff = float(udp_backoff)
        self._udp = bool(udp) and not kwargs.get('ssl')
        if fastpath_token is not None:
            self._token = token_from_number(fastpath_token)
        elif kwargs.get('password') is not None:
            self._token = token_from_password(kwargs['password'])
        else:
            self._token = NO_TOKEN
        self._endpoint_args = dict(padding=udp_padding, timeout=udp_timeout,
                                   retries=udp_retries)
        self._endpoints = {}      # (host, port) -> Endpoint
        self._off_until = {}      # (host, port) -> monotonic time UDP is left alone
        self._endpoints_lock = threading.Lock()

    def close(self):
        with self._endpoints_lock:
            for ep in self._endpoints.values():
                ep.close()
            self._endpoints.clear()
        super().close()

    # ---- the node of a slot, and its UDP endpoint --------------------------

    def _endpoint_of(self, slot):
        """The slot's node's Endpoint, or None (no UDP for it now)."""
        if not self._udp:
            return None
        cached = self.nodes_manager.slots_cache.get(slot)
        if not cached:
            return None
        where = (cached[0].host, cached[0].port)
        if time.monotonic() < self._off_until.get(where, 0.0):
            return None
        with self._endpoints_lock:
            ep = self._endpoints.get(where)
            if ep is None:
                ep = self._endpoints[where] = Endpoint(where[0], where[1], token=self._token,
                                                       **self._endpoint_args)
        return ep

    def _failed(self, ep, reason):
        self.stats._fallback(reason)
        if reason in ('timeout', 'refused', 'noauth', 'unreachable'):
            self._off_until[(ep.host, ep.port)] = time.monotonic() + self.udp_backoff

    def _key(self, name):
        return bytes(self.encoder.encode(name))

    # ---- GET and MGET ------------------------------------------------------

    def get(self, name):
        key = self._key(name)
        ep = self._endpoint_of(key_slot(key))
        if ep is None:
            self.stats._tcp_only()
            return super().get(name)
        try:
            flags, resp = ep.request(GET_PREFIX + b'$%d\r\n' % len(key) + key + b'\r\n')
            value = parse_bulk(resp)
            if value is not None and self.encoder.decode_responses:
                value = self.encoder.decode(value)
        except UdpFallback as e:
            self._failed(ep, e.reason)
            return super().get(name)
        except UnicodeError:
            self._failed(ep, 'decode')
            return super().get(name)
        self.stats._hit(flags)
        return value

    def mget_nonatomic(self, keys, *args):
        names = list_or_args(keys, args)
        if not names:
            return super().mget_nonatomic(keys, *args)
        encoded = [self._key(n) for n in names]
        by_slot = {}
        for i, k in enumerate(encoded):
            by_slot.setdefault(key_slot(k), []).append(i)
        out = [None] * len(names)
        flags_all = []
        for slot, idx in by_slot.items():
            ep = self._endpoint_of(slot)
            if ep is None:
                self.stats._tcp_only()
                return super().mget_nonatomic(keys, *args)
            try:
                flags, resp = ep.request(encode_command([b'MGET'] + [encoded[i] for i in idx]))
                values = parse_bulk_array(resp, len(idx))
                if self.encoder.decode_responses:
                    values = [v if v is None else self.encoder.decode(v) for v in values]
            except UdpFallback as e:
                self._failed(ep, e.reason)
                return super().mget_nonatomic(keys, *args)
            except UnicodeError:
                self._failed(ep, 'decode')
                return super().mget_nonatomic(keys, *args)
            for i, v in zip(idx, values):
                out[i] = v
            flags_all.append(flags)
        for flags in flags_all:
            self.stats._hit(flags)
        return out
