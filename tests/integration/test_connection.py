# SPDX-License-Identifier: GPL-2.0-only
"""Connection commands: PING ECHO QUIT HELLO SELECT AUTH RESET CLIENT."""

from harness import Ignore, Raw, decode, encode, pairs, test, wait_until, xkv_only


@test
def ping_echo(t):
    t.compare([
        ('PING',), ('ping',), ('PING', 'hello'), ('PING', ''), ('PING', 'a', 'b'),
        ('ECHO', 'x'), ('ECHO', b'bin\r\n\x00\xff'), ('ECHO', ''),
        ('ECHO',), ('ECHO', 'a', 'b'),
    ])


@test
def quit_closes(t):
    def quit(srv):
        with srv.client() as c:
            c.send_raw(encode(['QUIT']))
            return c.read_until_close()
    assert t.same(quit, 'QUIT') == (b'+OK\r\n', True)
    # QUIT ignores extra arguments in Redis (arity -1).
    t.compare([('QUIT', 'x')])


def hello_shape(raw):
    """HELLO's reply minus the fields that legitimately differ
    (server, version, id): type byte, field names, and the fixed fields."""
    fields = pairs(decode(raw))
    return raw[:1], list(fields), {k: fields[k] for k in (b'proto', b'mode', b'role', b'modules')}


@test
def hello_reply(t):
    def run(srv):
        with srv.client() as c:
            return [hello_shape(c.cmd(*a)) for a in
                    [('HELLO',), ('HELLO', 3), ('HELLO',), ('HELLO', 2), ('hello', '3')]]
    shapes = t.same(run, 'HELLO reply shape')
    assert shapes[0][0] == b'*' and shapes[1][0] == b'%', shapes
    assert shapes[0][1] == [b'server', b'version', b'proto', b'id', b'mode', b'role', b'modules']
    assert shapes[1][2] == {b'proto': 3, b'mode': b'standalone', b'role': b'master', b'modules': []}
    assert shapes[2][2][b'proto'] == 3 and shapes[3][2][b'proto'] == 2


@test
def hello_errors(t):
    t.compare([
        ('HELLO', 4), ('HELLO', 0), ('HELLO', 1), ('HELLO', -1), ('HELLO', 'abc'),
        ('HELLO', '3.0'), ('HELLO', 3, 'AUTH'), ('HELLO', 3, 'AUTH', 'default'),
        ('HELLO', 3, 'FOO'), ('HELLO', 3, 'SETNAME'), ('HELLO', 3, 'SETNAME', 'a b'),
        ('HELLO', 3, 'AUTH', 'bob', 'pw'),
        # A failed HELLO leaves the protocol at RESP2 ($-1, not _).
        ('GET', 'nokey'), ('CLIENT', 'GETNAME'),
    ])


@test
def hello_auth_setname(t):
    # Without requirepass the default user is nopass: any password works.
    t.compare([
        Ignore('HELLO', 3, 'AUTH', 'default', 'anything', 'SETNAME', 'conn1'),
        ('CLIENT', 'GETNAME'), ('GET', 'nokey'),
        Ignore('HELLO', 2, 'SETNAME', 'conn2'), ('CLIENT', 'GETNAME'), ('GET', 'nokey'),
    ])


@test
def select_db(t):
    t.compare([
        ('SELECT', 1), ('SET', 'k', 'db1'), ('SELECT', 15), ('GET', 'k'),
        ('SET', 'k', 'db15'), ('SELECT', 1), ('GET', 'k'),
        ('SELECT', 16), ('SELECT', -1), ('SELECT', 'abc'), ('SELECT', '1.5'),
        ('SELECT', ''), ('SELECT', '2147483648'), ('SELECT', '99999999999999999999'),
        ('GET', 'k'),                       # errors keep the current db
        ('SELECT',), ('SELECT', 0, 1), ('SELECT', '0'), ('GET', 'k'), ('DBSIZE',),
    ])


HELLO_NOAUTH = (b'-NOAUTH HELLO must be called with the client already authenticated, '
                b'otherwise the HELLO %sAUTH <user> <pass> option can be used to authenticate '
                b'the client and select the RESP protocol version at the same time\r\n')


