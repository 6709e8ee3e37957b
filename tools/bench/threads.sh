#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# threads.sh: xkvd with its default worker threads against xkvd --threads 1,
# nothing pinned, under the same xkv-bench load (issue 5's "a second thread
# must not cost us"). compare.sh measures these rows too, once per round among
# many others; this runs only them, alternating the two servers every round,
# and prints the medians and each round's ratio.
#
# Usage: tools/bench/threads.sh [-r ROUNDS] [-T SECONDS] [-o OUTPUT]
set -euo pipefail

rounds=6 secs=3 output=.output
while getopts "r:T:o:" opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	T) secs=$OPTARG ;;
	o) output=$OPTARG ;;
	*) exit 2 ;;
	esac
done
xkvd=$output/xkvd bench=$output/xkv-bench python=/usr/bin/python3
. "$(dirname "$0")/lib.sh"

declare -A port
for name in default one; do
	port[$name]=$(free_port)
	extra=()
	[ "$name" = one ] && extra=(--threads 1)
	"$xkvd" --port "${port[$name]}" --bind 127.0.0.1 --fastpath no --save '' --logfile "$tmp/$name.log" \
		"${extra[@]}" &
	pids+=($!)
done
for name in default one; do
	for _ in $(seq 100); do
		"$bench" -p "${port[$name]}" -n 1 --command get >/dev/null 2>&1 && break
		sleep 0.05
	done
	"$bench" -p "${port[$name]}" -t 2 -c 25 -k 100000 -d 256 --prefill --command get -n 1000 \
		--json >/dev/null
done

echo "threads.sh: load average $(cut -d' ' -f1 /proc/loadavg) at the start; $rounds rounds of $secs s"
for row in "get 1" "get 16" "set 1" "set 16"; do
	read -r cmd pipeline <<<"$row"
	for round in $(seq "$rounds"); do
		order="default one"
		[ $((round % 2)) -eq 0 ] && order="one default"
		for name in $order; do
			"$bench" -p "${port[$name]}" -t 2 -c 25 -k 100000 -d 256 -T "$secs" \
				-P "$pipeline" --command "$cmd" --json >"$tmp/$cmd-$pipeline-$round-$name.json"
		done
	done
done

"$python" - "$tmp" "$rounds" <<'EOF'
import json, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
def rate(cmd, p, r, name):
    return json.load(open('%s/%s-%s-%d-%s.json' % (tmp, cmd, p, r, name)))['steps'][0]['achieved']
print('%-8s %12s %12s %7s  %s' % ('row', 'default', '1 thread', 'ratio', 'per round'))
for cmd, p in (('get', 1), ('get', 16), ('set', 1), ('set', 16)):
    d = [rate(cmd, p, r, 'default') for r in range(1, rounds + 1)]
    o = [rate(cmd, p, r, 'one') for r in range(1, rounds + 1)]
    ratio = statistics.median(d) / statistics.median(o)
    print('%-8s %12.0f %12.0f %7.2f  %s  (target >= 0.95: %s)' % (
        '%s P%d' % (cmd.upper(), p), statistics.median(d), statistics.median(o), ratio,
        ' '.join('%.2f' % (a / b) for a, b in zip(d, o)), 'holds' if ratio >= 0.95 else 'MISSES'))
EOF
