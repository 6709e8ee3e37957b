// SPDX-License-Identifier: BSD-3-Clause
/*
 * xkvctl: the fast-path CLI (the man page is tools/xkvctl/README.md).
 *
 *   xkvctl [OPTIONS] COMMAND [ARGS]
 *
 * Global options come before the command; each command is a row of the
 * commands[] table (name, handler, arguments, help) and parses its own
 * arguments. Exit status: 0 success, 1 a negative answer (no such key, the
 * fast path not attached), 2 an error (usage, connection, an error reply).
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libxkv.h"

#define EXIT_NEGATIVE 1
#define EXIT_ERROR 2

struct opts {
	const char *host;
	unsigned long long port, token, timeout_ms, pad, retries;
	const char *password;
	bool verbose;
};

/* What a command handler gets: the client, the options, and its argv (argv[0] its name). */
struct ctl {
	struct xkv *x;
	struct opts *o;
	int argc;
	char **argv;
};

struct command {
	const char *name;
	int (*run)(struct ctl *ctl);
	const char *args;
	const char *help;
};

static void usage(FILE *f);

/* Prints "xkvctl: what: why" for a failed libxkv call r. */
static int fail(struct xkv *x, const char *what, int r)
{
	const char *why = x && *xkv__errmsg(x) ? xkv__errmsg(x) : strerror(-r);

	fprintf(stderr, "xkvctl: %s: %s\n", what, why);
	return EXIT_ERROR;
}

/* ---- reading replies ---------------------------------------------------------- */

/*
 * libxkv hands back complete, well-formed replies; these read the few shapes
 * xkvctl needs. resp_scalar takes one bulk string, simple string or integer
 * at *p into s/n and advances *p; -1 for anything else.
 */
static int resp_scalar(const char **p, const char *end, const char **s, size_t *n)
{
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	long long len;

	if (!nl || nl - *p < 3)
		return -1;
	if (**p == '+' || **p == ':') {
		*s = *p + 1;
		*n = (size_t)(nl - 1 - *s);
		*p = nl + 1;
		return 0;
	}
	if (**p != '$')
		return -1;
	len = strtoll(*p + 1, NULL, 10);
	if (len < 0 || len > end - nl - 3)
		return -1;
	*s = nl + 1;
	*n = (size_t)len;
	*p = nl + 1 + len + 2;
	return 0;
}

/* The value of name in a FASTPATH STATS reply (a flat array or a RESP3 map), or NULL;
 * the value is copied into buf. */
static const char *stats_field(const char *reply, size_t len, const char *name, char *buf,
			       size_t size)
{
	const char *p = reply, *end = reply + len, *k, *v;
	size_t kn, vn;
	long pairs;

	if (len < 4 || (reply[0] != '*' && reply[0] != '%'))
		return NULL;
	pairs = strtol(reply + 1, NULL, 10) / (reply[0] == '*' ? 2 : 1);
	p = memchr(p, '\n', len);
	if (!p)
		return NULL;
	p++;
	for (long i = 0; i < pairs; i++) {
		if (resp_scalar(&p, end, &k, &kn) < 0 || resp_scalar(&p, end, &v, &vn) < 0)
			return NULL;
		if (kn == strlen(name) && memcmp(k, name, kn) == 0) {
			snprintf(buf, size, "%.*s", (int)vn, v);
			return buf;
		}
	}
	return NULL;
}

/* Prints an error reply as "xkvctl: what: text"; true if it was one. */
static bool print_error_reply(const char *what, const char *reply, size_t len)
{
	if (!len || reply[0] != '-')
		return false;
	while (len && (reply[len - 1] == '\r' || reply[len - 1] == '\n'))
		len--;
	fprintf(stderr, "xkvctl: %s: %.*s\n", what, (int)len - 1, reply + 1);
	return true;
}

/* ---- commands ------------------------------------------------------------------- */

