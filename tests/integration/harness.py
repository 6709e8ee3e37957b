# SPDX-License-Identifier: GPL-2.0-only
"""Integration-test harness: server processes, a raw RESP client, the
redis-vs-xkvd compare helper and a tiny TAP test framework (stdlib only)."""

import atexit
import ctypes
import decimal
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

REDIS_SERVER = '/usr/bin/redis-server'
REDIS_CLI = '/usr/bin/redis-cli'
HOST = '127.0.0.1'
SANITIZER = re.compile(rb'(ERROR|WARNING): \w*Sanitizer|runtime error:')
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))

# ---------------------------------------------------------------- processes

_live = set()          # every started server, so atexit can stop it by PID


@atexit.register
def close_all():
    for srv in list(_live):
        srv.close()


def _die_with_parent():
    # A server must not outlive a runner that was SIGKILLed (PR_SET_PDEATHSIG).
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class Server:
    """One redis-server or xkvd process on a free loopback port.

    kind is 'redis' or 'xkvd'; directives are extra `--name value` pairs
    (Redis directive names), config_file an optional config path that goes
    first on the command line, as with redis-server."""

    def __init__(self, kind, binary=None, engine='io_uring', directives=None,
                 config_file=None, label=None, redis_binary=None):
        self.kind, self.binary, self.engine = kind, binary, engine
        self.redis_binary = redis_binary   # another redis-server than Debian's
        self.directives = dict(directives or {})
        self.config_file = config_file
        self.label = label or kind
        self.proc = self.port = self.dir = None

    def argv(self):
        args = [self.config_file] if self.config_file else []
        args += ['--port', str(self.port), '--bind', HOST, '--dir', self.dir]
        # DEBUG is refused by default, as in Redis (enable-debug-command no).
        if self.kind == 'redis':
            args += ['--save', '', '--appendonly', 'no', '--daemonize', 'no',
                     '--enable-debug-command', 'yes']
            exe = self.redis_binary or self.binary or REDIS_SERVER
        else:
            # The kernel fast path has its own tests, in namespaces of their own.
            args += ['--threads', '2', '--io-engine', self.engine, '--fastpath', 'no',
                     '--enable-debug-command', 'yes']
            exe = self.binary
        for name, value in self.directives.items():
            args += ['--' + name, str(value)]
        return [exe] + args

    @property
    def log_path(self):
        return os.path.join(self.dir, 'server.log')

    def start(self):
        self.dir = tempfile.mkdtemp(prefix='xkv-it-%s-' % self.kind)
        for _ in range(3):     # a free port can be taken before we bind it
            self.port = free_port()
            with open(self.log_path, 'ab') as log:
                self.proc = subprocess.Popen(
                    self.argv(), stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
            _live.add(self)
            if self._wait_ready(10.0):
                return self
            if self.alive() or b'in use' not in self.log_bytes():
                break
        why = ('did not answer PING within 10 s' if self.alive() else
               'exited at start (rc %s)' % self.proc.returncode)
        msg = '%s %s: %s\n%s' % (self.label, why, ' '.join(self.argv()), self.log_tail())
        self.close()
        raise RuntimeError(msg)

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.alive():
            if self.responsive(timeout=1.0):
                return True
            time.sleep(0.02)
        return False

    def responsive(self, timeout=5.0):
        """Answers PING (with requirepass, NOAUTH also means it is up)."""
        try:
            with Client(self.port, timeout=timeout) as c:
                reply = c.cmd('PING')
                return reply == b'+PONG\r\n' or reply.startswith(b'-NOAUTH')
        except (OSError, ConnectionClosed):
            return False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        """Stop the process by PID: SIGTERM, then SIGKILL after 5 s."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def close(self):
        """Stop the process and remove its directory (and log)."""
        self.stop()
        _live.discard(self)
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def sanitizer_reports(self):
        """Sanitizer error lines logged since the last call (ASan builds
        report to stderr, which is the log)."""
        log = self.log_bytes()
        new, self._log_seen = log[getattr(self, '_log_seen', 0):], len(log)
        return [line.decode('utf-8', 'replace') for line in new.splitlines()
                if SANITIZER.search(line)]

    def log_bytes(self):
        try:
            with open(self.log_path, 'rb') as f:
                return f.read()
        except OSError:
            return b''

    def log_tail(self, lines=40):
        tail = self.log_bytes().decode('utf-8', 'replace').splitlines()[-lines:]
        return '\n'.join(['--- %s log (%s) ---' % (self.label, self.log_path)]
                         + tail)

    def client(self, proto=2, timeout=5.0):
        c = Client(self.port, proto=proto, timeout=timeout)
        c.kind = self.kind
        return c

    def call(self, *args):
        """One command on a fresh connection, decoded."""
        with self.client() as c:
            return c.call(*args)


# ---------------------------------------------------------------- RESP

class ConnectionClosed(Exception):
    """The server closed the connection before a complete reply arrived."""


class RespError(Exception):
    """A decoded RESP error reply; compares equal to its message."""

    def __eq__(self, other):
        return isinstance(other, RespError) and self.args == other.args

    __hash__ = Exception.__hash__


def encode(args):
    out = [b'*%d\r\n' % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b'$%d\r\n%s\r\n' % (len(a), a))
    return b''.join(out)


LINE_TYPES = b'+-:_,#('
BULK_TYPES = b'$!='
ARRAY_TYPES = b'*~>'
MAP_TYPES = b'%|'


class Client:
    """Raw RESP2/RESP3 client: replies are returned as their exact bytes."""

    def __init__(self, port, proto=2, timeout=5.0):
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        if proto != 2:
            reply = self.cmd('HELLO', proto)
            assert reply[:1] == b'%', 'HELLO %s failed: %r' % (proto, reply)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.sock.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, *args):
        self.sock.sendall(encode(args))

    def cmd(self, *args):
        self.send(*args)
        return self.read_reply()

    def call(self, *args):
        return decode(self.cmd(*args))

    def read_reply(self):
        end = self._skip(0)
        raw = bytes(self.buf[:end])
        del self.buf[:end]
        return raw

    def read_replies(self, n):
        return b''.join(self.read_reply() for _ in range(n))

    def _fill(self, want=65536):
        chunk = self.sock.recv(max(want, 65536))
        if not chunk:
            raise ConnectionClosed('closed by the server')
        self.buf += chunk

    def _line_end(self, i):
        while True:
            j = self.buf.find(b'\r\n', i)
            if j >= 0:
                return j
            self._fill()

    def _skip(self, i):
        """Index just past the complete reply that starts at buf[i]."""
        j = self._line_end(i)
        kind, body, nxt = self.buf[i:i + 1], bytes(self.buf[i + 1:j]), j + 2
        if kind and kind in LINE_TYPES:
            return nxt
        if not (kind and (kind in BULK_TYPES or kind in ARRAY_TYPES or kind in MAP_TYPES)) \
                or not body.lstrip(b'-').isdigit():
            raise ValueError('not a RESP reply: %r' % bytes(self.buf[i:j + 2]))
        n = int(body)
        if kind in BULK_TYPES:
            if n < 0:
                return nxt
            while len(self.buf) < nxt + n + 2:
                self._fill(nxt + n + 2 - len(self.buf))
            return nxt + n + 2
        if kind in ARRAY_TYPES or kind in MAP_TYPES:
            for _ in range(n * (2 if kind in MAP_TYPES else 1)):
                nxt = self._skip(nxt)
            # An attribute map is followed by the reply it annotates.
            return self._skip(nxt) if kind == b'|' else nxt

    def read_available(self, first=2.0, quiet=0.2):
        """What the server sends until it closes or goes quiet: waits up to
        `first` s for the first byte, then `quiet` s for each next chunk.
        Returns (data, closed)."""
        data = bytes(self.buf)
        self.buf.clear()
        wait = quiet if data else first
        while True:
            self.sock.settimeout(wait)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                return data, False
            except ConnectionResetError:
                return data, True
            if not chunk:
                return data, True
            data, wait = data + chunk, quiet

    def read_until_close(self, timeout=5.0):
        """All bytes until the server closes: (data, closed_within_timeout)."""
        data = bytes(self.buf)
        self.buf.clear()
        self.sock.settimeout(timeout)
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return data, True
                data += chunk
        except ConnectionResetError:
            return data, True
        except socket.timeout:
            pass
        return data, False


def decode(raw):
    """Raw reply bytes -> Python value (bytes, int, None, list, dict, ...)."""
    value, end = _decode(raw, 0)
    assert end == len(raw), 'trailing bytes after reply: %r' % raw
    return value


def _decode(raw, i):
    j = raw.index(b'\r\n', i)
    kind, body, nxt = raw[i:i + 1], raw[i + 1:j], j + 2
    if kind == b'+':
        return body, nxt
    if kind in (b'-', b'!'):
        if kind == b'!':
            body = raw[nxt:nxt + int(body)]
            nxt += len(body) + 2
        return RespError(body.decode('utf-8', 'replace')), nxt
    if kind in b':(':
        return int(body), nxt
    if kind == b'_':
        return None, nxt
    if kind == b',':
        return float(body), nxt
    if kind == b'#':
        return body == b't', nxt
    n = int(body)
    if kind in b'$=':
        if n < 0:
            return None, nxt
        data = raw[nxt:nxt + n]
        return (data[4:] if kind == b'=' else data), nxt + n + 2
    if n < 0:
        return None, nxt
    items = []
    for _ in range(n * (2 if kind in MAP_TYPES else 1)):
        item, nxt = _decode(raw, nxt)
        items.append(item)
    if kind in MAP_TYPES:
        m = dict(zip(items[::2], items[1::2]))
        return (_decode(raw, nxt) if kind == b'|' else (m, nxt))
    return items, nxt


def pairs(value):
    """A RESP2 flat name/value list (or a RESP3 map) as a dict."""
    return value if isinstance(value, dict) else dict(zip(value[::2], value[1::2]))


def info_fields(text):
    """INFO text -> {section: {field: value}}."""
    if isinstance(text, bytes):
        text = text.decode()
    sections, cur = {}, None
    for line in text.split('\r\n'):
        if line.startswith('# '):
            cur = sections.setdefault(line[2:].strip().lower(), {})
        elif ':' in line and cur is not None:
            k, v = line.split(':', 1)
            cur[k] = v
    return sections


def wait_until(pred, timeout=5.0, interval=0.02):
    """Poll pred() until it is truthy or timeout passes; returns its value."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


# ---------------------------------------------------------------- compare

class Cmd:
    """A compare step: one command, its reply bytes compared."""

    def __init__(self, *args):
        self.args = args

    def run(self, c):
        return c.cmd(*self.args)

    def __repr__(self):
        return ' '.join(map(_show_arg, self.args))


class Raw:
    """A compare step that sends raw bytes and reads `replies` replies."""

    def __init__(self, data, replies=1):
        self.data, self.replies = data, replies

    def run(self, c):
        c.send_raw(self.data)
        return c.read_replies(self.replies)

    def __repr__(self):
        return 'Raw(%r)' % self.data[:120]


class Unordered:
    """A compare step whose reply is an array in unspecified order."""

    def __init__(self, *args):
        self.args = args

    def run(self, c):
        value = c.call(*self.args)
        return sorted(value) if isinstance(value, list) else value

    def __repr__(self):
        return ' '.join(map(_show_arg, self.args)) + ' (unordered)'


class Within:
    """A compare step for time-dependent integer replies (TTL, PTTL): both
    servers must answer an integer in lo..hi."""

    def __init__(self, lo, hi, *args):
        self.lo, self.hi, self.args = lo, hi, args

    def run(self, c):
        value = c.call(*self.args)
        ok = isinstance(value, int) and self.lo <= value <= self.hi
        return 'in %d..%d' % (self.lo, self.hi) if ok else value

    def __repr__(self):
        return ' '.join(map(_show_arg, self.args)) + ' (in %d..%d)' % (self.lo, self.hi)


class Ignore:
    """A compare step run on both servers whose reply is not compared
    (server ids, versions, times)."""

    def __init__(self, *args):
        self.args = args

    def run(self, c):
        c.cmd(*self.args)

    def __repr__(self):
        return ' '.join(map(_show_arg, self.args)) + ' (ignored)'


class Redis8:
    """A compare step where Redis 8.8 (the spec) answers differently from the
    7.0 reference: xkvd must answer `reply`, the bytes redis-server 8.8.0
    gave (recorded by hand); the reference's own reply is not compared."""

    def __init__(self, reply, *args):
        self.reply, self.args = reply, args

    def run(self, c):
        got = c.cmd(*self.args)
        return self.reply if c.kind == 'redis' else got

    def __repr__(self):
        return ' '.join(map(_show_arg, self.args)) + ' (as Redis 8.8)'


def _show_arg(a):
    s = a.decode('latin-1') if isinstance(a, bytes) else str(a)
    return repr(s) if (not s or not s.isprintable() or ' ' in s) else s[:80]


def _show(value, limit=300):
    s = repr(value)
    return s if len(s) <= limit else s[:limit] + '... (%d chars)' % len(s)


SHOW = bool(os.environ.get('XKV_IT_SHOW'))   # print every compared reply


def double8(x):
    """A double as Redis 8.8 replies it (d2string: fpconv's shortest digits,
    integers within 2^62 as such, exponents unpadded)."""
    if x != x:
        return 'nan'
    if x in (float('inf'), float('-inf')):
        return 'inf' if x > 0 else '-inf'
    if x == 0:
        return '-0' if str(x)[0] == '-' else '0'
    if -(2 ** 62) <= x <= 2 ** 62 and x == int(x):
        return str(int(x))
    t = decimal.Decimal(repr(abs(x))).as_tuple()
    digits, k = ''.join(map(str, t.digits)), t.exponent
    while len(digits) > 1 and digits.endswith('0'):
        digits, k = digits[:-1], k + 1
    n, point = len(digits), len(digits) + k
    sign = '-' if x < 0 else ''
    ex = abs(k + n - 1)
    if k >= 0 and ex < n + 7:
        return sign + digits + '0' * k
    if k < 0 and (k > -7 or ex < 4):
        if point <= 0:
            return sign + '0.' + '0' * -point + digits
        return sign + digits[:point] + '.' + digits[point:]
    return '%s%s%se%s%d' % (sign, digits[0], '.' + digits[1:] if n > 1 else '',
                            '-' if k + n - 1 < 0 else '+', ex)


_BULK = re.compile(rb'\$(\d+)\r\n([-+0-9.e]+|inf|-inf|nan)\r\n')
_DOUBLE = re.compile(rb'(^|\n),([^\r\n]+)\r\n')


def doubles_as_redis8(raw):
    """The reply bytes of Redis 7.0 with its doubles ("%.17g") as Redis 8.8
    prints them: RESP3 doubles, and RESP2 bulks whose text is exactly the
    "%.17g" form of a float (a score, a distance). Other bytes untouched."""
    def bulk(m):
        text = m.group(2).decode()
        try:
            x = float(text)
        except ValueError:
            return m.group(0)
        if int(m.group(1)) != len(text) or '%.17g' % x != text:
            return m.group(0)
        new = double8(x).encode()
        return b'$%d\r\n%s\r\n' % (len(new), new)

    def double(m):
        try:
            x = float(m.group(2).decode())
        except ValueError:
            return m.group(0)
        return m.group(1) + b',' + double8(x).encode() + b'\r\n'
    return _DOUBLE.sub(double, _BULK.sub(bulk, raw))


def compare(ref, sut, steps, proto=2, doubles8=False):
    """Run steps on fresh connections to both servers; each reply must be
    byte-identical. Returns the reference's replies. doubles8: the 7.0
    reference's doubles are compared as Redis 8.8 prints them
    (doubles_as_redis8), for steps whose replies hold scores."""
    out = []
    with ref.client(proto) as a, sut.client(proto) as b:
        for n, step in enumerate(steps, 1):
            if isinstance(step, (tuple, list)):
                step = Cmd(*step)
            where = 'step %d (RESP%d): %s' % (n, proto, repr(step)[:300])
            ra, rb = _run_step(step, a, ref, where), _run_step(step, b, sut, where)
            if doubles8 and ref.kind == 'redis' and isinstance(ra, bytes):
                ra = doubles_as_redis8(ra)
            if ra != rb:
                raise AssertionError('reply differs at %s\n  %-8s %s\n  %-8s %s' % (
                    where, ref.label + ':', _show(ra), sut.label + ':', _show(rb)))
            if SHOW:
                print('# %s -> %s' % (where, _show(ra)))
            out.append(ra)
    return out


def _run_step(step, client, srv, where):
    try:
        return step.run(client)
    except (socket.timeout, ConnectionClosed, ConnectionError) as e:
        got = 'no complete reply within %s s' % client.sock.gettimeout() \
            if isinstance(e, socket.timeout) else 'connection lost (%s)' % e
        raise AssertionError('%s\n  %s: %s; partial reply %s' % (
            where, srv.label, got, _show(bytes(client.buf)))) from None


# ---------------------------------------------------------------- framework

TESTS = []             # (module name, function), in definition order


def test(fn):
    TESTS.append((fn.__module__, fn))
    return fn


class Skip(Exception):
    """Raised by a test that cannot run against this build (the reason in
    its message): reported as a TAP SKIP, not a pass."""


def xkv_only(fn):
    """Asserts xkvd-specific behaviour; skipped with --reference-only."""
    fn.xkv_only = True
    return fn


class Env:
    """How to build servers for this run (from run.py's arguments)."""

    def __init__(self, xkvd, engine, reference_only):
        self.xkvd, self.engine, self.reference_only = xkvd, engine, reference_only

    def make(self, role, directives=None):
        if role == 'ref':
            return Server('redis', directives=directives, label='redis').start()
        if self.reference_only:
            return Server('redis', directives=directives, label='redis#2').start()
        return Server('xkvd', binary=self.xkvd, engine=self.engine,
                      directives=directives, label='xkvd').start()


class Ctx:
    """What a test gets: the shared reference/under-test servers and helpers."""

    def __init__(self, env, ref, sut):
        self.env, self.ref, self.sut = env, ref, sut
        self.spawned = []

    @property
    def engine(self):
        return self.env.engine

    @property
    def reference_only(self):
        return self.env.reference_only

    def compare(self, steps, proto=2, ref=None, sut=None, doubles8=False):
        return compare(ref or self.ref, sut or self.sut, steps, proto, doubles8)

    def same(self, fn, what='result'):
        """fn(server) must give equal results on both servers; returns it."""
        a, b = fn(self.ref), fn(self.sut)
        if a != b:
            raise AssertionError('%s differs\n  %-8s %s\n  %-8s %s' % (
                what, self.ref.label + ':', _show(a), self.sut.label + ':', _show(b)))
        return a

    def spawn(self, role, **directives):
        """A private server for this test ('ref' or 'sut'), stopped after it."""
        srv = self.env.make(role, directives)
        self.spawned.append(srv)
        return srv

    def spawn_pair(self, **directives):
        return self.spawn('ref', **directives), self.spawn('sut', **directives)

    def cleanup(self):
        for srv in self.spawned:
            srv.close()
        self.spawned = []
