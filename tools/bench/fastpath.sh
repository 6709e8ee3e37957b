#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# fastpath.sh: measures the kernel fast path against the daemon, Debian's
# redis-server and a no-lookup XDP ceiling, in one run, side by side, and
# writes the table into docs/benchmarks.md ("Kernel fast path").
#
# For each value size (64 and 256 bytes), with the same client load (xkv-bench,
# THREADS x CONNS connections, pipeline 1, closed loop, GET on KEYS keys, after
# a prefill and a warm-up):
#   kernel   UDP GET hits answered by xdp_get_fastpath (xkvd, generic XDP on lo)
#   daemon   the same UDP GETs, answered by xkvd with the program detached
#   redis    GET over TCP to redis-server --save '' --appendonly no
#   ceiling  UDP requests answered by tools/bench/xdp_ceiling.bpf.c, which
#            does the packet work of a hit without parsing or lookup
# and the ratios the project's targets are about: kernel/redis req/s (>= 3),
# redis p50 / kernel p50 (>= 3), kernel/ceiling req/s (>= 0.8).
#
# CPUs (-p split, the default, on a machine with 2 or more): the client runs
# on CPU 0 and the server side on CPU 1: redis-server and xkvd (one worker
# thread, as redis-server has one) under taskset, and the namespace's packet
# receive work through RPS on its loopback. Generic XDP runs where a packet is
# received, so with RPS the XDP program (the kernel row's server, and the
# ceiling's) runs on CPU 1 too, like a server's NIC queue, instead of inside
# the client's own sendmmsg() on CPU 0. Every row thus has the same split: all
# the client's work on one CPU, all the server's (the TCP stack's receive
# side included) on the other. -p none leaves everything to the scheduler.
# With split, each row also reports the server CPU's busy time per request
# (/proc/stat of CPU 1), which says what a request costs the server even
# when the client's CPU is what limits the rate.
#
# Rounds (-r) alternate the order of the rows (and of the value sizes), so a
# slow spell on a shared machine does not always hit the same row; each
# figure is the median over the rounds, and the ratios are those of the
# medians, with the range of the per-round ratios beside them.
#
# Everything runs in a network namespace of its own (xkv-bench-PID), on its
# own loopback: nothing on the host is touched. The namespace is removed at
# the end and every process is stopped by its PID. Needs root (ip netns).
#
# Usage: tools/bench/fastpath.sh [-t SECONDS] [-o OUTPUT] [-T THREADS] [-c CONNS]
#                                [-k KEYS] [-w WARMUP] [-r ROUNDS] [-p split|none]
#                                [-u PAD] [-d DOC | -n] [-a] [-s]
#   -t  seconds per measured row (10)       -o  build output directory (.output)
#   -T  client threads (2)                  -c  connections per thread (8)
#   -k  keys (1000, all fit the cache)      -w  seconds of warm-up per row (2)
#   -r  rounds of all the rows (1); with more, the table gives each figure's
#       median over the rounds
#   -p  CPU placement: split (client CPU 0, server CPU 1) or none (split)
#   -u  UDP payload a request is padded to: fit (the default: just room for
#       the row's value, as a client that knows its values pads) or a number
#       of bytes (1200: room for XKV_MAX_VALUE, as a client that knows nothing)
#   -d  the markdown file (docs/benchmarks.md)
#   -n  do not write the markdown file      -a  add this run to the section
#   -s  with kernel.bpf_stats_enabled: the XDP program's own time per run
#       (kernel and ceiling rows; the stats themselves slow every run a little)
#                                               instead of replacing it
set -eu -o pipefail
cd "$(dirname "$0")/../.."

secs=10 output=.output threads=2 conns=8 keys=1000 warm=2 rounds=1 pin=split pad=fit
doc=docs/benchmarks.md write_doc=1 append=0 prog_stats=0
cmdline="tools/bench/fastpath.sh${*:+ $*}"
while getopts "t:o:T:c:k:w:r:p:u:d:nas" opt; do
	case $opt in
	t) secs=$OPTARG ;;
	o) output=$OPTARG ;;
	T) threads=$OPTARG ;;
	c) conns=$OPTARG ;;
	k) keys=$OPTARG ;;
	w) warm=$OPTARG ;;
	r) rounds=$OPTARG ;;
	p) pin=$OPTARG ;;
	u) pad=$OPTARG ;;
	d) doc=$OPTARG ;;
	n) write_doc=0 ;;
	a) append=1 ;;
	s) prog_stats=1 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || { echo "fastpath.sh: unexpected argument '$1'" >&2; exit 2; }
