#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# compare.sh: xkvd against Debian's redis-server, side by side, with xkv-bench,
# and writes the table into docs/benchmarks.md ("Side by side: xkv-bench") and
# PNG plots into docs/img/ (when gnuplot is installed).
#
# Servers, each on a free 127.0.0.1 port, each prefilled identically (KEYS keys
# of 256 bytes): xkvd --fastpath no with its default threads (xkv), xkvd
# --threads 1 (xkv1), redis-server --save '' --appendonly no (redis), and, for
# the per-core rows, xkvd --threads 1 and redis-server under taskset -c 0
# (xkvpin, redispin), loaded from xkv-bench under taskset -c 1.
#
# Rows, each run on the servers in alternation (the order flips every round),
# all of it repeated ROUNDS times; the table gives the medians:
#   default   GET and SET, pipeline 1 and 16, -t 2 -c 25, nothing pinned;
#             xkv (default threads) against redis, and against xkv1
#   percore   the same, servers on CPU 0, xkv-bench -t 1 -c 50 on CPU 1
#   command   APPEND, INCR, LPUSH, SADD, HSET, pipeline 16, -t 2 -c 25, values of
#             16 bytes on keys of their own (so the key space does not grow huge)
#   sweep     GET, open loop over RATES (xkv-bench --sweep, up to SWEEP_PIPELINE
#             in flight per connection), pinned like the per-core rows (servers
#             on CPU 0, xkv-bench -t 1 -c 50 on CPU 1) so that the generator never
#             competes with the server for a CPU: the highest sustained rate of
#             each server, and p50/p99 against the offered rate
#
# Usage: tools/bench/compare.sh [-T SECONDS] [-r ROUNDS] [-R RATES] [-o OUTPUT]
#                               [-k KEYS] [-d DOC | -n] [-g IMGDIR] [-G]
#   -T  seconds per step (5)                 -r  rounds (3)
#   -R  sweep rates (200k,300k,400k,500k,600k,700k,800k,900k,1M)
#   -o  build output directory (.output)     -k  keys (100000)
#   -d  the markdown file (docs/benchmarks.md); -n: do not write it
#   -g  directory of the plots (docs/img)    -G  no plots
# With the defaults a run takes about 12 minutes on 2 CPUs.
set -eu -o pipefail
cd "$(dirname "$0")/../.."

secs=5 rounds=3 rates=200k,300k,400k,500k,600k,700k,800k,900k,1M output=.output keys=100000
doc=docs/benchmarks.md write_doc=1 imgdir=docs/img plots=1 size=256 sweep_pipeline=16
cmdline="tools/bench/compare.sh${*:+ $*}"
while getopts "T:r:R:o:k:d:ng:G" opt; do
	case $opt in
	T) secs=$OPTARG ;;
	r) rounds=$OPTARG ;;
	R) rates=$OPTARG ;;
	o) output=$OPTARG ;;
	k) keys=$OPTARG ;;
	d) doc=$OPTARG ;;
	n) write_doc=0 ;;
	g) imgdir=$OPTARG ;;
	G) plots=0 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || { echo "compare.sh: unexpected argument '$1'" >&2; exit 2; }

python=${PYTHON:-/usr/bin/python3}
xkvd=$output/xkvd bench=$output/xkv-bench
for f in "$xkvd" "$bench"; do
	[ -x "$f" ] || { echo "compare.sh: no $f (make OUTPUT=$output all)" >&2; exit 1; }
done
for t in redis-server redis-cli taskset "$python"; do
	command -v "$t" >/dev/null || { echo "compare.sh: $t is missing (make deps)" >&2; exit 1; }
done
if [ "$plots" = 1 ] && ! command -v gnuplot >/dev/null; then
	echo "compare.sh: gnuplot is not installed: no plots (apt-get install gnuplot-nox)" >&2
	plots=0
fi
[ "$(nproc)" -ge 2 ] || echo "compare.sh: fewer than 2 CPUs: the per-core rows share CPU 0" >&2

. tools/bench/lib.sh