@test
def auth_requirepass(t):
    ref, sut = t.spawn_pair(requirepass='s3cret')
    t.compare([
        ('GET', 'k'), ('PING',), ('SET', 'k', 'v'), ('CLIENT', 'ID'), ('SELECT', 1),
        Ignore('HELLO', 3), ('AUTH', 'wrong'), ('AUTH', 'default', 'wrong'), ('AUTH', 'bob', 's3cret'),
        ('AUTH', 'a', 'b', 'c'), ('AUTH',), ('HELLO', 2, 'AUTH', 'default', 'wrong'),
        ('GET', 'k'),
        ('AUTH', 's3cret'), ('SET', 'k', 'v'), ('GET', 'k'), ('AUTH', 'wrong'),
        ('GET', 'k'),                       # a failed AUTH keeps the session authenticated
        ('RESET',), ('GET', 'k'),           # RESET de-authenticates
        ('AUTH', 'default', 's3cret'), ('GET', 'k'),
    ], ref=ref, sut=sut)
    t.compare([Ignore('HELLO', 3, 'AUTH', 'default', 's3cret'), ('GET', 'k'), ('GET', 'nokey')],
              ref=ref, sut=sut)
    # Redis 7.2 added "<proto>" to this message; 7.0.15 lacks it. Accept both.
    with sut.client() as c:
        assert c.cmd('HELLO', 3) in [HELLO_NOAUTH % b'', HELLO_NOAUTH % b'<proto> ']
    t.compare([Raw(b'*1\r\n$4\r\nQUIT\r\n')], ref=ref, sut=sut)   # QUIT needs no AUTH

    # Before AUTH, Redis caps multibulk counts at 10 and bulk lengths at
    # 16384 (CVE-2021-32675), replies with an error and closes.
    for form in [b'*11\r\n', b'*1\r\n$16385\r\n', b'*10\r\n', b'*1\r\n$16384\r\n']:
        def send(srv):
            with srv.client() as c:
                c.send_raw(form)
                return c.read_until_close(timeout=0.3)
        t.same(send, 'unauthenticated %r' % form)


@test
def auth_without_password(t):
    t.compare([('AUTH', 'x'), ('AUTH', 'default', 'x'), ('AUTH', 'bob', 'x'),
               ('AUTH', 'a', 'b', 'c'), ('AUTH',), ('GET', 'k')])


@test
def reset_connection(t):
    t.compare([
        ('SELECT', 3), ('SET', 'k', 'v'), ('CLIENT', 'SETNAME', 'me'), Ignore('HELLO', 3),
        ('GET', 'nokey'), ('RESET',), ('GET', 'nokey'), ('CLIENT', 'GETNAME'),
        ('GET', 'k'), ('SELECT', 3), ('GET', 'k'), ('RESET', 'x'), ('reset',),
    ])


@test
def client_id_and_name(t):
    with t.sut.client() as a:
        ida = a.call('CLIENT', 'ID')
        with t.sut.client() as b:        # connected after a was accepted: a larger id
            idb = b.call('CLIENT', 'ID')
        assert isinstance(ida, int) and ida > 0 and idb > ida, (ida, idb)
        assert a.call('CLIENT', 'ID') == ida
    t.compare([
        ('CLIENT', 'GETNAME'), ('CLIENT', 'SETNAME', 'worker-1'), ('CLIENT', 'GETNAME'),
        ('CLIENT', 'SETNAME', 'a b'), ('CLIENT', 'SETNAME', 'a\nb'), ('CLIENT', 'SETNAME', 'a\x01'),
        ('CLIENT', 'SETNAME', 'caf\xe9'), ('CLIENT', 'GETNAME'),
        ('CLIENT', 'SETNAME', ''), ('CLIENT', 'GETNAME'),
        ('CLIENT', 'SETNAME'), ('CLIENT', 'SETNAME', 'x', 'y'), ('CLIENT', 'GETNAME', 'x'),
        ('CLIENT', 'ID', 'x'), ('CLIENT', 'INFO', 'x'), ('CLIENT',), ('CLIENT', 'NOSUCH'),
        ('client', 'getname'),
    ])


def client_fields(line):
    return dict(f.split('=', 1) for f in line.decode().split(' '))


REQUIRED_FIELDS = ['id', 'addr', 'laddr', 'fd', 'name', 'age', 'idle', 'flags', 'db',
                   'cmd', 'user', 'resp']


