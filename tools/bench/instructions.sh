#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# instructions.sh: user-space instructions per request (GET by default, any
# of xkv-bench's commands with -C) of xkvd and of peer servers (Debian's
# redis-server by default, any by path with PEERS), counted by valgrind's callgrind, which stays exact on a busy
# machine where throughput numbers do not (this VM has no hardware counters for
# perf stat). Then the kernel-side view, which callgrind cannot see: system
# calls per GET (and CPU time per GET, which is noisy) from perf stat on the
# same servers run natively.
#
# Each server: xkvd --threads 1 --fastpath no (once per I/O engine), and each
# peer (redis-server or valkey-server) --save '' --appendonly no, on a free
# 127.0.0.1 port, prefilled with KEYS keys of SIZE bytes by xkv-bench. For each
# command and pipeline depth the counters are zeroed after the prefill
# (callgrind_control -z), xkv-bench sends exactly REQUESTS of the command
# (uniform keys; GETs all hit) over 50 connections, and the counters are dumped
# (callgrind_control -d): instructions per request is the dump's total over
# REQUESTS, so start-up and prefill are not in it. Every thread of the server
# is counted (valgrind runs them one at a time).
#
# Usage: [PEERS="name=path ..."] tools/bench/instructions.sh [-n REQUESTS] [-k KEYS]
#            [-d SIZE] [-C "get set"] [-P "1 16"] [-e "io_uring epoll"] [-o OUTPUT]
#            [-a ANNOTATE_DIR] [-K] [-X "XKVD ARGS"]
#   -n  requests per measurement (100000)  -k  keys (100000)
#   -d  value size (256)                   -P  pipeline depths ("1 16")
#   -C  xkv-bench commands, comma-separated ("get"; templates too, such as
#       "get,set,XADD __key__ * f __data__"); keys are prefilled (strings)
#       only when the list has get   -e  xkvd I/O engines ("io_uring epoll")
#   -o  build output directory (.output)
#   PEERS: the servers compared, by path (default "redis=redis-server"), e.g.
#   PEERS="redis70=/usr/bin/redis-server redis88=/path/redis-server
#   valkey91=/path/valkey-server" for peers built outside the checkout
#   -a  keep the callgrind dumps there, with callgrind_annotate --inclusive=yes
#       per-function profiles next to them
#   -K  skip the kernel-side (perf stat) part
#   -X  more xkvd arguments, e.g. "--cluster-enabled yes": a cluster node
#       is given every slot and waited for until cluster_state:ok, so the
#       run measures the slot check of a node that serves every key
set -eu -o pipefail
cd "$(dirname "$0")/../.."

requests=100000 keys=100000 size=256 pipelines="1 16" engines="io_uring epoll" output=.output
annotate= kernel=1 commands=get xkv_extra=
while getopts "n:k:d:C:P:e:o:a:KX:" opt; do
	case $opt in
	n) requests=$OPTARG ;;
	C) commands=$OPTARG ;;
	k) keys=$OPTARG ;;
	d) size=$OPTARG ;;
	P) pipelines=$OPTARG ;;
	e) engines=$OPTARG ;;
	o) output=$OPTARG ;;
	a) annotate=$OPTARG ;;
	K) kernel=0 ;;
	X) xkv_extra=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || { echo "instructions.sh: unexpected argument '$1'" >&2; exit 2; }

python=${PYTHON:-/usr/bin/python3}
xkvd=$output/xkvd bench=$output/xkv-bench
for f in "$xkvd" "$bench"; do
	[ -x "$f" ] || { echo "instructions.sh: no $f (make OUTPUT=$output all)" >&2; exit 1; }
done
peers=${PEERS:-redis=redis-server}
for t in valgrind callgrind_control redis-cli "$python"; do
	command -v "$t" >/dev/null || { echo "instructions.sh: $t is missing" >&2; exit 1; }
done
if [ "$kernel" = 1 ] && ! perf stat -e raw_syscalls:sys_enter -- true >/dev/null 2>&1; then
	echo "instructions.sh: perf cannot count raw_syscalls:sys_enter here: no kernel-side view" >&2
	kernel=0
fi

# valgrind is slow to stop: TERM, then KILL after 10 s.
stop_tries=100
. tools/bench/lib.sh

