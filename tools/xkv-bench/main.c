// SPDX-License-Identifier: BSD-3-Clause
/*
 * xkv-bench: a load generator for RESP servers. This file is the command
 * line: the option table, its checks, and the order of the steps (prefill,
 * then one closed- or open-loop step or a sweep of open-loop steps). The
 * README next to it is the manual.
 *
 * Exit status: 0 when every step ran without an error reply, a lost request
 * or a broken connection; 1 otherwise or when the server cannot be reached;
 * 2 for a bad command line.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <linux/types.h>

#include "bench.h"
#include "report.h"
#include "xkv_abi.h"

#define MAX_THREADS 1024
#define MAX_CONNS 100000 /* over all threads */
#define MAX_PIPELINE 100000
#define MAX_DATA_SIZE (512ULL << 20)
#define MAX_SWEEP 64
#define PREFILL_PIPELINE 16

enum {
	OPT_SWEEP = 256,
	OPT_KEY_PREFIX,
	OPT_KEY_PATTERN,
	OPT_ZIPF_S,
	OPT_COMMAND,
	OPT_RATIO,
	OPT_PREFILL,
	OPT_RESP,
	OPT_SEED,
	OPT_JSON,
	OPT_TRANSPORT,
	OPT_UDP_PAD,
	OPT_UDP_TOKEN,
	OPT_HELP,
};

static const struct option long_opts[] = {
	{ "host", required_argument, NULL, 'h' },
	{ "port", required_argument, NULL, 'p' },
	{ "threads", required_argument, NULL, 't' },
	{ "connections", required_argument, NULL, 'c' },
	{ "pipeline", required_argument, NULL, 'P' },
	{ "requests", required_argument, NULL, 'n' },
	{ "test-time", required_argument, NULL, 'T' },
	{ "rate", required_argument, NULL, 'r' },
	{ "sweep", required_argument, NULL, OPT_SWEEP },
	{ "keys", required_argument, NULL, 'k' },
	{ "key-prefix", required_argument, NULL, OPT_KEY_PREFIX },
	{ "key-pattern", required_argument, NULL, OPT_KEY_PATTERN },
	{ "zipf-s", required_argument, NULL, OPT_ZIPF_S },
	{ "data-size", required_argument, NULL, 'd' },
	{ "command", required_argument, NULL, OPT_COMMAND },
	{ "ratio", required_argument, NULL, OPT_RATIO },
	{ "prefill", no_argument, NULL, OPT_PREFILL },
	{ "resp", required_argument, NULL, OPT_RESP },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "transport", required_argument, NULL, OPT_TRANSPORT },
	{ "udp-pad", required_argument, NULL, OPT_UDP_PAD },
	{ "udp-token", required_argument, NULL, OPT_UDP_TOKEN },
	{ "help", no_argument, NULL, OPT_HELP },
	{ 0 },
};

static const char usage_text[] =
	"usage: xkv-bench [options]\n"
	"  -h, --host HOST          server address (127.0.0.1)\n"
	"  -p, --port PORT          server port (6379)\n"
	"  -t, --threads N          worker threads (4)\n"
	"  -c, --connections N      connections per thread (50)\n"
	"  -P, --pipeline N         requests in flight per connection (1)\n"
	"  -n, --requests N         requests per step (default: bounded by --test-time)\n"
	"  -T, --test-time S        seconds per step (10)\n"
	"  -r, --rate N             open loop: N requests/s over all connections\n"
	"      --sweep N1,N2,...    one open-loop step per rate, then a table\n"
	"  -k, --keys N             key space size (100000)\n"
	"      --key-prefix STR     key prefix (key:)\n"
	"      --key-pattern P      sequential, uniform or zipf (uniform)\n"
	"      --zipf-s S           zipf exponent (0.99)\n"
	"  -d, --data-size B        value size in bytes (32)\n"
	"      --command CMD        get, set, incr, append, lpush, sadd, hset, ... or a\n"
	"                           template such as \"LPUSH __key__ __data__\"\n"
	"      --ratio S:G          SET:GET mix when no --command (1:10)\n"
	"      --prefill            SET every key once before the first step\n"
	"      --resp 2|3           protocol version; 3 says HELLO 3 first (2)\n"
	"      --seed N             seed for keys and values (fixed)\n"
	"      --json               print the results as JSON only\n"
	"      --transport tcp|udp  udp: xkvd's datagram protocol, GET and PING only (tcp)\n"
	"      --udp-pad B          UDP payload a request is padded to (1200)\n"
	"      --udp-token N        the server's fastpath-token, if it has requirepass (0)\n"
	"      --help               this text\n"
	"Numbers take a k (1000) or M (1000000) suffix.\n";