declare -A port
# start NAME COMMAND...: runs a server on a free port (the command gets
# --port PORT appended), waits for PING, prefills it.
start() {
	local name=$1 p
	shift
	p=$(free_port)
	port[$name]=$p
	mkdir -p "$tmp/$name"
	"$@" --port "$p" >"$tmp/$name.out" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do
		redis-cli -h 127.0.0.1 -p "$p" ping >/dev/null 2>&1 && break
		kill -0 "${pids[-1]}" 2>/dev/null || break
		sleep 0.05
	done
	redis-cli -h 127.0.0.1 -p "$p" ping >/dev/null 2>&1 || {
		echo "compare.sh: $name did not start:" >&2
		cat "$tmp/$name.out" >&2
		exit 1
	}
	"$bench" -p "$p" -t 2 -c 25 -k "$keys" -d "$size" --prefill --command get -n 1000 \
		--json >"$tmp/prefill-$name.json" || {
		echo "compare.sh: prefill of $name failed" >&2
		exit 1
	}
}

xkv_args=(--bind 127.0.0.1 --fastpath no --save '' --appendonly no)
redis_args=(--bind 127.0.0.1 --save '' --appendonly no --daemonize no)
start xkv "$xkvd" "${xkv_args[@]}" --dir "$tmp/xkv" --logfile "$tmp/xkv/log"
start xkv1 "$xkvd" "${xkv_args[@]}" --threads 1 --dir "$tmp/xkv1" --logfile "$tmp/xkv1/log"
start redis redis-server "${redis_args[@]}" --dir "$tmp/redis" --logfile "$tmp/redis/log"
start xkvpin taskset -c 0 "$xkvd" "${xkv_args[@]}" --threads 1 --dir "$tmp/xkvpin" \
	--logfile "$tmp/xkvpin/log"
start redispin taskset -c 0 redis-server "${redis_args[@]}" --dir "$tmp/redispin" \
	--logfile "$tmp/redispin/log"

# bench SECTION ROW ROUND SERVER [taskset -c N] XKV-BENCH-ARGS...: one step,
# its JSON kept as $tmp/SECTION.ROW.ROUND.SERVER.json.
bench() {
	local section=$1 row=$2 round=$3 server=$4 pre=()
	shift 4
	if [ "$1" = taskset ]; then
		pre=(taskset -c "$3")
		shift 3
	fi
	local out=$tmp/$section.$row.$round.$server.json
	"${pre[@]}" "$bench" -p "${port[$server]}" -k "$keys" -T "$secs" --json "$@" >"$out" ||
		echo "  ($section $row on $server reported failures)" >&2
	"$python" - "$out" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
if d['mode'] == 'sweep':
    ok = [s['rate'] for s in d['steps'] if s['sustained']]
    print('    highest sustained %s' % (max(ok) if ok else 'none'))
else:
    s = d['steps'][0]
    print('    %9.0f req/s  p50 %.0f us  p99 %.0f us  failures %d' % (
        s['achieved'], s['latency_us']['p50'], s['latency_us']['p99'], d['failures']))
EOF
}

# pair SECTION ROW ROUND "SERVERS" ARGS...: the row on each server in turn,
# in reverse order on even rounds.
pair() {
	local section=$1 row=$2 round=$3 servers s
	read -r -a servers <<<"$4"
	shift 4
	if [ $((round % 2)) -eq 0 ]; then
		servers=("${servers[@]}")
		local rev=()
		for s in "${servers[@]}"; do rev=("$s" "${rev[@]}"); done
		servers=("${rev[@]}")
	fi
	for s in "${servers[@]}"; do
		echo "  $section $row $s"
		bench "$section" "$row" "$round" "$s" "$@"
	done
}

load0=$(cut -d' ' -f1 /proc/loadavg)
start_time=$(date +%s)
echo "compare.sh: ports xkv ${port[xkv]} xkv1 ${port[xkv1]} redis ${port[redis]}" \
	"xkvpin ${port[xkvpin]} redispin ${port[redispin]}; $rounds round(s) of ${secs} s steps"
for round in $(seq "$rounds"); do
	echo "round $round"
	for cmd in get set; do
		for p in 1 16; do
			pair default "$cmd-P$p" "$round" "xkv xkv1 redis" -t 2 -c 25 -P "$p" \
				-d "$size" --command "$cmd"
			pair percore "$cmd-P$p" "$round" "xkvpin redispin" taskset -c 1 -t 1 -c 50 \
				-P "$p" -d "$size" --command "$cmd"
		done
	done
	for cmd in append incr lpush sadd hset; do
		pair command "$cmd-P16" "$round" "xkv redis" -t 2 -c 25 -P 16 -d 16 --command "$cmd" \
			--key-prefix "$cmd:"
	done
	pair sweep get "$round" "xkvpin redispin" taskset -c 1 -t 1 -c 50 -P "$sweep_pipeline" \
		-d "$size" --command get --sweep "$rates"
done
elapsed=$(($(date +%s) - start_time))

