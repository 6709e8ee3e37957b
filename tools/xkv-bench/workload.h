/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * workload: what the requests are. A workload is one command template, or a
 * SET:GET ratio of two, plus the key space they draw keys from and the value
 * they write. It is built once by the runner and then only read, by every
 * worker thread at once; each connection keeps its own key generator.
 *
 * A template is the command's words separated by spaces. A word that is
 * exactly __key__ becomes the request's key (the prefix and a number below
 * the key count), a word that is exactly __data__ becomes the value
 * (data_size bytes). Every __key__ in one request is the same key.
 */
#ifndef XKV_BENCH_WORKLOAD_H
#define XKV_BENCH_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum key_pattern {
	KEY_SEQUENTIAL, /* each connection walks the keys in order, interleaved */
	KEY_UNIFORM,	/* every key equally likely */
	KEY_ZIPF,	/* key i (from 0) with probability proportional to (i + 1)^-s */
};

/* What the user asked for; the strings are borrowed while workload_init runs. */
struct workload_spec {
	const char *command;	       /* a name (get, set, ...) or a template; NULL: ratio */
	unsigned ratio_set, ratio_get; /* SET:GET requests per cycle, if no command */
	uint64_t keys;
	const char *key_prefix;
	enum key_pattern pattern;
	double zipf_s;
	size_t data_size;
	uint64_t seed; /* for the value bytes and the key generators */
};

/* Zipf sampling by rejection-inversion: constant time, no table. */
struct zipf {
	uint64_t n;
	double s, q;	/* the exponent and 1 - s */
	double h_x1;	/* H(1.5) - 1: the bottom of the sampled range */
	double h_n;	/* H(n + 0.5): its top */
	double squeeze; /* k - x below this accepts without computing H */
};

/* A connection's key generator; the zipf constants are the workload's. */
struct keygen {
	enum key_pattern pattern;
	uint64_t nkeys;
	uint64_t next;	 /* sequential: the next key */
	uint64_t stride; /* sequential: connections interleaved on the keys */
	uint64_t rng;	 /* uniform and zipf */
	const struct zipf *zipf;
};

struct cmd_part {
	size_t off, len; /* bytes of the template, or len 0 for the key */
};

/* Words in a command; a key between two fixed parts makes 2n + 1 parts. */
#define WORKLOAD_MAX_ARGS 32
#define WORKLOAD_MAX_PARTS (2 * WORKLOAD_MAX_ARGS + 1)

/* One command, RESP-encoded except for the key. */
struct cmd_tpl {
	char name[32]; /* its first word as written, cut to 31 bytes */
	char *bytes;   /* owned */
	size_t len;
	struct cmd_part parts[WORKLOAD_MAX_PARTS];
	unsigned nparts, nkeys;
};

struct workload {
	struct cmd_tpl cmd[2];
	unsigned ncmd;
	unsigned weight[2]; /* requests of cmd[i] in each cycle */
	unsigned cycle;	    /* sum of the weights */
	char *prefix;	    /* owned */
	size_t prefix_len;
	uint64_t nkeys;
	enum key_pattern pattern;
	struct zipf zipf;
	uint64_t seed;
	size_t max_len; /* longest request in bytes */
	char desc[160]; /* "SET:GET 1:10" or the template, for reports */
};

/*
 * Builds a workload; 0, or -EINVAL with a message in err. Free it with
 * workload_free().
 */
int workload_init(struct workload *w, const struct workload_spec *spec, char *err, size_t errlen);
void workload_free(struct workload *w);
/* Which command the seq-th request of a connection is (index into cmd[]). */
unsigned workload_pick(const struct workload *w, uint64_t seq);
/* Writes request cmd[which] for `key` to dst, which has max_len bytes. */
size_t workload_encode(const struct workload *w, unsigned which, uint64_t key, char *dst);
const char *key_pattern_name(enum key_pattern p);
/* 0 and *p, or -EINVAL. */
int key_pattern_parse(const char *s, enum key_pattern *p);

/* Connection `index` of `nconns`, seeded from the workload's seed. */
void keygen_init(struct keygen *k, const struct workload *w, unsigned index, unsigned nconns);
uint64_t keygen_next(struct keygen *k);

/* splitmix64: a 64-bit generator from any seed, including 0. */
uint64_t rng_next(uint64_t *state);
/* Uniform in (0, 1]. */
double rng_unit(uint64_t *state);
/* Uniform in [0, n). */
uint64_t rng_below(uint64_t *state, uint64_t n);

/* 0, or -EINVAL unless n >= 1 and s > 0. */
int zipf_init(struct zipf *z, uint64_t n, double s);
/* A rank in [0, n): 0 is the most frequent. */
uint64_t zipf_sample(const struct zipf *z, uint64_t *rng);

#endif /* XKV_BENCH_WORKLOAD_H */
