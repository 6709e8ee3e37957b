// SPDX-License-Identifier: BSD-3-Clause
/*
 * Workloads, key generators and the value (workload.h).
 *
 * A template is encoded into RESP once: the fixed arguments become bytes, and
 * each __key__ a part that workload_encode() fills with "$<len>\r\n<key>\r\n".
 * A request is then a few memcpy()s.
 *
 * Zipf keys use rejection-inversion sampling (Hormann and Derflinger, "Rejection-
 * inversion to generate variates from monotone discrete distributions", 1996):
 * draw from the continuous hat h(x) = x^-s by inverting its integral H, round
 * to the nearest integer k, and accept with the ratio of k^-s to the hat's area
 * around k. It needs no table, so a key space of a billion costs nothing, and
 * works for every s > 0, including 1.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "workload.h"

/* Longest "$<len>\r\n" header plus the CRLF after the payload. */
#define ARG_OVERHEAD (1 + 20 + 2 + 2)

/* The commands known by name, with their templates. */
static const struct {
	const char *name, *tpl;
} named_cmds[] = {
	{ "get", "GET __key__" },
	{ "set", "SET __key__ __data__" },
	{ "setnx", "SETNX __key__ __data__" },
	{ "getset", "GETSET __key__ __data__" },
	{ "incr", "INCR __key__" },
	{ "decr", "DECR __key__" },
	{ "append", "APPEND __key__ __data__" },
	{ "strlen", "STRLEN __key__" },
	{ "exists", "EXISTS __key__" },
	{ "del", "DEL __key__" },
	{ "lpush", "LPUSH __key__ __data__" },
	{ "rpush", "RPUSH __key__ __data__" },
	{ "lpop", "LPOP __key__" },
	{ "rpop", "RPOP __key__" },
	{ "llen", "LLEN __key__" },
	{ "sadd", "SADD __key__ __data__" },
	{ "srem", "SREM __key__ __data__" },
	{ "scard", "SCARD __key__" },
	{ "sismember", "SISMEMBER __key__ __data__" },
	{ "hset", "HSET __key__ field __data__" },
	{ "hget", "HGET __key__ field" },
	{ "hincrby", "HINCRBY __key__ field 1" },
	{ "zadd", "ZADD __key__ 1 __data__" },
	{ "zscore", "ZSCORE __key__ __data__" },
	{ "ping", "PING" },
};

uint64_t rng_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

double rng_unit(uint64_t *state)
{
	/* 53 random bits, shifted up by one so that 0 never comes out. */
	return (double)((rng_next(state) >> 11) + 1) * 0x1.0p-53;
}

uint64_t rng_below(uint64_t *state, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)rng_next(state) * n) >> 64);
}

/* (e^t - 1) / t, and its limit 1 at t = 0. */
static double expm1_over(double t)
{
	return fabs(t) > 1e-8 ? expm1(t) / t : 1.0 + t / 2.0;
}

/* log(1 + t) / t, and its limit 1 at t = 0. */
static double log1p_over(double t)
{
	return fabs(t) > 1e-8 ? log1p(t) / t : 1.0 - t / 2.0;
}

/* The hat x^-s. */
static double zipf_h(const struct zipf *z, double x)
{
	return exp(-z->s * log(x));
}

/* H(x), the integral of the hat from 1 to x: (x^(1-s) - 1) / (1-s), or log x. */
static double zipf_H(const struct zipf *z, double x)
{
	double lx = log(x);

	return lx * expm1_over(z->q * lx);
}

/* The inverse of H. */
static double zipf_H_inv(const struct zipf *z, double y)
{
	return exp(y * log1p_over(z->q * y));
}

int zipf_init(struct zipf *z, uint64_t n, double s)
{
	if (!n || !(s > 0.0) || !isfinite(s))
		return -EINVAL;
	z->n = n;
	z->s = s;
	z->q = 1.0 - s;
	z->h_x1 = zipf_H(z, 1.5) - 1.0;
	z->h_n = zipf_H(z, (double)n + 0.5);
	z->squeeze = 2.0 - zipf_H_inv(z, zipf_H(z, 2.5) - zipf_h(z, 2.0));
	return 0;
}

uint64_t zipf_sample(const struct zipf *z, uint64_t *rng)
{
	for (;;) {
		double u = z->h_n + rng_unit(rng) * (z->h_x1 - z->h_n);
		double x = zipf_H_inv(z, u);
		uint64_t k = (uint64_t)(x + 0.5);

		if (k < 1)
			k = 1;
		else if (k > z->n)
			k = z->n;
		if ((double)k - x <= z->squeeze ||
		    u >= zipf_H(z, (double)k + 0.5) - zipf_h(z, (double)k))
			return k - 1;
	}
}