static int cmd_get(struct ctl *ctl)
{
	struct xkv *x = ctl->x;
	struct opts *o = ctl->o;
	int argc = ctl->argc;
	char **argv = ctl->argv;
	static const struct option longopts[] = { { "verbose", no_argument, NULL, 'v' }, {} };
	size_t vlen = 0;
	unsigned how = 0;
	char *value = NULL;
	int c, r;

	optind = 0;
	while ((c = getopt_long(argc, argv, "+v", longopts, NULL)) != -1) {
		if (c != 'v')
			return EXIT_ERROR;
		o->verbose = true;
	}
	if (argc - optind != 1) {
		fprintf(stderr, "usage: xkvctl get [-v] KEY\n");
		return EXIT_ERROR;
	}
	r = xkv__get(x, argv[optind], strlen(argv[optind]), &value, &vlen, &how);
	if (o->verbose && how)
		fprintf(stderr, "via %s\n", xkv__via_name(how));
	if (r < 0)
		return fail(x, "get", r);
	if (r == 1) {
		fprintf(stderr, "xkvctl: get: no such key\n");
		return EXIT_NEGATIVE;
	}
	fwrite(value, 1, vlen, stdout);
	putchar('\n');
	free(value);
	return fflush(stdout) == 0 ? 0 : EXIT_ERROR;
}

/* Prints each value on a line of its own, "(nil)" for a missing key. */
static int cmd_mget(struct ctl *ctl)
{
	struct xkv *x = ctl->x;
	struct opts *o = ctl->o;
	int argc = ctl->argc, nkeys, c, r;
	char **argv = ctl->argv, **values;
	static const struct option longopts[] = { { "verbose", no_argument, NULL, 'v' }, {} };
	unsigned how = 0;
	size_t *vlens;

	optind = 0;
	while ((c = getopt_long(argc, argv, "+v", longopts, NULL)) != -1) {
		if (c != 'v')
			return EXIT_ERROR;
		o->verbose = true;
	}
	nkeys = argc - optind;
	if (nkeys < 1) {
		fprintf(stderr, "usage: xkvctl mget [-v] KEY...\n");
		return EXIT_ERROR;
	}
	values = calloc((size_t)nkeys, sizeof(*values));
	vlens = calloc((size_t)nkeys, sizeof(*vlens));
	if (!values || !vlens) {
		free(values);
		free(vlens);
		return fail(NULL, "mget", -ENOMEM);
	}
	r = xkv__mget(x, nkeys, (const char *const *)argv + optind, NULL, values, vlens, &how);
	if (o->verbose && how)
		fprintf(stderr, "via %s\n", xkv__via_name(how));
	if (r < 0) {
		r = fail(x, "mget", r);
		goto out;
	}
	for (int i = 0; i < nkeys; i++) {
		if (values[i])
			fwrite(values[i], 1, vlens[i], stdout);
		else
			fputs("(nil)", stdout);
		putchar('\n');
		if (!values[i])
			r = EXIT_NEGATIVE;
		free(values[i]);
	}
	if (fflush(stdout) != 0)
		r = EXIT_ERROR;
out:
	free(values);
	free(vlens);
	return r;
}

/* Sends argv over TCP; 0 with the reply, or the exit status after saying why. */
static int tcp_call(struct xkv *x, const char *what, int argc, const char **argv, char **reply,
		    size_t *len)
{
	int r = xkv__command(x, argc, argv, NULL, reply, len);

	if (r < 0)
		return fail(x, what, r);
	if (print_error_reply(what, *reply, *len)) {
		free(*reply);
		return EXIT_ERROR;
	}
	return 0;
}

