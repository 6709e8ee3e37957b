# SPDX-License-Identifier: BSD-3-Clause
"""xkv.Redis: redis.Redis whose GET and MGET go over UDP first.

Everything else is redis-py's own. A GET or MGET is sent as one datagram to
the server's UDP port, where the kernel answers a cached key and the daemon
the rest; whatever UDP does not settle (no answer, TRUNCATED, an error reply
such as NOAUTH or WRONGTYPE, a malformed reply) is asked again over TCP by
redis-py itself, so every result and every exception is the one the TCP
client gives. UDP is used only where it can give the same answer: a TCP
host:port connection (not a unix socket, not TLS, whose secrecy UDP would
lose) to database 0, which is the only one served over UDP.
"""

import threading
import time

import redis
from redis.commands.helpers import list_or_args
from redis.connection import SSLConnection, UnixDomainSocketConnection

from .udp import (DEFAULT_PADDING, F_KERNEL, NO_TOKEN, Endpoint, UdpFallback,
                  encode_command, parse_bulk, parse_bulk_array, token_from_number,
                  token_from_password)

GET_PREFIX = b'*2\r\n$3\r\nGET\r\n'


class FastpathStats:
    """What the GETs and MGETs of one client did (one count per call).

    udp: answered over UDP (kernel: of those, answered by the XDP program);
    fallbacks: tried UDP and then asked over TCP, by reason in `reasons`;
    tcp_only: went straight to TCP (UDP off for this connection, or backing
    off after a failure)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.udp = self.kernel = self.fallbacks = self.tcp_only = 0
        self.reasons = {}

    def _hit(self, flags):
        with self._lock:
            self.udp += 1
            self.kernel += bool(flags & F_KERNEL)

    def _fallback(self, reason):
        with self._lock:
            self.fallbacks += 1
            self.reasons[reason] = self.reasons.get(reason, 0) + 1

    def _tcp_only(self):
        with self._lock:
            self.tcp_only += 1

    def as_dict(self):
        with self._lock:
            return {'udp': self.udp, 'kernel': self.kernel, 'fallbacks': self.fallbacks,
                    'tcp_only': self.tcp_only, 'reasons': dict(self.reasons)}

    def __repr__(self):
        return 'FastpathStats(%r)' % self.as_dict()


class Redis(redis.Redis):
    """A drop-in redis.Redis with GET and MGET over UDP.

    Extra keyword arguments (all optional):
      fastpath_token  the server's fastpath-token (a number); by default the
                      token is derived from `password`, or 0 without one
      udp             False turns UDP off (a plain redis.Redis)
      udp_port        the server's udp-port (default: the TCP port)
      udp_padding     request datagram size in bytes, header included (1200):
                      the largest reply accepted over UDP; larger ones come
                      back TRUNCATED and are asked over TCP
      udp_timeout     seconds to wait for each UDP attempt (0.2)
      udp_retries     UDP attempts after the first (2)
      udp_backoff     seconds UDP is left alone after it timed out, was
                      refused or answered NOAUTH (5.0; MGET alone after an
                      error reply, as from a server without MGET over UDP)
    """

    def __init__(self, *args, fastpath_token=None, udp=True, udp_port=None,
                 udp_padding=DEFAULT_PADDING, udp_timeout=0.2, udp_retries=2,
                 udp_backoff=5.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.stats = FastpathStats()
        self.udp_backoff = float(udp_backoff)
        self._udp_off_until = self._mget_off_until = 0.0
        self._endpoint = None
        pool = self.connection_pool
        kw = pool.connection_kwargs
        cls = pool.connection_class
        if (not udp or 'host' not in kw or int(kw.get('db') or 0) != 0
                or issubclass(cls, (SSLConnection, UnixDomainSocketConnection))):
            return
        if fastpath_token is not None:
            token = token_from_number(fastpath_token)
        elif kw.get('password') is not None:
            token = token_from_password(kw['password'])
        else:
            token = NO_TOKEN
        self._encoder = pool.get_encoder()
        self._endpoint = Endpoint(kw.get('host') or 'localhost',
                                  udp_port if udp_port is not None else kw.get('port', 6379),
                                  token=token, padding=udp_padding, timeout=udp_timeout,
                                  retries=udp_retries)

    def close(self):
        if getattr(self, '_endpoint', None) is not None:
            self._endpoint.close()
        super().close()

    # ---- GET and MGET ----------------------------------------------------

    def _udp_ready(self, now, mget=False):
        if self._endpoint is None or now < self._udp_off_until or (
                mget and now < self._mget_off_until):
            self.stats._tcp_only()
            return False
        return True

    def _failed(self, reason, mget=False):
        self.stats._fallback(reason)
        now = time.monotonic()
        if reason in ('timeout', 'refused', 'noauth', 'unreachable'):
            self._udp_off_until = now + self.udp_backoff
        elif mget and reason == 'error':
            self._mget_off_until = now + self.udp_backoff

    def get(self, name):
        if not self._udp_ready(time.monotonic()):
            return super().get(name)
        key = bytes(self._encoder.encode(name))
        try:
            flags, resp = self._endpoint.request(
                GET_PREFIX + b'$%d\r\n' % len(key) + key + b'\r\n')
            value = parse_bulk(resp)
            if value is not None and self._encoder.decode_responses:
                value = self._encoder.decode(value)
        except UdpFallback as e:
            self._failed(e.reason)
            return super().get(name)
        except UnicodeError:
            # Let the TCP path raise exactly what redis-py raises.
            self._failed('decode')
            return super().get(name)
        self.stats._hit(flags)
        callback = self.response_callbacks.get('GET')
        return callback(value) if callback else value

    def mget(self, keys, *args):
        names = list_or_args(keys, args)
        if not names or not self._udp_ready(time.monotonic(), mget=True):
            return super().mget(keys, *args)
        encoded = [bytes(self._encoder.encode(n)) for n in names]
        try:
            flags, resp = self._endpoint.request(encode_command([b'MGET'] + encoded))
            values = parse_bulk_array(resp, len(encoded))
            if self._encoder.decode_responses:
                values = [v if v is None else self._encoder.decode(v) for v in values]
        except UdpFallback as e:
            self._failed(e.reason, mget=True)
            return super().mget(keys, *args)
        except UnicodeError:
            self._failed('decode', mget=True)
            return super().mget(keys, *args)
        self.stats._hit(flags)
        callback = self.response_callbacks.get('MGET')
        return callback(values) if callback else values