# start NAME COMMAND...: runs a server on a free port, waits for PING (up to
# 60 s: valgrind starts slowly), prefills it. Sets $port and $pid.
start() {
	local name=$1
	shift
	port=$(free_port)
	mkdir -p "$tmp/$name"
	"$@" --port "$port" >"$tmp/$name.out" 2>&1 &
	pid=$!
	pids+=("$pid")
	for _ in $(seq 600); do
		redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null 2>&1 && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null 2>&1 || {
		echo "instructions.sh: $name did not start:" >&2
		cat "$tmp/$name.out" >&2
		exit 1
	}
	case "$name $*" in
	xkv-*--cluster-enabled\ yes*)
		redis-cli -h 127.0.0.1 -p "$port" cluster addslotsrange 0 16383 >/dev/null
		for _ in $(seq 600); do
			redis-cli -h 127.0.0.1 -p "$port" cluster info | grep -q 'cluster_state:ok' && break
			sleep 0.1
		done
		;;
	esac
	fresh "$name"
}

# fresh NAME: an empty keyspace, then the prefill when GETs need one (each
# command of the list starts from the same data).
fresh() {
	redis-cli -h 127.0.0.1 -p "$port" flushall >/dev/null
	[ "$prefill" = 1 ] || return 0
	"$bench" -p "$port" -t 1 -c 50 -P 16 -k "$keys" -d "$size" --prefill --command get \
		-n 1000 --json >"$tmp/prefill-$1.json" || {
		echo "instructions.sh: prefill of $1 failed" >&2
		exit 1
	}
}

# load CMD P OUT: exactly $requests CMDs at pipeline P; fails unless all were answered.
load() {
	"$bench" -p "$port" -t 1 -c 50 -P "$2" -k "$keys" -d "$size" --command "$1" \
		-n "$requests" --json >"$3"
	"$python" - "$3" "$requests" "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
s = d['steps'][0]
if d['failures'] or s['requests'] != int(sys.argv[2]) or s['errors']:
    sys.exit('instructions.sh: %s run incomplete: %s' % (sys.argv[3], sys.argv[1]))
EOF
}

IFS=, read -ra cmds <<<"$commands"
prefill=0
for c in "${cmds[@]}"; do
	[ "$c" = get ] && prefill=1
done

xkv_args=(--bind 127.0.0.1 --fastpath no --threads 1 --save '' --appendonly no)
read -ra more <<<"$xkv_extra"
xkv_args+=("${more[@]}")
redis_args=(--bind 127.0.0.1 --save '' --appendonly no --daemonize no)
servers=()
declare -A peer_bin
for e in $engines; do
	servers+=("xkv-$e")
done
for p in $peers; do
	name=${p%%=*} bin=${p#*=}
	command -v "$bin" >/dev/null || { echo "instructions.sh: peer $name: no $bin" >&2; exit 1; }
	[ "$name" = "${name#xkv-}" ] || { echo "instructions.sh: a peer's name may not start xkv-" >&2; exit 1; }
	servers+=("$name")
	peer_bin[$name]=$bin
done

# The argument arrays hold '' (--save ''): rebuild them as arrays, not words.
run_server() {
	local name=$1
	shift
	case $name in
	xkv-*)
		start "$name" "$@" "$xkvd" "${xkv_args[@]}" --io-engine "${name#xkv-}" \
			--dir "$tmp/$name" --logfile "$tmp/$name/log"
		;;
	*)
		start "$name" "$@" "${peer_bin[$name]}" "${redis_args[@]}" --dir "$tmp/$name" \
			--logfile "$tmp/$name/log"
		;;
	esac
}

load0=$(cut -d' ' -f1 /proc/loadavg)
echo "instructions.sh: $requests requests per measurement, commands $commands," \
	"pipelines $pipelines, $keys keys of $size B"
