#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs redis-benchmark against xkvd and Debian's redis-server side by side, in
# alternation, on free loopback ports, and prints requests per second for each
# and the ratio xkv/redis. Usage: tools/bench/redis-benchmark-compare.sh [-n N] [-r rounds]
set -eu
cd "$(dirname "$0")/../.."
n=200000 rounds=1 tests=set,get,incr,mset
while getopts "n:r:t:" opt; do
	case $opt in
	n) n=$OPTARG ;;
	r) rounds=$OPTARG ;;
	t) tests=$OPTARG ;;
	*) exit 2 ;;
	esac
done
xkvd=${XKVD:-.output/xkvd}
. tools/bench/lib.sh
xport=$(free_port) rport=$(free_port)
# TCP only: the fast path would attach to the host's lo.
"$xkvd" --port "$xport" --bind 127.0.0.1 --fastpath no --save '' --dir "$tmp" --logfile "$tmp/xkvd.log" &
pids+=($!)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" \
	--logfile "$tmp/redis.log" &
pids+=($!)
for port in $xport $rport; do
	for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
done

# bench PORT PIPELINE: "test rps" lines; fails on any error line from redis-benchmark.
bench() {
	local out
	out=$(redis-benchmark -p "$1" -q -t "$tests" -P "$2" -n "$n" 2>&1 | tr '\r' '\n' |
		grep -v 'rps=' | grep -v '^ *$')
	if echo "$out" | grep -qiE 'error|warning'; then
		echo "redis-benchmark reported a problem on port $1:" >&2
		echo "$out" >&2
		exit 1
	fi
	echo "$out" | sed -E 's/^([A-Z_]+)( \([^)]*\))?: ([0-9.]+) requests per second.*/\1 \3/'
}

printf '%-6s %-3s %12s %12s %7s\n' test P xkv redis ratio
for round in $(seq "$rounds"); do
	for p in 1 16; do
		x=$(bench "$xport" "$p")
		r=$(bench "$rport" "$p")
		paste <(echo "$x") <(echo "$r") | while read -r name xr _ rr; do
			printf '%-6s %-3s %12.0f %12.0f %7.2f\n' "$name" "$p" "$xr" "$rr" \
				"$(awk -v x="$xr" -v r="$rr" 'BEGIN { print x / r }')"
		done
	done
done
echo "(xkvd $("$xkvd" --version | cut -d' ' -f2), $(redis-server --version | cut -d' ' -f3), $(nproc) CPUs, -n $n)"
