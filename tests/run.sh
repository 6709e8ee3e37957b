#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs every test tier and sums their TAP results into the final line
# "N passed, M failed". Each tier prints TAP ("ok ..." / "not ok ..."); a tier
# that crashes without TAP counts as one failure. Exit status: 0 only if
# nothing failed.
set -u
cd "$(dirname "$0")/.."
OUTPUT=${OUTPUT:-.output}
PYTHON=${PYTHON:-/usr/bin/python3}
LOG_DIR=$OUTPUT/test-logs
mkdir -p "$LOG_DIR"

passed=0 failed=0 skipped=0

# run_tier NAME COMMAND...: runs it, echoes its output, and counts its TAP lines.
run_tier() {
	local name=$1 log="$LOG_DIR/$1.log" rc p f s
	shift
	echo "# tier: $name"
	"$@" >"$log" 2>&1
	rc=$?
	cat "$log"
	p=$(grep -cE '^ok ' "$log" | tr -d ' ')
	s=$(grep -cE '^ok .*# (SKIP|skip)' "$log" | tr -d ' ')
	f=$(grep -cE '^not ok ' "$log" | tr -d ' ')
	p=$((p - s))
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "not ok - $name exited with status $rc"
		f=1
	fi
	echo "# tier $name: $p passed, $f failed, $s skipped"
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

format_check() {
	if clang-format --dry-run --Werror $(git ls-files '*.c' '*.h') 2>&1; then
		echo "ok 1 - clang-format"
	else
		echo "not ok 1 - clang-format (run make format)"
	fi
}

unit_tests() {
	local dir=$1 bin
	for bin in "$dir"/*; do
		[ -x "$bin" ] || continue
		echo "# $bin"
		"$bin" || echo "not ok - $(basename "$bin") exited with status $?"
	done
}

run_tier format format_check
run_tier unit unit_tests "$OUTPUT/tests/unit"
run_tier unit-asan unit_tests "$OUTPUT/asan/tests/unit"
run_tier bpf unit_tests "$OUTPUT/tests/bpf"
run_tier e2e "$PYTHON" tests/e2e/run.py --output "$OUTPUT"
run_tier integration-io_uring "$PYTHON" tests/integration/run.py --xkvd "$OUTPUT/xkvd" --io-engine io_uring
run_tier integration-epoll "$PYTHON" tests/integration/run.py --xkvd "$OUTPUT/xkvd" --io-engine epoll
run_tier hostile-asan "$PYTHON" tests/integration/run.py --xkvd "$OUTPUT/asan/xkvd" --only hostile
# Random Lua scripts (tests/soak/script_fuzz.py, bounded) on the sanitizer build.
run_tier script-fuzz-asan "$PYTHON" tests/integration/run.py --xkvd "$OUTPUT/asan/xkvd" --only test_script_fuzz
# The background job thread frees what workers hand it: races and leaks show here.
run_tier lazyfree-asan "$PYTHON" tests/integration/run.py --xkvd "$OUTPUT/asan/xkvd" --only test_lazyfree

if [ "$skipped" -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