struct cli {
	struct bench_opts o;
	uint64_t rate;
	uint64_t sweep[MAX_SWEEP];
	unsigned nsweep;
	bool prefill, json, time_set;
};

static void __attribute__((noreturn, format(printf, 1, 2))) usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("xkv-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'xkv-bench --help'.\n", stderr);
	exit(2);
}

/* A count with an optional k or M suffix, in [lo, hi]. */
static uint64_t parse_count(const char *name, const char *s, uint64_t lo, uint64_t hi)
{
	unsigned long long v;
	uint64_t mul = 1;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end == 'k' || *end == 'K')
		mul = 1000, end++;
	else if (*end == 'M')
		mul = 1000000, end++;
	if (errno || end == s || *end || s[0] == '-' || v > hi / mul || v * mul < lo)
		usage_error("--%s: expected a number in %llu..%llu, got '%s'", name,
			    (unsigned long long)lo, (unsigned long long)hi, s);
	return v * mul;
}

static double parse_real(const char *name, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v <= 0)
		usage_error("--%s: expected a positive number, got '%s'", name, s);
	return v;
}

static void parse_ratio(struct cli *cli, const char *s)
{
	unsigned set, get;
	int used = 0;

	if (sscanf(s, "%u:%u%n", &set, &get, &used) != 2 || s[used] || (!set && !get) ||
	    set > 1000000 || get > 1000000)
		usage_error("--ratio: expected SET:GET such as 1:10, got '%s'", s);
	cli->o.load.ratio_set = set;
	cli->o.load.ratio_get = get;
}

static void parse_sweep(struct cli *cli, const char *s)
{
	char *copy = strdup(s), *save = NULL;

	if (!copy)
		usage_error("out of memory");
	cli->nsweep = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (cli->nsweep == MAX_SWEEP)
			usage_error("--sweep: at most %d rates", MAX_SWEEP);
		cli->sweep[cli->nsweep++] = parse_count("sweep", tok, 1, 1000000000);
	}
	free(copy);
	if (!cli->nsweep)
		usage_error("--sweep: expected rates such as 10000,20000,40000");
}

