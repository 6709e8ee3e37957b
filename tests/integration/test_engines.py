# SPDX-License-Identifier: GPL-2.0-only
"""The I/O engine: `make test` runs this suite once per engine
(--io-engine uring, --io-engine epoll)."""

from harness import info_fields, test, xkv_only


@test
@xkv_only
def info_reports_io_engine(t):
    # xkv-specific INFO field; redis has none, hence xkv_only.
    info = info_fields(t.sut.call('INFO', 'server'))['server']
    assert info.get('io_engine') == t.engine, 'INFO server io_engine: %r, want %r' % (
        info.get('io_engine'), t.engine)


@test
def engine_serves_basic_traffic(t):
    t.compare([('PING',), ('SET', 'k', 'v'), ('GET', 'k'), ('DEL', 'k'), ('GET', 'k')])