machine=$(machine_line "$load0")
versions="xkvd $("$xkvd" --version | sed 's/^xkvd v=\([^ ]*\).*/\1/')"
versions="$versions, redis-server $(redis-server --version | sed 's/.* v=\([^ ]*\).*/\1/')"
[ "$plots" = 1 ] && mkdir -p "$imgdir"
"$python" - "$tmp" "$doc" "$write_doc" "$plots" "$imgdir" "$cmdline" "$machine" "$versions" \
	"$rounds" "$secs" "$keys" "$rates" "$sweep_pipeline" "$elapsed" <<'EOF'
import datetime, glob, json, os, statistics, sys, textwrap
(tmp, doc, write_doc, plots, imgdir, cmdline, machine, versions,
 rounds, secs, keys, rates, sweep_pipeline, elapsed) = sys.argv[1:]
med = statistics.median

# data[(section, row)][server] = [step, ...] over the rounds; sweeps keep all steps.
data = {}
for path in sorted(glob.glob(os.path.join(tmp, '*.json'))):
    name = os.path.basename(path)[:-5]
    if name.startswith('prefill-'):
        continue
    section, row, rnd, server = name.split('.')
    d = json.load(open(path))
    data.setdefault((section, row), {}).setdefault(server, []).append(d)

def rps(section, row, server):
    return med(d['steps'][0]['achieved'] for d in data[(section, row)][server])

def lat(section, row, server, q):
    return med(d['steps'][0]['latency_us'][q] for d in data[(section, row)][server])

def fails(section, row, server):
    return sum(d['failures'] for d in data[(section, row)][server])

label = {'get': 'GET', 'set': 'SET', 'append': 'APPEND', 'incr': 'INCR', 'lpush': 'LPUSH',
         'sadd': 'SADD', 'hset': 'HSET'}
def rowname(row):
    cmd, p = row.split('-P')
    return '%s P%s' % (label[cmd], p)

order = ['get-P1', 'get-P16', 'set-P1', 'set-P16']
cmd_order = ['append-P16', 'incr-P16', 'lpush-P16', 'sadd-P16', 'hset-P16']
# table rows: (group, row name, xkv, redis, extra ratio or None, failures)
rows = []
for r in order:
    x, y, one = rps('default', r, 'xkv'), rps('default', r, 'redis'), rps('default', r, 'xkv1')
    f = sum(fails('default', r, s) for s in ('xkv', 'xkv1', 'redis'))
    rows.append(('default threads, unpinned', rowname(r), x, y, (one, x / one), f))
for r in order:
    x, y = rps('percore', r, 'xkvpin'), rps('percore', r, 'redispin')
    f = fails('percore', r, 'xkvpin') + fails('percore', r, 'redispin')
    rows.append(('per core (server CPU 0, client CPU 1)', rowname(r), x, y, None, f))
for r in cmd_order:
    x, y = rps('command', r, 'xkv'), rps('command', r, 'redis')
    rows.append(('commands, unpinned', rowname(r), x, y, None,
                 fails('command', r, 'xkv') + fails('command', r, 'redis')))

# The sweep: per rate, medians over the rounds; highest sustained rate per round, median.
sweep = {}
for server in ('xkvpin', 'redispin'):
    runs = data[('sweep', 'get')][server]
    per_rate = {}
    for d in runs:
        for s in d['steps']:
            per_rate.setdefault(s['rate'], []).append(s)
    highest = med(max([s['rate'] for s in d['steps'] if s['sustained']] or [0]) for d in runs)
    sweep[server] = dict(highest=highest, points=[
        (rate, med(s['achieved'] for s in ss), med(s['latency_us']['p50'] for s in ss),
         med(s['latency_us']['p99'] for s in ss), sum(bool(s['sustained']) for s in ss), len(ss))
        for rate, ss in sorted(per_rate.items())])
sweep_fail = sum(d['failures'] for s in ('xkvpin', 'redispin') for d in data[('sweep', 'get')][s])
hx, hr = sweep['xkvpin']['highest'], sweep['redispin']['highest']
# No ratio when redis sustained none of the rates offered: the sweep must
# start lower to measure it (None prints as n/a and decides nothing).
hratio = hx / hr if hr else None

def g(section, row, server):
    return rps(section, row, server)
