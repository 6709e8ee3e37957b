# SPDX-License-Identifier: GPL-2.0-only
"""MONITOR: the line format (quoting, redaction, database, EXEC contents,
hidden admin commands), commands from clients on every worker, what a monitor
may still send, and a monitor that does not read (closed at the normal class's
output-buffer limit while writers carry on). Scenarios run on both servers;
time stamps and peer ports are masked before comparing."""

import os
import re
import socket
import tempfile

from harness import encode, test, wait_until

STAMP = re.compile(rb'^\+\d+\.\d{6} \[(\d+) ([^\]]*)\] ')


def masked(line, peers):
    """'+<secs>.<usecs> [db ip:port] args' -> '[db peerN] args'."""
    m = STAMP.match(line)
    assert m, line
    peer = peers.setdefault(m.group(2), b'peer%d' % len(peers))
    return b'[%s %s] %s' % (m.group(1), peer, line[m.end():])


def read_lines_until(mon, marker):
    """Monitor lines (without CRLF) until one containing marker."""
    lines = []
    while True:
        line = mon.read_reply()
        assert line.startswith(b'+'), line
        lines.append(line[:-2])
        if marker in line:
            return lines


def start_monitor(srv, proto=2):
    mon = srv.client(proto=proto, timeout=10)
    assert mon.cmd('MONITOR') == b'+OK\r\n'
    return mon


def format_scenario(srv, proto):
    mon = start_monitor(srv, proto)
    with mon, srv.client() as c:
        for cmd in [
                ('SET', b'k\x00\x01\xff"\\\n\r\t\a\b', b'v a'),
                ('AUTH', 'secret'), ('AUTH', 'a', 'b', 'c'), ('AUTH', 'default', 'pw'),
                ('HELLO', '4', 'AUTH', 'a', 'b'),
                ('HELLO', '2', 'AUTH', 'default', 'pw', 'SETNAME'),
                ('HELLO', '2', 'SETNAME', 'n', 'AUTH', 'default', 'pw'),
                ('MULTI',), ('SET', 'a', '1'), ('INCR', 'a'), ('EXEC',),
                ('MULTI',), ('GET', 'a'), ('DISCARD',),
                ('CONFIG', 'GET', 'maxmemory'), ('CLIENT', 'LIST'), ('CLIENT', 'PAUSE', '0'),
                ('CLIENT', 'NO-EVICT', 'off'), ('SLOWLOG', 'LEN'), ('MONITOR',),
                ('NOSUCHCOMMAND', 'x'), ('GET',), ('INCR', 'k\x00\x01\xff"\\\n\r\t\a\b'),
                ('SELECT', '3'), ('PING',), ('ECHO', '\u00e9t\u00e9'), ('CLIENT', 'ID'),
                ('BLPOP', 'nolist', '0.01'), ('RESET',), ('ECHO', 'end')]:
            if cmd == ('MONITOR',):
                # Its MONITOR is a normal client's and gets +OK, but is hidden.
                with srv.client() as other:
                    other.cmd(*cmd)
                continue
            c.cmd(*cmd)
        peers = {}
        lines = [masked(x, peers) for x in read_lines_until(mon, b'"end"')]
        # What a monitor may still send: PING and CLIENT ID yes, keys no.
        own = [mon.cmd('PING'), mon.read_reply()[:1], mon.cmd('GET', 'a'),
               mon.cmd('CLIENT', 'ID')[:1], mon.read_reply()[:1],
               mon.cmd('MONITOR', 'x')]
        c.cmd('FLUSHALL')
        return lines, own


@test
def line_format_quoting_redaction_and_exec(t):
    for proto in (2, 3):
        lines, _ = t.same(lambda srv: format_scenario(srv, proto), 'monitor lines')
        assert lines[0] == (b'[0 peer0] "SET" "k\\x00\\x01\\xff\\"\\\\\\n\\r\\t\\a\\b" "v a"'), \
            lines[0]
        assert b'"AUTH" "(redacted)"' in lines[1], lines[1]
        # EXEC's commands show as they run, before EXEC; admin ones never.
        assert lines.index(b'[0 peer0] "INCR" "a"') + 1 == \
            lines.index(b'[0 peer0] "EXEC"'), lines
        assert not any(b'CONFIG' in x or b'SLOWLOG' in x or b'"LIST"' in x for x in lines)