@test
def client_info_and_list(t):
    with t.sut.client() as a, t.sut.client() as b:
        a.call('CLIENT', 'SETNAME', 'alpha')
        a.call('SELECT', 2)
        ida, idb = a.call('CLIENT', 'ID'), b.call('CLIENT', 'ID')
        info = a.call('CLIENT', 'INFO')
        assert info.endswith(b'\n') and info.count(b'\n') == 1, info
        f = client_fields(info[:-1])
        missing = [k for k in REQUIRED_FIELDS if k not in f]
        assert not missing, 'CLIENT INFO lacks %s: %r' % (missing, info)
        local = '%s:%d' % a.sock.getsockname()
        assert (f['id'], f['addr'], f['name'], f['db'], f['cmd'], f['resp']) == \
            (str(ida), local, 'alpha', '2', 'client|info', '2'), f

        listing = b.call('CLIENT', 'LIST')
        lines = [client_fields(x) for x in listing.split(b'\n') if x]
        ids = {x['id'] for x in lines}
        assert {str(ida), str(idb)} <= ids, listing
        assert listing.endswith(b'\n'), listing
        one = b.call('CLIENT', 'LIST', 'ID', ida)
        assert [client_fields(x)['name'] for x in one.split(b'\n') if x] == ['alpha'], one
        two = b.call('CLIENT', 'LIST', 'ID', ida, idb)
        assert len([x for x in two.split(b'\n') if x]) == 2, two
    t.compare([
        ('CLIENT', 'LIST', 'ID', 999999999), ('CLIENT', 'LIST', 'ID', 'abc'),
        ('CLIENT', 'LIST', 'TYPE', 'foo'), ('CLIENT', 'LIST', 'foo'), ('CLIENT', 'LIST', 'ID'),
    ])


@test
def client_kill(t):
    with t.sut.client() as killer:
        victim = t.sut.client()
        vid = victim.call('CLIENT', 'ID')
        assert killer.cmd('CLIENT', 'KILL', 'ID', vid) == b':1\r\n'
        assert victim.read_until_close() == (b'', True), 'KILL ID did not close the victim'
        assert killer.cmd('CLIENT', 'KILL', 'ID', vid) == b':0\r\n'
        assert wait_until(lambda: b'\nid=%d ' % vid not in b'\n' + killer.call('CLIENT', 'LIST'))

        victim = t.sut.client()
        assert victim.cmd('PING') == b'+PONG\r\n'     # the server has accepted it
        addr = '%s:%d' % victim.sock.getsockname()
        assert killer.cmd('CLIENT', 'KILL', 'ADDR', addr) == b':1\r\n'
        assert victim.read_until_close() == (b'', True), 'KILL ADDR did not close the victim'

        victim = t.sut.client()
        assert victim.cmd('PING') == b'+PONG\r\n'
        addr = '%s:%d' % victim.sock.getsockname()
        assert killer.cmd('CLIENT', 'KILL', addr) == b'+OK\r\n'   # old form
        assert victim.read_until_close() == (b'', True), 'KILL addr did not close the victim'
        assert killer.cmd('PING') == b'+PONG\r\n'
    t.compare([
        ('CLIENT', 'KILL', 'ID', 'abc'), ('CLIENT', 'KILL', 'ID', 0), ('CLIENT', 'KILL', 'ID', -1),
        ('CLIENT', 'KILL', 'ID', 999999999), ('CLIENT', 'KILL', 'ADDR', '1.2.3.4:5'),
        ('CLIENT', 'KILL', '1.2.3.4:5'), ('CLIENT', 'KILL', 'foo', 'bar'), ('CLIENT', 'KILL'),
        ('CLIENT', 'KILL', 'ID'),
    ])


@test
@xkv_only
def client_setinfo(t):
    # CLIENT SETINFO is new in Redis 7.2; the 7.0.15 reference answers
    # "unknown subcommand", so assert the 7.2 behaviour instead of comparing.
    with t.sut.client() as c:
        assert c.cmd('CLIENT', 'SETINFO', 'lib-name', 'mylib') == b'+OK\r\n'
        assert c.cmd('CLIENT', 'SETINFO', 'lib-ver', '1.2.3') == b'+OK\r\n'
        assert c.cmd('CLIENT', 'SETINFO', 'lib-name', 'a b') == \
            b'-ERR lib-name cannot contain spaces, newlines or special characters.\r\n'
        assert c.cmd('CLIENT', 'SETINFO', 'lib-ver', '1\n') == \
            b'-ERR lib-ver cannot contain spaces, newlines or special characters.\r\n'
        assert c.cmd('CLIENT', 'SETINFO', 'foo', 'bar') == b"-ERR Unrecognized option 'foo'\r\n"
        assert c.cmd('CLIENT', 'SETINFO', 'lib-name') == \
            b"-ERR wrong number of arguments for 'client|setinfo' command\r\n"
        f = client_fields(c.call('CLIENT', 'INFO').rstrip(b'\n'))
        assert (f.get('lib-name'), f.get('lib-ver')) == ('mylib', '1.2.3'), f
