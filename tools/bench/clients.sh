#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# clients.sh: GETs per second of one Python process (clients/python on
# redis-py) and one Node process (clients/node on ioredis) against the same
# hot keys, over UDP and over TCP, in one run, and prints the table for
# docs/benchmarks.md ("Client libraries over UDP and TCP").
#
# Rows, each one client process (tools/bench/clients_bench.{py,js}) doing GETs
# of KEYS keys of VSIZE bytes in turn for SECONDS after a warm-up:
#   UDP, kernel   the xkv client against xkvd with XDP on the namespace's lo:
#                 the kernel answers (the share it answered is reported)
#   UDP, daemon   the xkv client against a second xkvd with --fastpath no:
#                 the daemon's UDP socket answers
#   TCP           the library's own client (redis.Redis, ioredis) against the
#                 first xkvd
# Python does one GET at a time; Node once with one GET in flight (each
# awaited) and once with CONC in flight. Rounds (-r) alternate the order of
# the rows; each figure is the median over the rounds, and the UDP/TCP ratio
# is given twice: that of the medians, and the median (lowest-highest) of the
# ratios within each round, whose two rows ran seconds apart: on a shared
# machine the steadier of the two.
#
# CPUs (-p split, the default, as tools/bench/fastpath.sh): the client on CPU
# 0; both xkvd (one worker thread each) on CPU 1, and the namespace's packet
# receive work too, through RPS on its loopback, so generic XDP (which
# otherwise runs inside the client's own send) does the server's work on the
# server's CPU, as on a NIC queue. -p none leaves everything to the scheduler.
#
# Everything runs in a network namespace of its own (xkv-clients-PID): nothing
# on the host is touched, and the namespace is removed at the end. Needs root
# (ip netns).
#
# Usage: tools/bench/clients.sh [-t SECONDS] [-r ROUNDS] [-k KEYS] [-v VSIZE]
#                               [-c CONC] [-p split|none] [-o OUTPUT]
set -eu -o pipefail
cd "$(dirname "$0")/../.."

secs=5 rounds=3 keys=1000 vsize=64 conc=16 pin=split output=.output
cmdline="tools/bench/clients.sh${*:+ $*}"
while getopts "t:r:k:v:c:p:o:" opt; do
	case $opt in
	t) secs=$OPTARG ;;
	r) rounds=$OPTARG ;;
	k) keys=$OPTARG ;;
	v) vsize=$OPTARG ;;
	c) conc=$OPTARG ;;
	p) pin=$OPTARG ;;
	o) output=$OPTARG ;;
	*) exit 2 ;;
	esac
done
python=/usr/bin/python3
ns=xkv-clients-$$
bench_cleanup_hook() {
	ip netns del "$ns" 2>/dev/null || true
}
. tools/bench/lib.sh

load=$(cut -d' ' -f1 /proc/loadavg)
ip netns add "$ns"
ip -n "$ns" link set lo up
in_ns() { ip netns exec "$ns" "$@"; }
on_client=() on_server=()
if [ "$pin" = split ]; then
	on_client=(taskset -c 0)
	on_server=(taskset -c 1)
	in_ns sh -c 'echo 2 >/sys/class/net/lo/queues/rx-0/rps_cpus'
	[ "$(in_ns cat /sys/class/net/lo/queues/rx-0/rps_cpus | tr -d 0,)" = 2 ] || {
		echo "clients.sh: could not steer the namespace's lo to CPU 1 (RPS)" >&2
		exit 1
	}
fi

port_k=7379 port_d=7380
for port in $port_k $port_d; do
	fp=yes
	[ $port = $port_d ] && fp=no
	mkdir -p "$tmp/$port"
	# `ip netns exec` and taskset exec xkvd: the PID is xkvd's own.
	ip netns exec "$ns" "${on_server[@]}" "$output/xkvd" --port $port --bind 127.0.0.1 --save '' --dir "$tmp/$port" \
		--threads 1 --fastpath $fp >"$tmp/$port/log" 2>&1 &
	pids+=($!)
done
for port in $port_k $port_d; do
	for _ in $(seq 100); do
		in_ns redis-cli -p $port ping >/dev/null 2>&1 && break
		sleep 0.1
	done
