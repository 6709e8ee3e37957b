# SPDX-License-Identifier: BSD-3-Clause
#
# lib.sh: what every benchmark script here needs, sourced after its options
# are parsed: a scratch directory, the servers it started (stopped by PID on
# any exit), free loopback ports, and the machine's description for the
# report. Sets $tmp and the array $pids; a script that has more to undo at
# exit (a network namespace) defines bench_cleanup_hook before sourcing.

tmp=$(mktemp -d)
pids=()
stop_tries=${stop_tries:-50}

# stop_pid PID: TERM, then KILL after $stop_tries tenths of a second.
stop_pid() {
	local pid=$1
	kill -TERM "$pid" 2>/dev/null || return 0
	for _ in $(seq "$stop_tries"); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

bench_cleanup() {
	local pid
	for pid in "${pids[@]}"; do
		stop_pid "$pid"
	done
	if declare -F bench_cleanup_hook >/dev/null; then
		bench_cleanup_hook
	fi
	rm -rf "$tmp"
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

# free_port: a TCP port on 127.0.0.1 that nothing listens on right now.
free_port() {
	"${python:-/usr/bin/python3}" -c \
		'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# machine_line LOAD: CPUs, model and kernel, and LOAD (the load average the
# script saw at its start), for the report's run line.
machine_line() {
	echo "$(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1))," \
		"Linux $(uname -r), load average $1 at the start"
}