void keygen_init(struct keygen *k, const struct workload *w, unsigned index, unsigned nconns)
{
	k->pattern = w->pattern;
	k->nkeys = w->nkeys;
	k->next = index % w->nkeys;
	k->stride = nconns;
	/* Distinct, well-mixed streams per connection from one seed. */
	k->rng = w->seed ^ ((uint64_t)index * 0xd1342543de82ef95ULL);
	rng_next(&k->rng);
	k->zipf = &w->zipf;
}

uint64_t keygen_next(struct keygen *k)
{
	uint64_t key;

	switch (k->pattern) {
	case KEY_SEQUENTIAL:
		key = k->next;
		k->next += k->stride;
		if (k->next >= k->nkeys)
			k->next %= k->nkeys;
		return key;
	case KEY_ZIPF:
		return zipf_sample(k->zipf, &k->rng);
	default:
		return rng_below(&k->rng, k->nkeys);
	}
}

const char *key_pattern_name(enum key_pattern p)
{
	switch (p) {
	case KEY_SEQUENTIAL:
		return "sequential";
	case KEY_ZIPF:
		return "zipf";
	default:
		return "uniform";
	}
}

int key_pattern_parse(const char *s, enum key_pattern *p)
{
	if (!strcmp(s, "sequential"))
		*p = KEY_SEQUENTIAL;
	else if (!strcmp(s, "uniform"))
		*p = KEY_UNIFORM;
	else if (!strcmp(s, "zipf"))
		*p = KEY_ZIPF;
	else
		return -EINVAL;
	return 0;
}

/* Appends n bytes to c->bytes (sized by the caller) as a fixed part. */
static void tpl_fixed(struct cmd_tpl *c, const void *p, size_t n)
{
	struct cmd_part *last = c->nparts ? &c->parts[c->nparts - 1] : NULL;

	memcpy(c->bytes + c->len, p, n);
	if (last && last->len)
		last->len += n;
	else
		c->parts[c->nparts++] = (struct cmd_part){ .off = c->len, .len = n };
	c->len += n;
}

static void tpl_arg(struct cmd_tpl *c, const void *p, size_t n)
{
	char hdr[32];
	int h = snprintf(hdr, sizeof(hdr), "$%zu\r\n", n);

	tpl_fixed(c, hdr, (size_t)h);
	tpl_fixed(c, p, n);
	tpl_fixed(c, "\r\n", 2);
}

static bool is_word(const char *p, size_t len, const char *word)
{
	return len == strlen(word) && !memcmp(p, word, len);
}

/*
 * Encodes template `tpl` into c, with `data` for __data__. 0, or -EINVAL with
 * a message.
 */
static int tpl_build(struct cmd_tpl *c, const char *tpl, const char *data, size_t data_len,
		     char *err, size_t errlen)
{
	const char *words[WORKLOAD_MAX_ARGS];
	size_t lens[WORKLOAD_MAX_ARGS], size = 32;
	unsigned argc = 0;
	const char *p = tpl;
	char hdr[32];

	memset(c, 0, sizeof(*c));
	while (*p) {
		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		if (argc == WORKLOAD_MAX_ARGS) {
			snprintf(err, errlen, "command has more than %d words", WORKLOAD_MAX_ARGS);
			return -EINVAL;
		}
		words[argc] = p;
		while (*p && !isspace((unsigned char)*p))
			p++;
		lens[argc] = (size_t)(p - words[argc]);
		size += ARG_OVERHEAD +
			(is_word(words[argc], lens[argc], "__data__") ? data_len : lens[argc]);
		argc++;
	}
	if (!argc) {
		snprintf(err, errlen, "empty command");
		return -EINVAL;
	}
	snprintf(c->name, sizeof(c->name), "%.*s", (int)lens[0], words[0]);
	c->bytes = malloc(size);
	if (!c->bytes) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	tpl_fixed(c, hdr, (size_t)snprintf(hdr, sizeof(hdr), "*%u\r\n", argc));
	for (unsigned i = 0; i < argc; i++) {
		if (is_word(words[i], lens[i], "__key__")) {
			c->parts[c->nparts++] = (struct cmd_part){ .off = c->len, .len = 0 };
			c->nkeys++;
		} else if (is_word(words[i], lens[i], "__data__")) {
			tpl_arg(c, data, data_len);
		} else {
			tpl_arg(c, words[i], lens[i]);
		}
	}
	return 0;
}