done
grep -q 'XDP attached to lo' "$tmp/$port_k/log" || { cat "$tmp/$port_k/log"; exit 1; }
for port in $port_k $port_d; do
	in_ns $python -c '
import redis, sys
r = redis.Redis(port=int(sys.argv[1]))
n, size = int(sys.argv[2]), int(sys.argv[3])
r.mset({b"key:%d" % i: (b"v%d:" % i).ljust(size, b"x") for i in range(n)})' $port "$keys" "$vsize"
done

# row name -> command (without --port); the port per row below.
declare -A cmd port_of
for via in udp tcp; do
	cmd[py-$via]="$python tools/bench/clients_bench.py --via $via"
	cmd[node1-$via]="node tools/bench/clients_bench.js --via $via --concurrency 1"
	cmd[nodeN-$via]="node tools/bench/clients_bench.js --via $via --concurrency $conc"
done
rows=()
for client in py node1 nodeN; do
	rows+=("$client-udp/$port_k" "$client-udp/$port_d" "$client-tcp/$port_k")
done

for r in $(seq "$rounds"); do
	order=("${rows[@]}")
	if [ $((r % 2)) -eq 0 ]; then
		mapfile -t order < <(printf '%s\n' "${rows[@]}" | tac)
	fi
	for row in "${order[@]}"; do
		name=${row%/*} port=${row#*/}
		out=$(in_ns "${on_client[@]}" ${cmd[$name]} --port "$port" --keys "$keys" --seconds "$secs")
		echo "$r $row $out" >>"$tmp/results"
		echo "# round $r $row: $out" >&2
	done
done

# The medians, and the table.
$python - "$tmp/results" "$port_k" "$port_d" "$conc" "$(machine_line "$load")" "$cmdline" \
	"$keys" "$vsize" "$secs" "$rounds" "$pin" <<'PY'
import json, statistics, sys, time
import redis
LIBVER = {"redis": redis.__version__, "ioredis": json.load(open("clients/node/node_modules/ioredis/package.json"))["version"]}
path, pk, pd, conc, machine, cmdline, keys, vsize, secs, rounds, pin = sys.argv[1:]
per, kshare, by_round = {}, {}, {}
for line in open(path):
    rnd, row, out = line.split(' ', 2)
    out = json.loads(out)
    per.setdefault(row, []).append(out['per_sec'])
    by_round.setdefault(rnd, {})[row] = out['per_sec']
    if 'stats' in out and row.endswith('/' + pk):
        s = out['stats']
        kshare.setdefault(row, []).append(s['kernel'] / max(1, s['udp'] + s['fallbacks']))
med = {row: statistics.median(v) for row, v in per.items()}
print('Run of %s (`%s`; %s keys of %s bytes, %s s per row, median of %s rounds, CPUs %s; %s):' % (
    time.strftime('%Y-%m-%d %H:%M', time.gmtime()), cmdline, keys, vsize, secs, rounds,
    'split (client on CPU 0, servers and RPS on CPU 1)' if pin == 'split' else 'not pinned',
    machine))
print()
print('| client | GETs in flight | UDP, kernel answers | UDP, daemon answers | TCP | kernel UDP / TCP | kernel UDP / TCP per round | answered by the kernel |')
print('|---|---:|---:|---:|---:|---:|---:|---:|')
for client, label, inflight in (('py', 'Python (xkv / redis-py %s)', '1'),
                                ('node1', 'Node (xkv-client / ioredis %s)', '1'),
                                ('nodeN', 'Node (xkv-client / ioredis %s)', conc)):
    rk, rd, rt = ('%s-%s/%s' % (client, via, port) for via, port in
                  (('udp', pk), ('udp', pd), ('tcp', pk)))
    ratios = sorted(r[rk] / r[rt] for r in by_round.values() if rk in r and rt in r)
    share = statistics.median(kshare.get(rk, [0]))
    lib = {'py': 'redis', 'node1': 'ioredis', 'nodeN': 'ioredis'}[client]
    print('| %s | %s | %.0f | %.0f | %.0f | %.2f | %.2f (%.2f-%.2f) | %.1f%% |' % (
        label % LIBVER[lib], inflight, med[rk], med[rd], med[rt], med[rk] / med[rt],
        statistics.median(ratios), ratios[0], ratios[-1], 100 * share))
PY
