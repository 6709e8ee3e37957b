# SPDX-License-Identifier: BSD-3-Clause
"""The UDP side of the xkv client: one request datagram, one reply
(docs/udp-protocol.md of the xkv checkout).

A request is the 24-byte header, one RESP command and zero padding up to the
largest reply the client accepts, because a reply is never larger than its
request. Whatever UDP cannot settle raises UdpFallback with a reason, and the
caller asks over TCP instead.

Threads: an Endpoint is shared by every thread of a client; each thread gets
its own connected socket and request ids (threading.local), and a forked
child opens its own, so a reply is never read by another thread or process.
"""

import hashlib
import os
import socket
import struct
import threading

MAGIC, VERSION = 0x584B, 1
F_REPLY, F_TRUNCATED, F_KERNEL = 0x01, 0x02, 0x04
# magic, version, flags, request_id, cmd_len, reserved, value_len (big-endian),
# then the 8-byte token as raw bytes in the server's order.
HDR = struct.Struct('!HBBIHHI8s')
HDR_LEN = HDR.size
MAX_DATAGRAM = 65507            # the largest UDP payload over IPv4
DEFAULT_PADDING = 1200          # as libxkv: one frame at IPv6's minimum MTU
NO_TOKEN = bytes(8)
TOKEN_PREFIX = b'xkv-fastpath-token:'
assert HDR_LEN == 24


def token_from_password(password):
    """The token a server derives from its requirepass when no fastpath-token
    is set: the first 8 bytes of SHA-256("xkv-fastpath-token:" + password),
    sent as those raw bytes."""
    if isinstance(password, str):
        password = password.encode('utf-8')
    return hashlib.sha256(TOKEN_PREFIX + bytes(password)).digest()[:8]


def token_from_number(token):
    """An operator's fastpath-token (1 .. 2**63-1) as the server compares it:
    its own uint64 in host order, little-endian on x86-64 and arm64."""
    token = int(token)
    if not 0 <= token < 1 << 64:
        raise ValueError('fastpath_token must be between 0 and 2**64-1')
    return token.to_bytes(8, 'little')


class UdpFallback(Exception):
    """UDP did not settle the request; args[0] is the reason
    ('timeout', 'refused', 'truncated', 'noauth', 'redirect', 'error',
    'protocol', 'too_large', 'unreachable')."""

    @property
    def reason(self):
        return self.args[0]


def encode_command(args):
    """args (bytes) -> one RESP array of bulk strings."""
    out = [b'*%d\r\n' % len(args)]
    for a in args:
        out.append(b'$%d\r\n' % len(a))
        out.append(a)
        out.append(b'\r\n')
    return b''.join(out)


def _error(resp):
    """The fallback for an error reply: NOAUTH, a cluster redirect (MOVED or
    ASK: the key's slot is served elsewhere), or any other error."""
    if resp.startswith(b'-NOAUTH'):
        return UdpFallback('noauth')
    if resp.startswith((b'-MOVED ', b'-ASK ')):
        return UdpFallback('redirect')
    return UdpFallback('error')


def _bulk(buf, i):
    """The bulk string at buf[i:]: (bytes or None, index after it)."""
    if buf[i:i + 1] != b'$':
        raise UdpFallback('protocol')
    nl = buf.find(b'\r\n', i)
    if nl < 0:
        raise UdpFallback('protocol')
    n = int(buf[i + 1:nl])
    if n == -1:
        return None, nl + 2
    start, end = nl + 2, nl + 2 + n
    if n < 0 or buf[end:end + 2] != b'\r\n':
        raise UdpFallback('protocol')
    return buf[start:end], end + 2


def parse_bulk(resp):
    """A GET reply: the value, or None for nil. Error replies raise."""
    if resp[:1] == b'-':
        raise _error(resp)
    try:
        value, end = _bulk(resp, 0)
    except ValueError:
        raise UdpFallback('protocol') from None
    if end != len(resp):
        raise UdpFallback('protocol')
    return value


def parse_bulk_array(resp, count):
    """An MGET reply of count bulk strings (nil for a miss). Errors raise."""
    if resp[:1] == b'-':
        raise _error(resp)
    try:
        nl = resp.find(b'\r\n')
        if resp[:1] != b'*' or nl < 0 or int(resp[1:nl]) != count:
            raise UdpFallback('protocol')
        out, i = [], nl + 2
        for _ in range(count):
            value, i = _bulk(resp, i)
            out.append(value)
    except ValueError:
        raise UdpFallback('protocol') from None
    if i != len(resp):
        raise UdpFallback('protocol')
    return out