pc = lambda r: g('percore', r, 'xkvpin') / g('percore', r, 'redispin')
dt = lambda r: g('default', r, 'xkv') / g('default', r, 'xkv1')
targets = [
    ('per core GET P16 xkv/redis', pc('get-P16'), 1.3),
    ('per core GET P1 xkv/redis', pc('get-P1'), 1.15),
] + [('default threads / 1 thread, %s' % rowname(r), dt(r), 0.95) for r in order] + [
    ('highest sustained GET rate xkv/redis', hratio, 1.5),
    ('APPEND P16 xkv/redis', g('command', 'append-P16', 'xkv') / g('command', 'append-P16', 'redis'), 1.0),
]

def num(v):
    return 'n/a' if v is None else '%.2f' % v

def verdict(v, least, miss='MISSES'):
    if v is None:
        return 'not measured (redis sustained none of the rates: start the sweep lower)'
    return 'holds' if v >= least else miss

# The terminal table.
print()
print('%-40s %-10s %10s %10s %6s %10s %7s %5s' % ('rows', 'test', 'xkv', 'redis', 'ratio',
                                                  'xkv 1 thr', 'def/1', 'fail'))
for grp, name, x, y, extra, f in rows:
    print('%-40s %-10s %10.0f %10.0f %6.2f %10s %7s %5d' % (
        grp, name, x, y, x / y, '%.0f' % extra[0] if extra else '-',
        '%.2f' % extra[1] if extra else '-', f))
print()
print('GET sweep (open loop, server CPU 0, xkv-bench -t 1 -c 50 on CPU 1, up to %s in flight per '
      'connection):' % sweep_pipeline)
print('%10s | %10s %9s %9s %5s | %10s %9s %9s %5s' % ('rate', 'xkv ach.', 'p50 us', 'p99 us',
                                                     'sust', 'redis ach.', 'p50 us', 'p99 us',
                                                     'sust'))
xs = dict((p[0], p) for p in sweep['xkvpin']['points'])
rs = dict((p[0], p) for p in sweep['redispin']['points'])
for rate in sorted(set(xs) | set(rs)):
    cells = []
    for pts in (xs, rs):
        p = pts.get(rate)
        cells.append('%10.0f %9.0f %9.0f %2d/%d' % p[1:] if p else '%10s %9s %9s %5s' % ('-',) * 4)
    print('%10d | %s | %s' % (rate, cells[0], cells[1]))
print('highest sustained: xkv %d, redis %d, ratio %s; failures %d' % (hx, hr, num(hratio),
                                                                     sweep_fail))
print()
for n, v, least in targets:
    print('%-45s %5s  (target >= %g: %s)' % (n, num(v), least, verdict(v, least)))
print('(%s s of measuring)' % elapsed)

# Plots.
if plots == '1':
    import subprocess
    with open(os.path.join(tmp, 'bars.dat'), 'w') as f:
        for grp, name, x, y, extra, _ in rows:
            tag = {'default threads, unpinned': '', 'commands, unpinned': ''}.get(grp, ' 1 core')
            f.write('"%s%s" %.1f %.1f\n' % (name, tag, x / 1000, y / 1000))
    for server, dat in (('xkvpin', 'xkv'), ('redispin', 'redis')):
        with open(os.path.join(tmp, 'sweep-%s.dat' % dat), 'w') as f:
            for rate, ach, p50, p99, ok, n in sweep[server]['points']:
                f.write('%d %.1f %.3f %.3f\n' % (rate, ach, p50 / 1000, p99 / 1000))
    bars = os.path.join(imgdir, 'bench-throughput.png')
    lines = os.path.join(imgdir, 'bench-sweep-latency.png')
    script = '''
set terminal pngcairo size 1200,600 font ",10"
set output "%(bars)s"
set title "xkv-bench throughput, median of %(rounds)s rounds (1 core: server on CPU 0, client on CPU 1)"
set ylabel "thousand requests/s"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set xtics rotate by -35 scale 0
set key top left
set grid ytics
plot "%(tmp)s/bars.dat" using 2:xtic(1) title "xkvd" lc rgb "#1f77b4", \
     "" using 3 title "redis-server" lc rgb "#d62728"
set output "%(lines)s"
unset style
set style data linespoints
set title "GET latency against offered rate (open loop, 50 connections, server on CPU 0, client on CPU 1), median of %(rounds)s rounds"
set xlabel "offered rate (requests/s)"
set ylabel "latency (ms)"
set logscale y
set xtics norotate auto scale 1
set key top left
set grid
plot "%(tmp)s/sweep-xkv.dat" using 1:3 title "xkvd p50" lc rgb "#1f77b4" pt 7, \
     "" using 1:4 title "xkvd p99" lc rgb "#1f77b4" dt 2 pt 5, \
     "%(tmp)s/sweep-redis.dat" using 1:3 title "redis p50" lc rgb "#d62728" pt 7, \
     "" using 1:4 title "redis p99" lc rgb "#d62728" dt 2 pt 5
''' % dict(bars=bars, lines=lines, tmp=tmp, rounds=rounds)
    subprocess.run(['gnuplot'], input=script, text=True, check=True)
    print('wrote %s and %s' % (bars, lines))