static int cmd_stats(struct ctl *ctl)
{
	struct xkv *x = ctl->x;
	int argc = ctl->argc;
	const char *args[] = { "FASTPATH", "STATS" };
	const char *p, *end, *k, *v;
	size_t len, kn, vn;
	char *reply;
	long n;
	int r;

	if (argc != 1) {
		fprintf(stderr, "usage: xkvctl stats\n");
		return EXIT_ERROR;
	}
	r = tcp_call(x, "stats", 2, args, &reply, &len);
	if (r)
		return r;
	r = EXIT_ERROR;
	if (reply[0] != '*' && reply[0] != '%')
		goto bad;
	n = strtol(reply + 1, NULL, 10) / (reply[0] == '*' ? 2 : 1);
	p = strchr(reply, '\n') + 1;
	end = reply + len;
	for (long i = 0; i < n; i++) {
		if (resp_scalar(&p, end, &k, &kn) < 0 || resp_scalar(&p, end, &v, &vn) < 0)
			goto bad;
		printf("%.*s: %.*s\n", (int)kn, k, (int)vn, v);
	}
	free(reply);
	return 0;

bad:
	fprintf(stderr, "xkvctl: stats: unexpected reply: %.60s\n", reply);
	free(reply);
	return r;
}

static int cmd_status(struct ctl *ctl)
{
	struct xkv *x = ctl->x;
	int argc = ctl->argc;
	const char *args[] = { "FASTPATH", "STATS" };
	char enabled[8], ifaces[256], used[32], total[32];
	size_t len;
	char *reply;
	int r;

	if (argc != 1) {
		fprintf(stderr, "usage: xkvctl status\n");
		return EXIT_ERROR;
	}
	r = tcp_call(x, "status", 2, args, &reply, &len);
	if (r)
		return r;
	if (!stats_field(reply, len, "fastpath_enabled", enabled, sizeof(enabled))) {
		fprintf(stderr, "xkvctl: status: no fastpath_enabled in FASTPATH STATS\n");
		free(reply);
		return EXIT_ERROR;
	}
	if (strcmp(enabled, "1") != 0) {
		printf("fast path: not loaded\n");
		r = EXIT_NEGATIVE;
	} else if (!stats_field(reply, len, "fastpath_interfaces", ifaces, sizeof(ifaces)) ||
		   !ifaces[0]) {
		printf("fast path: loaded, not attached\n");
		r = EXIT_NEGATIVE;
	} else {
		printf("fast path: loaded, attached to %s\n", ifaces);
	}
	if (stats_field(reply, len, "fastpath_slots_used", used, sizeof(used)) &&
	    stats_field(reply, len, "fastpath_slots_total", total, sizeof(total)))
		printf("slots: %s of %s used\n", used, total);
	free(reply);
	return r;
}

/* FASTPATH ATTACH / DETACH: prints OK or the error. */
static int steer(struct xkv *x, const char *what, int argc, const char **args)
{
	size_t len;
	char *reply;
	int r = tcp_call(x, what, argc, args, &reply, &len);

	if (r)
		return r;
	if (len == 5 && memcmp(reply, "+OK\r\n", 5) == 0) {
		printf("OK\n");
	} else {
		fprintf(stderr, "xkvctl: %s: unexpected reply: %.60s\n", what, reply);
		r = EXIT_ERROR;
	}
	free(reply);
	return r;
}

static int cmd_attach(struct ctl *ctl)
{
	struct xkv *x = ctl->x;
	int argc = ctl->argc;
	char **argv = ctl->argv;
	const char **args = calloc((size_t)argc + 1, sizeof(*args));
	int r;

	if (!args)
		return fail(NULL, "attach", -ENOMEM);
	args[0] = "FASTPATH";
	args[1] = "ATTACH";
	for (int i = 1; i < argc; i++)
		args[i + 1] = argv[i];
	r = steer(x, "attach", argc + 1, args);
	free(args);
	return r;
}

static int cmd_detach(struct ctl *ctl)
{
	struct xkv *x = ctl->x;
	int argc = ctl->argc;
	const char *args[] = { "FASTPATH", "DETACH" };

	if (argc != 1) {
		fprintf(stderr, "usage: xkvctl detach\n");
		return EXIT_ERROR;
	}
	return steer(x, "detach", 2, args);
}