class Endpoint:
    """The server's UDP port: sends one command, returns its RESP reply."""

    def __init__(self, host, port, token=NO_TOKEN, padding=DEFAULT_PADDING, timeout=0.2,
                 retries=2):
        if not HDR_LEN <= padding <= MAX_DATAGRAM:
            raise ValueError('udp_padding must be %d..%d bytes' % (HDR_LEN, MAX_DATAGRAM))
        self.host, self.port, self.token = host, int(port), token
        self.padding, self.timeout, self.retries = int(padding), float(timeout), int(retries)
        self._zeros = bytes(MAX_DATAGRAM)
        self._local = threading.local()
        self._addrs = None

    def _addresses(self):
        if self._addrs is None:
            try:
                self._addrs = [ai for ai in socket.getaddrinfo(self.host, self.port,
                                                               type=socket.SOCK_DGRAM)]
            except OSError:
                raise UdpFallback('unreachable') from None
        return self._addrs

    def _state(self):
        """This thread's socket, connected to the address in use."""
        st = self._local
        if getattr(st, 'pid', None) != os.getpid():
            st.pid, st.sock, st.addr = os.getpid(), None, 0
            st.next_id = int.from_bytes(os.urandom(4), 'little')
        return st

    def _open(self, st):
        addrs = self._addresses()
        while st.sock is None:
            if st.addr >= len(addrs):
                st.addr = 0
                raise UdpFallback('refused')
            family, kind, proto, _, sockaddr = addrs[st.addr]
            s = socket.socket(family, kind, proto)
            try:
                s.connect(sockaddr)
            except OSError:
                s.close()
                st.addr += 1
                continue
            st.sock = s
        return st.sock

    def _drop(self, st):
        """This address refused: the next one, next time."""
        if st.sock is not None:
            st.sock.close()
        st.sock = None
        st.addr += 1

    def close(self):
        st = self._state()
        if st.sock is not None:
            st.sock.close()
            st.sock = None

    def request(self, cmd):
        """Sends the RESP command cmd: (reply flags, RESP reply bytes).
        Raises UdpFallback when there is no usable reply."""
        size = max(self.padding, HDR_LEN + len(cmd))
        if size > MAX_DATAGRAM:
            raise UdpFallback('too_large')
        st = self._state()
        first = st.next_id
        tail = cmd + self._zeros[:size - HDR_LEN - len(cmd)]
        attempts = 0
        while attempts <= self.retries:
            s = self._open(st)
            rid = st.next_id
            st.next_id = (rid + 1) & 0xFFFFFFFF
            attempts += 1
            try:
                s.send(HDR.pack(MAGIC, VERSION, 0, rid, len(cmd), 0, 0, self.token) + tail)
                got = self._wait(s, first, rid)
            except socket.timeout:
                continue
            except (ConnectionRefusedError, OSError):
                # ICMP port unreachable (or no route): the next address, not a lost try.
                self._drop(st)
                attempts -= 1
                if st.addr >= len(self._addresses()):
                    st.addr = 0
                    raise UdpFallback('refused') from None
                continue
            if got is not None:
                return got
        raise UdpFallback('timeout')

    def _wait(self, s, first, last):
        """The first reply to any id first..last (a late answer to an earlier
        attempt is as good); others are dropped. Raises socket.timeout."""
        s.settimeout(self.timeout)
        span = (last - first) & 0xFFFFFFFF
        while True:
            data = s.recv(MAX_DATAGRAM + 1)
            if len(data) < HDR_LEN:
                continue
            magic, version, flags, rid, cmd_len, _, value_len, _ = HDR.unpack_from(data)
            if (magic != MAGIC or version != VERSION or not flags & F_REPLY
                    or (rid - first) & 0xFFFFFFFF > span):
                continue
            if flags & F_TRUNCATED:
                raise UdpFallback('truncated')
            if cmd_len == 0 or cmd_len > len(data) - HDR_LEN:
                raise UdpFallback('protocol')
            return flags, data[HDR_LEN:HDR_LEN + cmd_len]