for s in "${servers[@]}"; do
	run_server "$s" valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$s"
	vpid=$pid
	# valgrind may need a moment after PING before vgdb answers.
	for i in "${!cmds[@]}"; do
		c=${cmds[$i]}
		[ "$i" = 0 ] || fresh "$s"
		for p in $pipelines; do
			m=$s.c$i.P$p
			callgrind_control -z "$vpid" >/dev/null 2>&1
			load "$c" "$p" "$tmp/cg-run.$m.json"
			callgrind_control -d "$vpid" >/dev/null 2>&1
			dump=$(ls -t "$tmp/cg.$s".* | head -n 1)
			mv "$dump" "$tmp/dump.$m"
			total=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$tmp/dump.$m")
			echo "$total" >"$tmp/ir.$m"
			echo "  $s $c P$p: $total instructions, $((total / requests)) per request"
			if [ -n "$annotate" ]; then
				mkdir -p "$annotate"
				cp "$tmp/dump.$m" "$annotate/callgrind.$m"
				callgrind_annotate --inclusive=yes "$tmp/dump.$m" \
					>"$annotate/inclusive.$m.txt" 2>/dev/null || true
				callgrind_annotate "$tmp/dump.$m" >"$annotate/self.$m.txt" \
					2>/dev/null || true
			fi
		done
	done
	stop_pid "$vpid"
	if [ "$kernel" = 1 ]; then
		run_server "$s"
		for i in "${!cmds[@]}"; do
			c=${cmds[$i]}
			[ "$i" = 0 ] || fresh "$s"
			for p in $pipelines; do
				perf stat -x, -e raw_syscalls:sys_enter -e task-clock -p "$pid" \
					-o "$tmp/perf.$s.c$i.P$p" &
				perfpid=$!
				pids+=("$perfpid")
				sleep 0.5 # let perf attach before the load starts
				load "$c" "$p" "$tmp/native.$s.c$i.P$p.json"
				kill -INT "$perfpid"
				wait "$perfpid" 2>/dev/null || true
			done
		done
		stop_pid "$pid"
	fi
done

"$python" - "$tmp" "$requests" "$pipelines" "${servers[*]}" "$kernel" "$load0" "$commands" <<'EOF'
import os, sys
tmp, requests, pipelines, servers, kernel, load0, commands = sys.argv[1:]
requests = int(requests)
pipelines = pipelines.split()
servers = servers.split()
xkvs = [s for s in servers if s.startswith('xkv-')]
peers = [s for s in servers if not s.startswith('xkv-')]

def ir(s, c, p):
    return int(open(os.path.join(tmp, 'ir.%s.%s.P%s' % (s, c, p))).read()) / requests

def perf(s, c, p):
    vals = {}
    for line in open(os.path.join(tmp, 'perf.%s.%s.P%s' % (s, c, p))):
        f = line.strip().split(',')
        if len(f) > 2 and f[0] and not line.startswith('#'):
            try:
                vals[f[2]] = float(f[0])
            except ValueError:
                pass
    return vals.get('raw_syscalls:sys_enter', float('nan')), vals.get('task-clock', float('nan'))

def name(s):
    return 'xkvd (%s)' % s[4:] if s.startswith('xkv-') else s

for i, label in enumerate(commands.split(',')):
    c = 'c%d' % i
    ratios = [(x, r) for x in xkvs for r in peers]
    print()
    print('User-space instructions per %s (callgrind; %d requests, 50 connections; load '
          'average %s):' % (label if ' ' in label else label.upper(), requests, load0))
    print()
    print('| pipeline | ' + ' | '.join(name(s) for s in servers) + ' | '
          + ' | '.join('%s / %s' % (name(x), r) for x, r in ratios) + ' |')
    print('|---:|' + '---:|' * (len(servers) + len(ratios)))
    for p in pipelines:
        print('| %s | ' % p + ' | '.join('%.0f' % ir(s, c, p) for s in servers) + ' | '
              + ' | '.join('%.2f' % (ir(x, c, p) / ir(r, c, p)) for x, r in ratios) + ' |')
    if kernel != '1':
        continue
    print()
    print('Kernel side (perf stat on the native servers, same loads): system calls per '
          'request, and CPU time per request in ns (user + kernel; noisy on a shared machine):')
    print()
    print('| pipeline | ' + ' | '.join('%s syscalls' % name(s) for s in servers) + ' | '
          + ' | '.join('%s CPU ns' % name(s) for s in servers) + ' |')
    print('|---:|' + '---:|' * (2 * len(servers)))
    for p in pipelines:
        v = [perf(s, c, p) for s in servers]
        print('| %s | ' % p + ' | '.join('%.3f' % (a / requests) for a, _ in v) + ' | '
              + ' | '.join('%.0f' % (b * 1e6 / requests) for _, b in v) + ' |')
EOF