static int cmd_udp(struct ctl *ctl)
{
	struct xkv *x = ctl->x;
	struct opts *o = ctl->o;
	int argc = ctl->argc;
	char **argv = ctl->argv;
	const char *p, *s;
	unsigned how = 0;
	size_t len, n;
	char *reply;
	int r;

	if (argc < 2) {
		fprintf(stderr, "usage: xkvctl udp COMMAND [ARG...]\n");
		return EXIT_ERROR;
	}
	r = xkv__udp_command(x, argc - 1, (const char **)argv + 1, NULL, &reply, &len, &how);
	if (o->verbose && how)
		fprintf(stderr, "via %s\n", xkv__via_name(how));
	if (r < 0)
		return fail(x, "udp", r);
	p = reply;
	if (print_error_reply("udp", reply, len)) {
		r = EXIT_ERROR;
	} else if (len == 5 && memcmp(reply, "$-1\r\n", 5) == 0) {
		printf("(nil)\n");
		r = EXIT_NEGATIVE;
	} else if (resp_scalar(&p, reply + len, &s, &n) == 0) {
		fwrite(s, 1, n, stdout);
		putchar('\n');
	} else {
		fwrite(reply, 1, len, stdout);
	}
	free(reply);
	return r;
}

static int cmd_help(struct ctl *ctl)
{
	(void)ctl;
	usage(stdout);
	return 0;
}

static const struct command commands[] = {
	{ "get", cmd_get, "[-v] KEY", "print KEY's value, over UDP with the TCP fallback" },
	{ "mget", cmd_mget, "[-v] KEY...", "print each KEY's value on a line, (nil) if missing" },
	{ "stats", cmd_stats, "", "print the fast path's counters (FASTPATH STATS)" },
	{ "status", cmd_status, "", "is the fast path loaded and attached, and where" },
	{ "attach", cmd_attach, "[IFACE...]", "attach the fast path (default: as configured)" },
	{ "detach", cmd_detach, "", "detach the fast path from every interface" },
	{ "udp", cmd_udp, "COMMAND [ARG...]",
	  "send one command in one datagram (GET, MGET, PING)" },
	{ "help", cmd_help, "", "this text" },
	{}
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xkvctl [OPTIONS] COMMAND [ARGS]\n"
		"\n"
		"Options:\n"
		"  -h, --host HOST        server name or address (default 127.0.0.1)\n"
		"  -p, --port PORT        TCP and UDP port (default 6379)\n"
		"  -a, --password PASS    the requirepass password: AUTH over TCP, and the UDP\n"
		"                         token derived from it (default: $XKV_PASSWORD)\n"
		"  -P PASS                the same as -a\n"
		"      --token TOKEN      the server's fastpath-token, when it sets one\n"
		"  -t, --timeout MS       wait per UDP attempt (default %d)\n"
		"      --retries N        UDP attempts after the first (default %d)\n"
		"      --pad BYTES        size of a GET or MGET request datagram (default %d)\n"
		"  -v, --verbose          say how each reply came (kernel, daemon udp, tcp)\n"
		"      --help             this text\n"
		"\n"
		"Commands:\n",
		XKV_DEFAULT_TIMEOUT_MS, XKV_DEFAULT_RETRIES, XKV_DEFAULT_PADDING);
	for (const struct command *c = commands; c->name; c++) {
		char head[48];

		snprintf(head, sizeof(head), "%s %s", c->name, c->args);
		fprintf(f, "  %-22s %s\n", head, c->help);
	}
	fprintf(f, "\nExit status: 0 success, 1 no such key (any, for mget) / not attached, "
		   "2 error.\n");
}