def workers_scenario(srv):
    """Commands from 12 connections (so xkvd's two workers both have some)
    reach a monitor on one of them, and a second monitor elsewhere."""
    # The RESP3 one first: its HELLO is not a line the other one sees.
    mons = [start_monitor(srv, proto=3), start_monitor(srv)]
    clients = [srv.client() for _ in range(12)]
    try:
        for i, c in enumerate(clients):
            c.send_raw(encode(['SET', 'key%d' % i, 'v%d' % i]) + encode(['GET', 'key%d' % i]))
        for i, c in enumerate(clients):
            v = b'v%d' % i
            assert c.read_replies(2) == b'+OK\r\n$%d\r\n%s\r\n' % (len(v), v)
        clients[0].cmd('ECHO', 'end')
        seen = []
        for m in mons:
            lines = [STAMP.sub(b'', x) for x in read_lines_until(m, b'"end"')]
            seen.append(sorted(lines))
        assert seen[0] == seen[1], seen
        clients[0].cmd('FLUSHALL')
        return seen[0]
    finally:
        for c in clients + mons:
            c.close()


@test
def commands_from_every_worker(t):
    lines = t.same(workers_scenario, 'lines from 12 connections')
    assert len(lines) == 25, lines


def slow_monitor(srv):
    """A monitor that never reads: writers are not held up, and the monitor
    is closed once its pending output passes the normal class's limit."""
    mon = start_monitor(srv)
    value = b'x' * 10000
    with srv.client(timeout=30) as w:
        for batch in range(40):
            w.send_raw(b''.join(encode(['SET', 'k%d' % i, value]) for i in range(50)))
            assert w.read_replies(50) == b'+OK\r\n' * 50
        data, closed = mon.read_until_close(timeout=30)
        listed = w.call('CLIENT', 'LIST')
        w.cmd('FLUSHALL')
    mon.close()
    return closed, b'flags=O' in listed


@test
def monitor_that_does_not_read_is_closed_at_the_limit(t):
    ref, sut = t.spawn_pair(**{'client-output-buffer-limit': 'normal 256kb 0 0'})
    got = (slow_monitor(ref), slow_monitor(sut))
    assert got == ((True, False), (True, False)), got


def reply_off_scenario(srv):
    mon = start_monitor(srv)
    with mon, srv.client() as c:
        mon.send('CLIENT', 'REPLY', 'OFF')
        # No reply to wait for: CLIENT LIST tells when it has run.
        assert wait_until(lambda: b'cmd=client|reply' in c.call('CLIENT', 'LIST'))
        c.cmd('ECHO', 'hidden')
        mon.send('CLIENT', 'REPLY', 'ON')
        first = mon.read_reply()
        c.cmd('ECHO', 'end')
        return [first] + [STAMP.sub(b'', x) for x in read_lines_until(mon, b'"end"')]


@test
def reply_off_mutes_a_monitor(t):
    got = t.same(reply_off_scenario, 'monitor under CLIENT REPLY OFF')
    assert got == [b'+OK\r\n', b'"CLIENT" "REPLY" "ON"', b'"ECHO" "end"'], got


def unix_scenario(srv, path):
    """A command sent over the Unix socket shows as [db unix:<path>]."""
    mon = start_monitor(srv)
    with mon, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as u:
        u.settimeout(10)
        u.connect(path)
        u.sendall(encode(['SET', 'u', '1']))
        assert u.recv(64) == b'+OK\r\n'
        line = mon.read_reply()
        return STAMP.match(line).groups() + (line[STAMP.match(line).end():],)


@test
def unix_socket_clients_show_their_path(t):
    with tempfile.TemporaryDirectory(prefix='xkv-it-mon-') as tmp:
        got = {}
        for role in ('ref', 'sut'):
            path = os.path.join(tmp, role + '.sock')
            srv = t.spawn(role, unixsocket=path, unixsocketperm='700')
            db, peer, rest = unix_scenario(srv, path)
            got[role] = (db, peer.replace(path.encode(), b'PATH'), rest)
        assert got['ref'] == got['sut'] == (b'0', b'unix:PATH', b'"SET" "u" "1"\r\n'), got