static void parse_args(struct cli *cli, int argc, char **argv)
{
	bool ratio_set = false;
	int opt;

	bench_opts_init(&cli->o);
	while ((opt = getopt_long(argc, argv, "h:p:t:c:P:n:T:r:k:d:", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			cli->o.host = optarg;
			break;
		case 'p':
			cli->o.port = (unsigned)parse_count("port", optarg, 1, 65535);
			break;
		case 't':
			cli->o.threads = (unsigned)parse_count("threads", optarg, 1, MAX_THREADS);
			break;
		case 'c':
			cli->o.conns = (unsigned)parse_count("connections", optarg, 1, MAX_CONNS);
			break;
		case 'P':
			cli->o.pipeline =
				(unsigned)parse_count("pipeline", optarg, 1, MAX_PIPELINE);
			break;
		case 'n':
			cli->o.requests = parse_count("requests", optarg, 1, UINT64_MAX / 2);
			break;
		case 'T':
			cli->o.test_time = parse_real("test-time", optarg);
			if (cli->o.test_time > 1e6)
				usage_error("--test-time: at most 1000000 s");
			cli->time_set = true;
			break;
		case 'r':
			cli->rate = parse_count("rate", optarg, 1, 1000000000);
			break;
		case OPT_SWEEP:
			parse_sweep(cli, optarg);
			break;
		case 'k':
			cli->o.load.keys = parse_count("keys", optarg, 1, UINT64_MAX / 2);
			break;
		case OPT_KEY_PREFIX:
			cli->o.load.key_prefix = optarg;
			break;
		case OPT_KEY_PATTERN:
			if (key_pattern_parse(optarg, &cli->o.load.pattern))
				usage_error("--key-pattern: sequential, uniform or zipf, not '%s'",
					    optarg);
			break;
		case OPT_ZIPF_S:
			cli->o.load.zipf_s = parse_real("zipf-s", optarg);
			break;
		case 'd':
			cli->o.load.data_size = parse_count("data-size", optarg, 0, MAX_DATA_SIZE);
			break;
		case OPT_COMMAND:
			cli->o.load.command = optarg;
			break;
		case OPT_RATIO:
			parse_ratio(cli, optarg);
			ratio_set = true;
			break;
		case OPT_PREFILL:
			cli->prefill = true;
			break;
		case OPT_RESP:
			cli->o.resp = (unsigned)parse_count("resp", optarg, 2, 3);
			break;
		case OPT_SEED:
			cli->o.load.seed = parse_count("seed", optarg, 0, UINT64_MAX);
			break;
		case OPT_JSON:
			cli->json = true;
			break;
		case OPT_TRANSPORT:
			cli->o.transport = transport_find(optarg);
			if (!cli->o.transport)
				usage_error("--transport: tcp or udp, not '%s'", optarg);
			break;
		case OPT_UDP_PAD:
			cli->o.topts.udp_pad = (unsigned)parse_count(
				"udp-pad", optarg, sizeof(struct xkv_udp_hdr), TRANSPORT_UDP_MAX);
			break;
		case OPT_UDP_TOKEN:
			cli->o.topts.udp_token = parse_count("udp-token", optarg, 0, UINT64_MAX);
			break;
		case OPT_HELP:
			fputs(usage_text, stdout);
			exit(0);
		default:
			/* getopt_long() said what was wrong. */
			fputs("Try 'xkv-bench --help'.\n", stderr);
			exit(2);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (cli->o.load.command && ratio_set)
		usage_error("--command and --ratio exclude each other");
	if (cli->rate && cli->nsweep)
		usage_error("--rate and --sweep exclude each other");
	if ((uint64_t)cli->o.threads * cli->o.conns > MAX_CONNS)
		usage_error("at most %d connections in all", MAX_CONNS);
	if (cli->o.transport->datagram && cli->o.resp != 2)
		usage_error("--transport udp speaks RESP2 only");
	/* A thread's connections share one socket and tell their replies apart by id. */
	if (cli->o.transport->datagram && cli->o.conns > TRANSPORT_UDP_MAX_CONNS)
		usage_error("--transport udp: at most %d connections per thread",
			    TRANSPORT_UDP_MAX_CONNS);
	if (cli->o.transport->datagram && cli->o.pipeline > TRANSPORT_UDP_MAX_WINDOW)
		usage_error("--transport udp: a pipeline of at most %u", TRANSPORT_UDP_MAX_WINDOW);
	/* --requests alone bounds a step by its count, not by the default time. */
	if (cli->o.requests && !cli->time_set)
		cli->o.test_time = 0;
	cli->o.progress = !cli->json && isatty(STDOUT_FILENO);
}

/*
 * UDP serves GET and PING only (daemon/udp.c): any other command would be
 * answered with an error, so refuse it here. 0, or -EINVAL with a message.
 */
static int check_datagram_workload(const struct workload *w, char *why, size_t len)
{
	for (unsigned i = 0; i < w->ncmd; i++) {
		const char *name = w->cmd[i].name;

		if (!w->weight[i])
			continue;
		if (strcasecmp(name, "GET") && strcasecmp(name, "PING")) {
			snprintf(why, len,
				 "--transport udp: only GET and PING are served over UDP, not %s "
				 "(use --command get or --ratio 0:1)",
				 name);
			return -EINVAL;
		}
	}
	if (w->max_len + sizeof(struct xkv_udp_hdr) > TRANSPORT_UDP_MAX) {
		snprintf(why, len, "--transport udp: a %zu-byte request does not fit a datagram",
			 w->max_len);
		return -EINVAL;
	}
	return 0;
}

static void on_sigint(int sig)
{
	(void)sig;
	atomic_store(&bench_stop, true);
}

/* Runs one step; prints why it could not start. 0 or -errno. */
static int run_step(const struct bench_opts *o, const struct workload *w,
		    const struct bench_step *step, struct bench_result *res)
{
	int err = bench_run(o, w, step, res);

	if (err)
		fprintf(stderr, "xkv-bench: %s\n", res->first_error);
	return err;
}

/*
 * SETs every key once, each connection its own share, in order. Always over
 * TCP: UDP takes no SET, and xkvd serves both on the same port.
 */
static int prefill(const struct cli *cli, struct bench_result *res)
{
	struct workload_spec spec = cli->o.load;
	struct bench_step step = { .label = "prefill" };
	struct bench_opts o = cli->o;
	struct workload w;
	char why[160];
	int err;

	o.transport = &transport_tcp;
	spec.command = "set";
	spec.pattern = KEY_SEQUENTIAL;
	err = workload_init(&w, &spec, why, sizeof(why));
	if (err) {
		fprintf(stderr, "xkv-bench: %s\n", why);
		return err;
	}
	step.requests = spec.keys;
	step.pipeline = cli->o.pipeline > PREFILL_PIPELINE ? cli->o.pipeline : PREFILL_PIPELINE;
	err = run_step(&o, &w, &step, res);
	workload_free(&w);
	return err;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_sigint, .sa_flags = SA_RESETHAND };
	struct bench_result *pre = NULL, *steps;
	struct report_run run = { 0 };
	struct cli *cli = calloc(1, sizeof(*cli));
	struct workload w;
	char why[160];
	bool failed = false;
	unsigned nsteps;
	int err = 0;

	if (!cli)
		return 1;
	parse_args(cli, argc, argv);
	if (workload_init(&w, &cli->o.load, why, sizeof(why)))
		usage_error("%s", why);
	if (cli->o.transport->datagram && check_datagram_workload(&w, why, sizeof(why)))
		usage_error("%s", why);
	run.o = &cli->o;
	run.w = &w;
	run.mode = cli->nsweep ? "sweep" : cli->rate ? "open" : "closed";
	run.nsteps = cli->nsweep ? cli->nsweep : 1;
	steps = calloc(run.nsteps, sizeof(*steps));
	pre = cli->prefill ? calloc(1, sizeof(*pre)) : NULL;
	if (!steps || (cli->prefill && !pre)) {
		fprintf(stderr, "xkv-bench: out of memory\n");
		return 1;
	}
	run.steps = steps;
	/* ^C ends the step early and still reports; a second ^C kills. */
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (!cli->json)
		report_header(stdout, &run);

	if (pre) {
		err = prefill(cli, pre);
		if (err)
			goto end;
		run.prefill = pre;
		failed |= bench_failed(pre);
		if (!cli->json)
			report_step(stdout, "prefill", pre);
	}
	if (cli->nsweep && !cli->json)
		report_sweep_header(stdout);
	nsteps = run.nsteps;
	run.nsteps = 0;
	for (unsigned i = 0; i < nsteps && !atomic_load(&bench_stop); i++) {
		struct bench_step step;
		uint64_t rate = cli->nsweep ? cli->sweep[i] : cli->rate;

		bench_step_from_opts(&step, &cli->o, rate);
		err = run_step(&cli->o, &w, &step, &steps[i]);
		if (err)
			goto end;
		run.nsteps++;
		failed |= bench_failed(&steps[i]);
		if (cli->json)
			continue;
		if (cli->nsweep)
			report_sweep_row(stdout, &steps[i]);
		else
			report_step(stdout, rate ? "open loop" : "closed loop", &steps[i]);
	}
	if (cli->json)
		report_json(stdout, &run);
	if (failed && !cli->json)
		fprintf(stdout, "FAILED: the server answered with errors or lost requests\n");
end:
	workload_free(&w);
	free(steps);
	free(pre);
	free(cli);
	return err || failed ? 1 : 0;
}
