# SPDX-License-Identifier: GPL-2.0-only
"""Prometheus's redis_exporter (Debian's prometheus-redis-exporter) scrapes
xkvd as it scrapes redis-server: no scrape error, and the metrics dashboards
and alerts are built on (role, replicas, persistence) are there with the
values INFO gives. The exporter comes from `make deps`: missing is a failure."""

import os
import shutil
import subprocess
import tempfile
import urllib.request

from harness import free_port, test, wait_until

EXPORTER = '/usr/bin/prometheus-redis-exporter'

# Metric names (without labels) that must be exported, as they are for redis.
REQUIRED = ('redis_up', 'redis_instance_info', 'redis_connected_slaves',
            'redis_master_repl_offset', 'redis_rdb_changes_since_last_save',
            'redis_rdb_last_save_timestamp_seconds', 'redis_aof_enabled',
            'redis_connected_clients', 'redis_memory_used_bytes',
            'redis_commands_processed_total', 'redis_db_keys',
            'redis_commands_total', 'redis_keyspace_hits_total')


def scrape(srv):
    """Runs the exporter against srv once: (metrics by name, its log)."""
    assert os.access(EXPORTER, os.X_OK), 'prometheus-redis-exporter is missing (make deps)'
    port = free_port()
    log = tempfile.TemporaryFile()
    p = subprocess.Popen([EXPORTER, '-redis.addr', 'redis://127.0.0.1:%d' % srv.port,
                          '-web.listen-address', '127.0.0.1:%d' % port,
                          '-include-config-metrics', '-export-client-list'],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        body = []

        def fetch():
            try:
                with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port,
                                            timeout=5) as r:
                    body.append(r.read().decode())
                return True
            except OSError:
                return False
        assert wait_until(fetch, timeout=15), 'the exporter never answered'
    finally:
        p.terminate()
        p.wait(timeout=10)
    log.seek(0)
    metrics = {}
    for line in body[0].splitlines():
        if line and not line.startswith('#'):
            name_labels, value = line.rsplit(' ', 1)
            metrics.setdefault(name_labels.split('{')[0], []).append((name_labels, float(value)))
    return metrics, log.read().decode(errors='replace')


@test
def exporter_scrapes_role_and_persistence(t):
    for srv in (t.ref, t.sut):
        with srv.client() as c:
            c.call('FLUSHALL')
            c.call('SET', 'k1', 'v')
            c.call('SET', 'k2', 'v')
    metrics, log = scrape(t.sut)
    assert 'level=error' not in log, log
    missing = [m for m in REQUIRED if m not in metrics]
    assert not missing, 'not exported: %s' % missing
    assert metrics['redis_up'][0][1] == 1
    assert metrics['redis_exporter_last_scrape_error'][0][1] == 0, \
        metrics['redis_exporter_last_scrape_error']
    info = metrics['redis_instance_info'][0][0]
    assert 'role="master"' in info and 'redis_mode="standalone"' in info, info
    assert metrics['redis_connected_slaves'][0][1] == 0
    assert metrics['redis_aof_enabled'][0][1] == 0
    db0 = [v for labels, v in metrics['redis_db_keys'] if 'db="db0"' in labels]
    assert db0 == [2], metrics['redis_db_keys']
    with t.sut.client() as c:
        assert metrics['redis_rdb_changes_since_last_save'][0][1] == \
            int(c.call('INFO', 'persistence').split(b'rdb_changes_since_last_save:')[1]
                .split(b'\r\n')[0])
    # Whatever redis-server exports from INFO, xkvd exports too (config
    # metrics and the per-client ones aside: those depend on the settings).
    ref, _ = scrape(t.ref)
    gone = sorted(m for m in ref if m not in metrics and not m.startswith(
        ('redis_config_', 'redis_connected_client_details', 'redis_exporter_', 'go_',
         'process_', 'promhttp_')))
    assert not gone, 'redis-server exports these, xkvd does not: %s' % gone
