#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs inside the guest that tests/kernel/run.sh boots, chrooted into the
# host's root (read-only; /tmp is the guest's): the fast path's tests against
# the guest's kernel. Prints TAP. Usage: guest.sh OUTPUT (absolute).
set -u
OUTPUT=$1
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PORT=16379
XKVD=${XKV_XKVD:-$OUTPUT/xkvd} # XKV_XKVD=path (run.sh): another build of the daemon
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); echo "not ok $n - $*"; }

echo "# kernel $(uname -r), $(nproc) CPUs"
ip link set lo up
# XKV_PROBE_OBJ=file.bpf.o (run.sh -b): only load that object, verifier log to the share.
if [ -n "${XKV_PROBE_OBJ:-}" ]; then
	if bpftool -d prog loadall "$XKV_PROBE_OBJ" /sys/fs/bpf/xkv_probe >/tmp/share/verifier.log 2>&1; then
		echo "ok 1 - $XKV_PROBE_OBJ loads"
	else
		echo "not ok 1 - $XKV_PROBE_OBJ loads"
		grep -B20 -m1 -E 'not allowed|invalid|unknown|R[0-9]+ .*!' /tmp/share/verifier.log | sed 's/^/#   /'
	fi
	rm -rf /sys/fs/bpf/xkv_probe
	echo "1..1"
	exit 0
fi
if [ -r /sys/kernel/btf/vmlinux ]; then
	ok "the kernel has BTF ($(stat -c %s /sys/kernel/btf/vmlinux) bytes)"
else
	notok "the kernel has BTF"
fi

# The BPF_PROG_TEST_RUN tier, as `make test` runs it (its own TAP, indented).
t=$(date +%s)
if "$OUTPUT/tests/bpf/test_xdp" >/tmp/test_xdp.log 2>&1; then
	ok "test_xdp ($(grep -cE '^ok ' /tmp/test_xdp.log) passed, $(($(date +%s) - t))s)"
else
	notok "test_xdp exited $? ($(grep -cE '^not ok ' /tmp/test_xdp.log) failed)"
fi
grep -E '^(not ok|# .*(Expected|FAIL|terminated|hits,))' /tmp/test_xdp.log | sed 's/^/#   /' | head -40

# The daemon: load the skeleton, attach on lo, and answer a GET in the kernel.
mkdir -p /tmp/xkvd
"$XKVD" --port $PORT --bind 127.0.0.1 --dir /tmp/xkvd --threads 2 --save '' \
	--fastpath yes --fastpath-interfaces lo --loglevel debug >/tmp/xkvd.log 2>&1 &
pid=$!
for _ in $(seq 50); do
	redis-cli -p $PORT ping >/dev/null 2>&1 && break
	sleep 0.1
done
grep -iE 'fast ?path|libbpf|BPF' /tmp/xkvd.log | grep -vE 'libbpf: (sec|elf|map|CO-RE|prog .*: found|loaded kernel)' | sed 's/^[^#]*# /#   xkvd: /' | tail -40
status=$("$OUTPUT/xkvctl" -p $PORT status 2>&1)
if echo "$status" | grep -qw 'lo'; then
	ok "xkvd loaded and attached the fast path: $(echo "$status" | tr '\n' ' ')"
else
	notok "xkvd loaded and attached the fast path: $(echo "$status" | tr '\n' ' ')"
fi
redis-cli -p $PORT set kernkey kernvalue >/dev/null
how=
for _ in 1 2 3 4; do
	how=$("$OUTPUT/xkvctl" -p $PORT get -v kernkey 2>&1 | tr '\n' ' ')
done
if echo "$how" | grep -q 'kernel' && echo "$how" | grep -q kernvalue; then
	ok "a UDP GET is answered by the kernel: $how"
else
	notok "a UDP GET is answered by the kernel: $how"
fi
redis-cli -p $PORT set kernkey newvalue >/dev/null
how=$("$OUTPUT/xkvctl" -p $PORT get -v kernkey 2>&1 | tr '\n' ' ')
if echo "$how" | grep -q newvalue; then
	ok "a SET is seen at once: $how"
else
	notok "a SET is seen at once: $how"
fi
if grep -q 'kernel refused' /tmp/xkvd.log; then
	# The whole verifier log, for the reason (the daemon logs its first line).
	bpftool -d prog load "$OUTPUT/bpf/xkv_xdp.bpf.o" /sys/fs/bpf/xkv_probe type xdp \
		>/tmp/share/verifier.log 2>&1
	rm -f /sys/fs/bpf/xkv_probe
	echo "# verifier log in the share: verifier.log; its last lines:"
	grep -vE '^libbpf: (elf|sec|map|CO-RE)' /tmp/share/verifier.log | tail -12 | sed 's/^/#   /'
fi
"$OUTPUT/xkvctl" -p $PORT stats 2>&1 | grep -E 'hits|miss_not_cached|slots' | sed 's/^/#   /'
kill "$pid"
wait "$pid"
rc=$?
if [ "$rc" -eq 0 ]; then ok "xkvd exits cleanly on SIGTERM"; else notok "xkvd exited $rc on SIGTERM"; fi
[ -n "$(bpftool prog show name xdp_get_fastpath 2>/dev/null)" ] &&
	notok "the program is gone after xkvd exits" || ok "the program is gone after xkvd exits"

if [ "${XKV_REPRO:-0}" = 1 ]; then
	# The TCP experiment (docs/fastpath.md), on this kernel: its cases as comments.
	if [ -x "$OUTPUT/tests/tcp-fastpath/repro" ]; then
		"$OUTPUT/tests/tcp-fastpath/repro" >/tmp/tcp-repro.log 2>/tmp/tcp-repro.err
		rc=$?
		if [ "$rc" -eq 0 ] && grep -q '^1\.\.' /tmp/tcp-repro.log; then
			ok "the TCP reproducer ran ($(grep -c '^ok ' /tmp/tcp-repro.log) cases correct, $(grep -c '^not ok ' /tmp/tcp-repro.log) broken)"
		else
			notok "the TCP reproducer ran (exit $rc)"
		fi
		grep -E '^(ok|not ok|#)' /tmp/tcp-repro.log | sed 's/^/#   /'
	else
		notok "the TCP reproducer is built (make test-tcp-fastpath)"
	fi
fi

if [ "${XKV_E2E:-0}" = 1 ]; then
	if modprobe -d "$XKV_MODDIR" veth; then ok "modprobe veth"; else notok "modprobe veth"; fi
	t=$(date +%s)
	/usr/bin/python3 "$REPO/tests/e2e/run.py" --output "$OUTPUT" >/tmp/e2e.log 2>&1
	rc=$?
	p=$(grep -cE '^ok ' /tmp/e2e.log) f=$(grep -cE '^not ok ' /tmp/e2e.log)
	if [ "$rc" -eq 0 ] && [ "$f" -eq 0 ]; then
		ok "e2e tier ($p passed, $(($(date +%s) - t))s)"
	else
		notok "e2e tier exited $rc ($p passed, $f failed)"
	fi
	grep -E '^(not ok|# )' /tmp/e2e.log | sed 's/^/#   /' | head -40
fi
cp /tmp/*.log /tmp/share/ 2>/dev/null
echo "1..$n"