if write_doc != '1':
    sys.exit(0)

def wrap(text):
    return textwrap.wrap(text, 95, break_long_words=False, break_on_hyphens=False)

when = datetime.datetime.now().strftime('%Y-%m-%d %H:%M')
sec = ['## Side by side: xkv-bench', '']
sec += wrap(
    '`tools/bench/compare.sh` starts xkvd (`--fastpath no`) and redis-server (`--save \'\' '
    '--appendonly no`) on free loopback ports, prefills each with the same %s keys of 256 '
    'bytes, and runs the same xkv-bench loads on them in alternation (the order flips every '
    'round); every figure is the median over the rounds. Unpinned rows: xkv-bench -t 2 -c 25 '
    '(50 connections), xkvd with its default threads (one per CPU), compared with redis and '
    'with an xkvd started with `--threads 1`. Per-core rows: xkvd `--threads 1` and '
    'redis-server under `taskset -c 0`, xkv-bench -t 1 -c 50 under `taskset -c 1`. Command rows '
    'use 16-byte values on keys of their own. The sweep is GET in open loop (no coordinated '
    'omission) at fixed rates, up to %s requests in flight per connection, pinned as the '
    'per-core rows (so the generator never takes CPU from the server it measures); a rate is '
    'sustained when at least 97%% of it is achieved.' % (keys, sweep_pipeline)) + ['']
sec += ['### Run of %s' % when, '']
sec += wrap('`%s`: %s; %s; %s rounds of %s s steps (%s s of measuring). The machine is shared '
            'with other work: read the ratios, and compare runs.' % (
                cmdline, machine, versions, rounds, secs, elapsed))
sec += ['', '| rows | test | xkv req/s | redis req/s | xkv/redis | xkv 1 thread req/s | '
        'default/1 thread | failures |', '|---|---|---:|---:|---:|---:|---:|---:|']
for grp, name, x, y, extra, f in rows:
    sec.append('| %s | %s | %.0f | %.0f | %.2f | %s | %s | %d |' % (
        grp, name, x, y, x / y, '%.0f' % extra[0] if extra else '-',
        '%.2f' % extra[1] if extra else '-', f))
sec += [''] + wrap('GET sweep, rates `%s`: the highest sustained rate (the highest rate '
                   'sustained in a round, median over the rounds) is xkv %d, redis %d '
                   '(xkv/redis %s); failures %d.' % (rates, hx, hr, num(hratio), sweep_fail))
sec += ['', '| offered req/s | xkv achieved | xkv p50 µs | xkv p99 µs | xkv sustained | '
        'redis achieved | redis p50 µs | redis p99 µs | redis sustained |',
        '|---:|---:|---:|---:|---:|---:|---:|---:|---:|']
for rate in sorted(set(xs) | set(rs)):
    cells = []
    for pts in (xs, rs):
        p = pts.get(rate)
        cells.append('%.0f | %.0f | %.0f | %d/%d' % p[1:] if p else '- | - | - | -')
    sec.append('| %d | %s | %s |' % (rate, cells[0], cells[1]))
sec += ['', '| target | value | |', '|---|---:|---|']
for n, v, least in targets:
    sec.append('| %s ≥ %g | %s | %s |' % (n, least, num(v), verdict(v, least, '**misses**')))
if plots == '1':
    rel = os.path.relpath(imgdir, os.path.dirname(os.path.abspath(doc)) or '.')
    sec += ['', '![throughput](%s/bench-throughput.png)' % rel, '',
            '![GET latency against offered rate](%s/bench-sweep-latency.png)' % rel]

text = open(doc).read() if os.path.exists(doc) else '# Benchmarks\n'
lines = text.rstrip('\n').split('\n')
title = '## Side by side: xkv-bench'
if title in lines:
    start = lines.index(title)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith('## ')),
               len(lines))
    lines[start:end] = sec + ([''] if end < len(lines) else [])
else:
    lines += [''] + sec
open(doc, 'w').write('\n'.join(lines).rstrip('\n') + '\n')
print('wrote %s' % doc)
EOF