case $pin in
split | none) ;;
*) echo "fastpath.sh: -p split or none, not '$pin'" >&2; exit 2 ;;
esac
case $pad in
fit | [0-9]*) ;;
*) echo "fastpath.sh: -u fit or a number of bytes, not '$pad'" >&2; exit 2 ;;
esac
if [ "$pin" = split ] && [ "$(nproc)" -lt 2 ]; then
	echo "fastpath.sh: -p split needs 2 CPUs; using -p none" >&2
	pin=none
fi

python=${PYTHON:-/usr/bin/python3}
xkvd=$output/xkvd bench=$output/xkv-bench ceiling=$output/tools/bench/xdp_ceiling.bpf.o
for f in "$xkvd" "$bench"; do
	[ -x "$f" ] || { echo "fastpath.sh: no $f (make OUTPUT=$output all)" >&2; exit 1; }
done
[ -f "$ceiling" ] || {
	echo "fastpath.sh: no $ceiling (make OUTPUT=$output $ceiling)" >&2
	exit 1
}
for t in ip redis-server redis-cli taskset "$python"; do
	command -v "$t" >/dev/null || { echo "fastpath.sh: $t is missing (make deps)" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "fastpath.sh: needs root for ip netns" >&2; exit 1; }

ns=xkv-bench-$$
port=6379
# After the servers are stopped: the namespace goes too, and bpf_stats is
# put back as it was.
bpf_stats_was=
bench_cleanup_hook() {
	ip netns del "$ns" 2>/dev/null || true
	[ -z "$bpf_stats_was" ] || sysctl -qw kernel.bpf_stats_enabled="$bpf_stats_was"
}
. tools/bench/lib.sh

ip netns add "$ns"
if [ "$prog_stats" = 1 ]; then
	bpf_stats_was=$(sysctl -n kernel.bpf_stats_enabled)
	sysctl -qw kernel.bpf_stats_enabled=1
fi
ip -n "$ns" link set lo up
nsx() { ip netns exec "$ns" "$@"; }

# What runs each side, per -p and -N: a prefix for the commands.
client=() server=() xkvd_threads=()
if [ "$pin" = split ]; then
	client=(taskset -c 0)
	server=(taskset -c 1)
	# As many worker threads as redis-server has: one, on the server's CPU.
	xkvd_threads=(--threads 1)
	# RPS: the namespace's loopback receives on CPU 1, where generic XDP then runs.
	nsx sh -c 'echo 2 >/sys/class/net/lo/queues/rx-0/rps_cpus'
	[ "$(nsx cat /sys/class/net/lo/queues/rx-0/rps_cpus | tr -d 0,)" = 2 ] || {
		echo "fastpath.sh: could not steer the namespace's lo to CPU 1 (RPS)" >&2
		exit 1
	}
fi

# start NAME COMMAND...: runs a server in the namespace, waits for PING on $port.
start() {
	local name=$1
	shift
	if nsx redis-cli -p "$port" ping >/dev/null 2>&1; then
		echo "fastpath.sh: something still answers on port $port" >&2
		exit 1
	fi
	# Not through nsx: $! must be the server itself (ip netns exec and
	# taskset exec it).
	ip netns exec "$ns" "${server[@]}" "$@" >"$tmp/$name.out" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do
		nsx redis-cli -p "$port" ping >/dev/null 2>&1 && return 0
		kill -0 "${pids[-1]}" 2>/dev/null || break
		sleep 0.05
	done
	echo "fastpath.sh: $name did not start:" >&2
	cat "$tmp/$name.out" "$tmp/$name.log" >&2 2>/dev/null || true
	exit 1
}

# stop_last: stops the server started last.
stop_last() {
	stop_pid "${pids[-1]}"
	unset 'pids[-1]'
}