/* Parses a decimal option value in [lo, hi] into *v; false (after saying so) if it is not one. */
static bool parse_num(const char *name, const char *s, unsigned long long lo, unsigned long long hi,
		      unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	if (!*s || *end || errno || *s == '-' || *v < lo || *v > hi) {
		fprintf(stderr, "xkvctl: %s: expected a number in %llu..%llu, got '%s'\n", name, lo,
			hi, s);
		return false;
	}
	return true;
}

enum { OPT_PAD = 256, OPT_RETRIES, OPT_TOKEN, OPT_HELP };

static const struct option main_options[] = {
	{ "host", required_argument, NULL, 'h' },
	{ "port", required_argument, NULL, 'p' },
	{ "token", required_argument, NULL, OPT_TOKEN },
	{ "password", required_argument, NULL, 'a' },
	{ "timeout", required_argument, NULL, 't' },
	{ "pad", required_argument, NULL, OPT_PAD },
	{ "retries", required_argument, NULL, OPT_RETRIES },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, OPT_HELP },
	{},
};

int main(int argc, char **argv)
{
	struct opts o = { .host = "127.0.0.1",
			  .port = 6379,
			  .timeout_ms = XKV_DEFAULT_TIMEOUT_MS,
			  .pad = XKV_DEFAULT_PADDING,
			  .retries = XKV_DEFAULT_RETRIES,
			  .password = getenv("XKV_PASSWORD") };
	const struct command *cmd;
	struct ctl ctl;
	struct xkv *x;
	bool ok = true;
	int c, r;

	while ((c = getopt_long(argc, argv, "+h:p:a:P:t:v", main_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			o.host = optarg;
			break;
		case 'p':
			ok = parse_num("port", optarg, 1, 65535, &o.port);
			break;
		case OPT_TOKEN:
			ok = parse_num("token", optarg, 0, UINT64_MAX, &o.token);
			break;
		case 'a':
		case 'P':
			o.password = optarg;
			break;
		case 't':
			ok = parse_num("timeout", optarg, 1, 3600000, &o.timeout_ms);
			break;
		case OPT_PAD:
			ok = parse_num("pad", optarg, 24, XKV_MAX_DATAGRAM, &o.pad);
			break;
		case OPT_RETRIES:
			ok = parse_num("retries", optarg, 0, 100, &o.retries);
			break;
		case 'v':
			o.verbose = true;
			break;
		case OPT_HELP:
			usage(stdout);
			return 0;
		default:
			ok = false;
		}
		if (!ok) {
			fprintf(stderr, "Try 'xkvctl --help'.\n");
			return EXIT_ERROR;
		}
	}
	if (optind == argc) {
		usage(stderr);
		return EXIT_ERROR;
	}
	for (cmd = commands; cmd->name; cmd++)
		if (strcmp(cmd->name, argv[optind]) == 0)
			break;
	if (!cmd->name) {
		fprintf(stderr, "xkvctl: unknown command '%s'. Try 'xkvctl --help'.\n",
			argv[optind]);
		return EXIT_ERROR;
	}
	if (cmd->run == cmd_help) {
		usage(stdout);
		return 0;
	}

	x = xkv__new(o.host, (uint16_t)o.port, o.token);
	if (!x) {
		fprintf(stderr, "xkvctl: %s: %s\n", o.host,
			errno == EHOSTUNREACH ? "cannot resolve the name" : strerror(errno));
		return EXIT_ERROR;
	}
	if (xkv__set_padding(x, o.pad) || xkv__set_timeout_ms(x, (int)o.timeout_ms) ||
	    xkv__set_retries(x, (int)o.retries) ||
	    (o.password && *o.password && xkv__set_password(x, o.password))) {
		fprintf(stderr, "xkvctl: cannot apply the options\n");
		r = EXIT_ERROR;
		goto out;
	}
	ctl = (struct ctl){ .x = x, .o = &o, .argc = argc - optind, .argv = argv + optind };
	r = cmd->run(&ctl);
out:
	xkv__free(x);
	return r;
}