/* The template for a command name, or the name itself as a template. */
static const char *tpl_for(const char *command)
{
	for (size_t i = 0; i < sizeof(named_cmds) / sizeof(named_cmds[0]); i++)
		if (!strcasecmp(command, named_cmds[i].name))
			return named_cmds[i].tpl;
	return command;
}

int workload_init(struct workload *w, const struct workload_spec *spec, char *err, size_t errlen)
{
	uint64_t rng = spec->seed;
	char *data = NULL;
	int ret = -EINVAL;

	memset(w, 0, sizeof(*w));
	w->nkeys = spec->keys;
	w->pattern = spec->pattern;
	w->seed = spec->seed;
	if (!w->nkeys) {
		snprintf(err, errlen, "the key space is empty");
		return -EINVAL;
	}
	if (w->pattern == KEY_ZIPF && zipf_init(&w->zipf, w->nkeys, spec->zipf_s)) {
		snprintf(err, errlen, "zipf exponent must be > 0");
		return -EINVAL;
	}
	w->prefix = strdup(spec->key_prefix ? spec->key_prefix : "");
	data = malloc(spec->data_size + 1);
	if (!w->prefix || !data) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto end;
	}
	w->prefix_len = strlen(w->prefix);
	/* Printable, so that a value shows plainly in MONITOR or a dump. */
	for (size_t i = 0; i < spec->data_size; i++)
		data[i] = (char)('a' + rng_below(&rng, 26));

	if (spec->command) {
		const char *tpl = tpl_for(spec->command);

		ret = tpl_build(&w->cmd[0], tpl, data, spec->data_size, err, errlen);
		if (ret)
			goto end;
		w->ncmd = 1;
		w->weight[0] = 1;
		snprintf(w->desc, sizeof(w->desc), "%s", tpl);
	} else {
		if (!spec->ratio_set && !spec->ratio_get) {
			snprintf(err, errlen, "the SET:GET ratio is 0:0");
			goto end;
		}
		ret = tpl_build(&w->cmd[0], "SET __key__ __data__", data, spec->data_size, err,
				errlen);
		if (!ret)
			ret = tpl_build(&w->cmd[1], "GET __key__", data, 0, err, errlen);
		if (ret)
			goto end;
		w->ncmd = 2;
		w->weight[0] = spec->ratio_set;
		w->weight[1] = spec->ratio_get;
		snprintf(w->desc, sizeof(w->desc), "SET:GET %u:%u", spec->ratio_set,
			 spec->ratio_get);
	}
	w->cycle = w->weight[0] + w->weight[1];
	for (unsigned i = 0; i < w->ncmd; i++) {
		size_t len = w->cmd[i].len + w->cmd[i].nkeys * (ARG_OVERHEAD + w->prefix_len + 20);

		if (len > w->max_len)
			w->max_len = len;
	}
	ret = 0;
end:
	free(data);
	if (ret)
		workload_free(w);
	return ret;
}

void workload_free(struct workload *w)
{
	for (unsigned i = 0; i < 2; i++)
		free(w->cmd[i].bytes);
	free(w->prefix);
	memset(w, 0, sizeof(*w));
}

unsigned workload_pick(const struct workload *w, uint64_t seq)
{
	if (w->ncmd == 1)
		return 0;
	return seq % w->cycle < w->weight[0] ? 0 : 1;
}

/* v in decimal at p; returns the length (at most 20). */
static size_t u64_dec(char *p, uint64_t v)
{
	char tmp[20];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		p[i] = tmp[n - 1 - i];
	return n;
}

size_t workload_encode(const struct workload *w, unsigned which, uint64_t key, char *dst)
{
	const struct cmd_tpl *c = &w->cmd[which];
	char digits[20];
	size_t n = 0, dlen;

	if (!c->nkeys) {
		memcpy(dst, c->bytes, c->len);
		return c->len;
	}
	dlen = u64_dec(digits, key);
	for (unsigned i = 0; i < c->nparts; i++) {
		const struct cmd_part *p = &c->parts[i];

		if (p->len) {
			memcpy(dst + n, c->bytes + p->off, p->len);
			n += p->len;
			continue;
		}
		/* "$<len>\r\n<prefix><digits>\r\n" */
		dst[n++] = '$';
		n += u64_dec(dst + n, w->prefix_len + dlen);
		memcpy(dst + n, "\r\n", 2);
		n += 2;
		memcpy(dst + n, w->prefix, w->prefix_len);
		n += w->prefix_len;
		memcpy(dst + n, digits, dlen);
		n += dlen;
		memcpy(dst + n, "\r\n", 2);
		n += 2;
	}
	return n;
}