# pad_for SIZE: the UDP payload a request is padded to for SIZE-byte values.
# With -u fit, the header and the reply "$SIZE\r\n<value>\r\n": the reply is
# never larger than the request, so this is the least that lets it through.
pad_for() {
	if [ "$pad" = fit ]; then
		echo $((24 + ${#1} + 3 + $1 + 2))
	else
		echo "$pad"
	fi
}

# bench ARGS...: xkv-bench in the namespace, on the client's CPU.
bench() {
	nsx "${client[@]}" "$bench" "$@"
}

# server_ticks: with -p split, the server CPU's busy time so far (user,
# system, interrupts and softirqs, in clock ticks); else 0.
server_ticks() {
	[ "$pin" = split ] || { echo 0; return; }
	awk '$1 == "cpu1" { print $2 + $3 + $4 + $7 + $8 }' /proc/stat
}

# prog_time: "run_time_ns run_cnt" of the XDP program on the namespace's lo
# (with -s), or "0 0".
prog_time() {
	local id
	id=$(ip -n "$ns" -d link show dev lo | sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p')
	if [ "$prog_stats" = 1 ] && [ -n "$id" ]; then
		bpftool prog show id "$id" | sed -n 's/.*run_time_ns \([0-9]*\) run_cnt \([0-9]*\).*/\1 \2/p'
	else
		echo 0 0
	fi
}

# run ROW SIZE TRANSPORT: warm-up, then the measured step; appends
# "row size req/s p50 p99 kernel% failures round server-ticks prog-ns prog-runs"
# to $tmp/results.
run() {
	local row=$1 size=$2 transport=$3 out ticks prog0 prog1
	local load=(-p "$port" -t "$threads" -c "$conns" -P 1 -k "$keys" -d "$size" --command get
		--transport "$transport")
	[ "$transport" = tcp ] || load+=(--udp-pad "$(pad_for "$size")")
	bench "${load[@]}" -T "$warm" --json >"$tmp/warm.json" ||
		echo "  (warm-up of $row reported failures)" >&2
	out=$tmp/$row-$size.json
	ticks=$(server_ticks)
	prog0=$(prog_time)
	bench "${load[@]}" -T "$secs" --json >"$out" ||
		echo "  ($row reported failures: see the failures column)" >&2
	ticks=$(($(server_ticks) - ticks))
	prog1=$(prog_time)
	"$python" - "$row" "$size" "$out" "$round" "$ticks" $prog0 $prog1 >>"$tmp/results" <<'EOF'
import json, sys
row, size, path, rnd, ticks, ns0, n0, ns1, n1 = sys.argv[1:]
d = json.load(open(path))
s = d['steps'][0]
lat = s['latency_us']
print(row, size, '%.0f' % s['achieved'], '%.1f' % lat['p50'], '%.1f' % lat['p99'],
      '%.1f' % s.get('kernel_answered_pct', -1), s['errors'] + s['lost'] + s['conn_errors'], rnd,
      ticks, int(ns1) - int(ns0), int(n1) - int(n0))
EOF
	tail -n 1 "$tmp/results" |
		awk '{ printf "  %-8s %4s B  %9s req/s  p50 %8s us  p99 %8s us\n", $1, $2, $3, $4, $5 }'
}

xkvd_args=(--port "$port" --bind 127.0.0.1 --save '' --dir "$tmp" --logfile "$tmp/xkvd.log"
	--fastpath yes --fastpath-interfaces lo --fastpath-admit-threshold 1 "${xkvd_threads[@]}")

# fastpath_cmd attach|detach: asks xkvd to attach or detach its program.
fastpath_cmd() {
	[ "$(nsx redis-cli -p "$port" fastpath "$1")" = OK ] || {
		echo "fastpath.sh: FASTPATH $1 failed" >&2
		exit 1
	}
}

# xkvd_rows SIZE FIRST: the kernel and daemon rows on one xkvd; FIRST
# (kernel or daemon) says which goes first.
xkvd_rows() {
	local size=$1 first=$2
	start xkvd "$xkvd" "${xkvd_args[@]}"
	grep -q 'XDP attached to lo' "$tmp/xkvd.log" || {
		echo "fastpath.sh: xkvd did not attach its XDP program:" >&2
		cat "$tmp/xkvd.log" >&2
		exit 1
	}
	# Every key is admitted by the prefill's GETs (threshold 1).
	bench -p "$port" -t "$threads" -c "$conns" -k "$keys" -d "$size" --prefill \
		--command get --transport udp --udp-pad "$(pad_for "$size")" --key-pattern sequential \
		-n "$((2 * keys))" \
		--json >"$tmp/prefill.json" || echo "  (prefill of xkvd reported failures)" >&2
	if [ "$first" = kernel ]; then
		run kernel "$size" udp
		fastpath_cmd detach
		run daemon "$size" udp
	else
		fastpath_cmd detach
		run daemon "$size" udp
		fastpath_cmd attach
		run kernel "$size" udp
	fi
	stop_last
	rm -f "$tmp/xkvd.log"
}

# redis_row SIZE: GET over TCP to redis-server.
redis_row() {
	local size=$1
	start redis redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
		--dir "$tmp" --logfile "$tmp/redis.log" --daemonize no
	bench -p "$port" -t "$threads" -c "$conns" -k "$keys" -d "$size" --prefill \
		--command get --key-pattern sequential -n "$keys" --json >"$tmp/prefill.json" ||
		echo "  (prefill of redis-server reported failures)" >&2
	run redis "$size" tcp
	stop_last
}

# ceiling_row SIZE: no server at all, the program answers every request.
ceiling_row() {
	local size=$1
	ip -n "$ns" link set dev lo xdpgeneric obj "$ceiling" sec xdp
	run ceiling "$size" udp
	ip -n "$ns" link set dev lo xdpgeneric off
}

load0=$(cut -d' ' -f1 /proc/loadavg)
echo "fastpath.sh: namespace $ns, $threads threads x $conns connections, pipeline 1," \
	"$keys keys, ${secs} s per row after ${warm} s of warm-up, $rounds round(s)," \
	"CPUs: $pin${client[*]:+ (client: ${client[*]}; server: ${server[*]})}"
# Odd rounds go kernel, daemon, redis, ceiling with 64 B first; even rounds
# the other way round.
for round in $(seq "$rounds"); do
	if [ $((round % 2)) -eq 1 ]; then
		for size in 64 256; do
			xkvd_rows "$size" kernel
			redis_row "$size"
			ceiling_row "$size"
		done
	else
		for size in 256 64; do
			ceiling_row "$size"
			redis_row "$size"
			xkvd_rows "$size" daemon
		done
	fi
done

machine=$(machine_line "$load0")
versions="xkvd $("$xkvd" --version | sed 's/^xkvd v=\([^ ]*\).*/\1/')"
versions="$versions, redis-server $(redis-server --version | sed 's/.* v=\([^ ]*\).*/\1/')"
"$python" - "$tmp/results" "$doc" "$write_doc" "$append" "$cmdline" "$machine" "$versions" \
	"$threads" "$conns" "$keys" "$secs" "$warm" "$rounds" "$pin" "$pad" "$(getconf CLK_TCK)" \
	"$prog_stats" <<'EOF'
import datetime, os, statistics, sys, textwrap
(results, doc, write_doc, append, cmdline, machine, versions,
 threads, conns, keys, secs, warm, rounds, pin, pad, hz, prog_stats) = sys.argv[1:]
runs = {}
by_round = {}
for line in open(results):
    row, size, rps, p50, p99, kpct, fail, rnd, ticks, prog_ns, prog_runs = line.split()
    r = dict(rps=float(rps), p50=float(p50), p99=float(p99), kpct=float(kpct), fail=int(fail))
    # Server CPU per request (split only): busy ticks of CPU 1 over the step's requests.
    r['srv'] = (int(ticks) / float(hz) * 1e6 / (r['rps'] * float(secs))
                if pin == 'split' and r['rps'] > 0 else -1)
    # The XDP program's time per run (-s): every run, the replies' pass included.
    r['prog'] = int(prog_ns) / int(prog_runs) if int(prog_runs) > 0 else -1
    runs.setdefault((row, int(size)), []).append(r)
    by_round.setdefault((int(rnd), int(size)), {})[row] = r
# One figure per row: the median over the rounds; failures are summed.
rows = {}
for k, rs in runs.items():
    rows[k] = {m: statistics.median(r[m] for r in rs)
               for m in ('rps', 'p50', 'p99', 'kpct', 'srv', 'prog')}
    rows[k]['fail'] = sum(r['fail'] for r in rs)
sizes = sorted({s for _, s in rows})
names = {
    'kernel': 'UDP GET, XDP hit (kernel)',
    'daemon': 'UDP GET, daemon (XDP detached)',
    'redis': 'TCP GET, redis-server',
    'ceiling': 'UDP, no-lookup XDP (ceiling)',
}
# (name, how, target): each ratio and the least it must be.
targets = [
    ('kernel/redis req/s', lambda r: r['kernel']['rps'] / r['redis']['rps'], 3.0),
    ('redis p50 / kernel p50', lambda r: r['redis']['p50'] / r['kernel']['p50'], 3.0),
    ('kernel/ceiling req/s', lambda r: r['kernel']['rps'] / r['ceiling']['rps'], 0.8),
]

def ratios(size):
    r = {row: rows[(row, size)] for row in names}
    return [(name, f(r), least) for name, f, least in targets]

def spread(size):
    """Each target's lowest and highest ratio in a single round."""
    per = [[f(r) for _, f, _ in targets] for (_, s), r in sorted(by_round.items()) if s == size]
    return [(min(x), max(x)) for x in zip(*per)]

def verdict(x, least, lo_hi):
    if lo_hi[0] >= least:
        return 'holds in every round'
    if x >= least:
        return 'holds (median), not in every round'
    return 'MISSES by %.0f%%' % (100 * (1 - x / least))

def kernel_col(v):
    return '-' if v['kpct'] < 0 else '%.1f%%' % v['kpct']

def srv_col(v):
    return '-' if v['srv'] < 0 else '%.2f' % v['srv']

def prog_col(v):
    return '-' if v['prog'] < 0 else '%.0f' % v['prog']

# The columns after the failures: (terminal heading, markdown heading, cell).
extra = [('srv us', 'server CPU µs/req', srv_col)]
if prog_stats == '1':
    extra.append(('xdp ns', 'XDP ns/run', prog_col))

def srv_ratio(size):
    kernel = rows[('kernel', size)]['srv']
    return rows[('redis', size)]['srv'] / kernel if kernel > 0 else float('nan')

# The terminal table.
print()
print('%-6s %-32s %10s %9s %9s %8s %8s' % ('value', 'path', 'req/s', 'p50 us', 'p99 us',
                                            'kernel', 'failures') +
      ''.join(' %8s' % t for t, _, _ in extra))
for size in sizes:
    for row in names:
        v = rows[(row, size)]
        print('%-6s %-32s %10.0f %9.1f %9.1f %8s %8d' % (
            '%d B' % size, names[row], v['rps'], v['p50'], v['p99'], kernel_col(v), v['fail']) +
            ''.join(' %8s' % cell(v) for _, _, cell in extra))
print()
for size in sizes:
    print('%d B:' % size)
    for (n, x, least), lo_hi in zip(ratios(size), spread(size)):
        print('  %-24s %5.2f  (rounds %.2f-%.2f; target >= %g: %s)' % (
            n, x, lo_hi[0], lo_hi[1], least, verdict(x, least, lo_hi)))
    if pin == 'split':
        print('  %-24s %5.2f  (server CPU per request; no target)' % (
            'redis/kernel server CPU', srv_ratio(size)))

if write_doc != '1':
    sys.exit(0)

def wrap(text):
    # Prose at the width of the rest of the file; tables stay one line a row.
    return textwrap.wrap(text, 95, break_long_words=False, break_on_hyphens=False)

when = datetime.datetime.now().strftime('%Y-%m-%d %H:%M')
placement = {
    'split': 'CPUs split (`-p split`): client on CPU 0, server side on CPU 1.',
    'none': 'CPUs not split (`-p none`): client and servers where the scheduler puts them.',
}[pin]
if pad != 'fit':
    placement += ' UDP requests padded to %s bytes.' % pad
run = ['### Run of %s' % when, '']
run += wrap('`%s`: %s; %s. %s%s' % (cmdline, machine, versions, placement,
                                     ' Each figure is the median of %s rounds.' % rounds
                                     if rounds != '1' else ''))
run += ['',
       '| value | path | req/s | p50 µs | p99 µs | kernel answered | failures | ' +
       ' | '.join(h for _, h, _ in extra) + ' |',
       '|---|---|---:|---:|---:|---:|---:|' + '---:|' * len(extra)]
for size in sizes:
    for row in names:
        v = rows[(row, size)]
        run.append('| %d B | %s | %.0f | %.1f | %.1f | %s | %d | ' % (
            size, names[row], v['rps'], v['p50'], v['p99'], kernel_col(v), v['fail']) +
            ' | '.join(cell(v) for _, _, cell in extra) + ' |')
run += ['', '| value | ' + ' | '.join('%s (target ≥ %g)' % (n, least)
                                       for n, _, least in targets) + ' |',
        '|---|' + '---:|' * len(targets)]
for size in sizes:
    cells = []
    for (_, x, least), lo_hi in zip(ratios(size), spread(size)):
        v = verdict(x, least, lo_hi)
        cell = '%.2f' % x + (' (%.2f–%.2f)' % lo_hi if rounds != '1' else '')
        cells.append('%s: %s' % (cell, v if 'MISSES' not in v else '**%s**' % v.lower()))
    run.append('| %d B | ' % size + ' | '.join(cells) + ' |')
run.append('')
if pin == 'split':
    run += wrap('Server CPU per request (CPU 1\'s busy time over the requests answered), Redis '
                'over the kernel: ' + ', '.join('%.2f for %d B' % (srv_ratio(size), size)
                                                for size in sizes) + '.')
    run.append('')

head = ['## Kernel fast path', ''] + wrap(
        '`tools/bench/fastpath.sh` (`make bench-fastpath`) measures, in one run and under the '
        'same client load, GET hits answered by the XDP program, the same GETs answered by the '
        'daemon with the program detached, GET over TCP to Debian\'s redis-server, and the '
        'ceiling: `tools/bench/xdp_ceiling.bpf.c`, which answers every request with a fixed '
        'reply and does the packet work of a hit without parsing or lookup. It runs in a '
        'network namespace of its own, with generic XDP on that namespace\'s loopback; '
        'latencies are measured by the client and include its own time.') + [''] + wrap(
        'CPUs: with `-p split` (the default) the client (xkv-bench) runs on CPU 0 and the '
        'server side on CPU 1: redis-server, xkvd with one worker thread (`--threads 1`, as '
        'redis-server has one), and, through RPS on the namespace\'s loopback, the receive path '
        'of every packet, so that generic XDP (the kernel and ceiling rows\' server) runs on '
        'CPU 1 as it would on a server\'s NIC queue, not inside the client\'s sendmmsg() on '
        'CPU 0. Every row then has the same split: the client\'s work on one CPU, the '
        'server\'s on the other. With `-p none` the scheduler places everything, and generic '
        'XDP runs inside the client\'s own system calls, so the XDP program\'s cost adds '
        'directly to the client\'s: the stricter test of the ceiling ratio. With the CPUs '
        'split, the last column is CPU 1\'s busy time during the step (user, system, '
        'interrupts and softirqs from /proc/stat; anything else running there counts too) '
        'over the requests answered: what a request costs the server side, whatever limits '
        'the rate. With `-s` (kernel.bpf_stats_enabled during the run), an XDP ns/run column '
        'gives the attached program\'s own time per run, every run counted (a hit and its '
        'reply\'s pass back through lo, which the program passes at once); the stats cost '
        'every run a little, so rates from such a run are a little lower.') + [''] + wrap(
        'Every row: xkv-bench, %s threads x %s connections, pipeline 1, closed loop for %s s, '
        'GET on %s keys drawn uniformly (all cached), after a prefill and %s s of warm-up. UDP '
        'requests are padded to fit the row\'s reply (`-u fit`: 95 bytes of UDP payload for '
        '64 B values, 288 for 256 B), as a client that knows the size of its values pads: the '
        'protocol never answers with more than was asked, so a client pads to the largest '
        'reply it accepts. A run with `-u 1200` (room for the largest value the kernel serves, '
        'what a client that knows nothing must send) says so. Over UDP the connections of a client thread share one '
        'socket: each turn of its loop sends every ready request in one sendmmsg() and drains '
        'the replies with recvmmsg(), still one request in flight per connection, so the '
        'generator pays a few system calls per batch rather than two per request (TCP is one '
        'send and one recv per request, as a Redis client would do). The targets: kernel hits '
        'at least 3x the Redis TCP GET rate, at most 1/3 of its median latency, and at least '
        '0.8 of the ceiling. The machine is shared with other work: rounds (`-r`) alternate '
        'the order of the rows, each figure is the median over the rounds, and each ratio is '
        'that of the medians, with the lowest and highest single-round ratio in brackets.'
        % (threads, conns, secs, keys, warm)) + ['']
text = open(doc).read() if os.path.exists(doc) else '# Benchmarks\n'
lines = text.rstrip('\n').split('\n')
try:
    start = lines.index('## Kernel fast path')
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith('## ')),
               len(lines))
    old = lines[start:end]
    while old and old[-1] == '':
        old.pop()
    section = (old + [''] if append == '1' else head) + run
    lines[start:end] = section + ([''] if end < len(lines) else [])
except ValueError:
    lines += [''] + head + run
open(doc, 'w').write('\n'.join(lines).rstrip('\n') + '\n')
print('\nwrote %s' % doc)
EOF
