// SPDX-License-Identifier: BSD-3-Clause
#include <arpa/inet.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debug.h"
#include "store.h"
#include "t_array.h"
#include "t_vset.h"
#include "t_hash.h"
#include "t_list.h"
#include "t_set.h"
#include "t_zset.h"
#include "util.h"

int debug_active_expire = 1;
int debug_disable_deny_scripts;
int debug_pause_cron;

/* d ^= SHA1(p): order-free accumulation (Redis's xorDigest). */
static void xor_digest(uint8_t d[SHA1_LEN], const void *p, size_t len)
{
	uint8_t h[SHA1_LEN];

	sha1(p, len, h);
	for (int i = 0; i < SHA1_LEN; i++)
		d[i] ^= h[i];
}

/* d = SHA1(d ^ SHA1(p)): ordered accumulation (Redis's mixDigest). */
static void mix_digest(uint8_t d[SHA1_LEN], const void *p, size_t len)
{
	xor_digest(d, p, len);
	sha1(d, SHA1_LEN, d);
}

/* Emits digits[0..n) * 10^k as fpconv's emit_digits does. */
static int emit_digits(const char *digits, int n, char *out, int k, bool neg)
{
	int exp = abs(k + n - 1), i = 0;

	if (k >= 0 && exp < n + 7) {
		/* A plain integer. */
		memcpy(out, digits, (size_t)n);
		memset(out + n, '0', (size_t)k);
		return n + k;
	}
	if (k < 0 && (k > -7 || exp < 4)) {
		int off = n + k;

		if (off <= 0) {
			/* Below one: a leading "0." and zeros. */
			out[0] = '0';
			out[1] = '.';
			memset(out + 2, '0', (size_t)-off);
			memcpy(out + 2 - off, digits, (size_t)n);
			return n + 2 - off;
		}
		memcpy(out, digits, (size_t)off);
		out[off] = '.';
		memcpy(out + off + 1, digits + off, (size_t)(n - off));
		return n + 1;
	}
	/* Scientific: at most 18 digits (17 with a sign), an explicit exponent
	 * sign, and the exponent without leading zeros. */
	if (n > 18 - neg)
		n = 18 - neg;
	out[i++] = digits[0];
	if (n > 1) {
		out[i++] = '.';
		memcpy(out + i, digits + 1, (size_t)(n - 1));
		i += n - 1;
	}
	out[i++] = 'e';
	out[i++] = k + n - 1 < 0 ? '-' : '+';
	i += sprintf(out + i, "%d", exp);
	return i;
}

int debug_fmt_double(double v, char *buf)
{
	char tmp[40], digits[20];
	int len = 0, n = 0, exp10, prec;

	if (signbit(v))
		buf[len++] = '-';
	if (v == 0) {
		buf[len++] = '0';
		buf[len] = '\0';
		return len;
	}
	if (isnan(v) || isinf(v)) {
		memcpy(buf + len, isnan(v) ? "nan" : "inf", 4);
		return len + 3;
	}
	v = fabs(v);
	/* The fewest significant digits that read back as v, as grisu's
	 * shortest output. */
	for (prec = 0; prec < 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*e", prec, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	snprintf(tmp, sizeof(tmp), "%.*e", prec, v);
	for (const char *p = tmp; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9')
			digits[n++] = *p;
	exp10 = atoi(strchr(tmp, 'e') + 1);
	while (n > 1 && digits[n - 1] == '0')
		n--;
	len += emit_digits(digits, n, buf + len, exp10 - (n - 1), buf[0] == '-');
	buf[len] = '\0';
	return len;
}

/* Redis's xorObjectDigest: the type (Redis's number for it), then the value,
 * then "has a deadline". */
void debug_value_digest(const struct entry *e, uint8_t d[SHA1_LEN])
{
	static const uint32_t redis_type[OBJ_TYPES] = {
		[OBJ_STRING] = 0, [OBJ_LIST] = 1,   [OBJ_SET] = 2,   [OBJ_ZSET] = 3,
		[OBJ_HASH] = 4,	  [OBJ_STREAM] = 6, [OBJ_ARRAY] = 7, [OBJ_VSET] = 5,
	};
	const struct obj *o = &e->val;
	uint32_t type = htonl(redis_type[o->type]);
	char buf[LL_STR_SIZE + 1];

	mix_digest(d, &type, sizeof(type));
	switch (o->type) {
	case OBJ_STRING: {
		size_t len;
		const char *p = obj_str(o, buf, &len);

		mix_digest(d, p, len);
		break;
	}
	case OBJ_LIST: {
		struct list_iter it;
		struct list_elem el;

		list_iter_init(&it, o, 0, false);
		while (list_iter_next(&it, &el))
			mix_digest(d, el.p, el.len);
		break;
	}
	case OBJ_SET: {
		struct set_iter it;
		const char *p;
		size_t len;

		set_iter_init(&it, o);
		while (set_iter_next(&it, &p, &len))
			xor_digest(d, p, len);
		break;
	}
	case OBJ_ZSET: {
		struct zset_iter it;
		struct zset_elem el;
		char score[32];

		zset_iter_init(&it, o, 0, false);
		while (zset_iter_next(&it, &el)) {
			uint8_t ed[SHA1_LEN] = { 0 };

			mix_digest(ed, el.m, el.len);
			mix_digest(ed, score, (size_t)debug_fmt_double(el.score, score));
			xor_digest(d, ed, SHA1_LEN);
		}
		break;
	}
	case OBJ_HASH: {
		struct hash_iter it;
		struct hash_field hf;

		hash_iter_init(&it, o);
		while (hash_iter_next(&it, &hf)) {
			uint8_t ed[SHA1_LEN] = { 0 };

			mix_digest(ed, hf.f, hf.flen);
			mix_digest(ed, hf.v, hf.vlen);
			if (hf.expire != HASH_NO_EXPIRE)
				xor_digest(ed, "!!hexpire!!", 11);
			xor_digest(d, ed, SHA1_LEN);
		}
		break;
	}
	case OBJ_VSET: {
		/* Per element its name, stored vector and attributes, in any
		 * order (Redis's module type 5 digest differs: ours is our own). */
		const struct vset *v = vset_of(o);

		for (const struct vhnsw_node *n = v->h->head; n; n = n->next) {
			const struct vset_elem *el = n->value;
			uint8_t ed[SHA1_LEN] = { 0 };

			mix_digest(ed, el->name, el->len);
			mix_digest(ed, n->vec, vhnsw_vec_bytes(v->h));
			if (el->attr)
				mix_digest(ed, el->attr, el->alen);
			xor_digest(d, ed, SHA1_LEN);
		}
		break;
	}
	case OBJ_ARRAY: {
		/* Every position up to the length, a hole as "(null)". */
		const struct array *a = array_of(o);
		char vbuf[AR_VALUE_BUF];
		uint64_t len = array_len(a);

		for (uint64_t i = 0; i < len; i++) {
			ar_value v = array_get(a, i);
			size_t n;
			const char *p = v ? ar_decode(v, vbuf, &n) : "(null)";

			mix_digest(d, p, v ? n : 6);
		}
		break;
	}
	}
	if (entry_expire(e) != -1)
		xor_digest(d, "!!expire!!", 10);
}

struct digest_walk {
	uint8_t *final;
};

static void digest_node(void *ctx, struct dict_node *node)
{
	struct digest_walk *w = ctx;
	const struct entry *e = entry_of(node);
	uint8_t d[SHA1_LEN] = { 0 };

	mix_digest(d, e->key, entry_klen(e));
	debug_value_digest(e, d);
	xor_digest(w->final, d, SHA1_LEN);
}

void debug_dataset_digest(uint8_t final[SHA1_LEN])
{
	struct digest_walk w = { final };

	memset(final, 0, SHA1_LEN);
	for (int db = 0; db < store.ndbs; db++) {
		uint32_t id = htonl((uint32_t)db);

		/* A racy count: a database that gains its first key meanwhile is
		 * as if the digest had been taken a moment earlier. */
		if (!db_size(db))
			continue;
		mix_digest(final, &id, sizeof(id));
		/* Keys xor (the SHA-1 of) their digests together: the walk's order does not matter, and
		 * logically expired keys count, as in Redis. */
		for (unsigned i = 0; i < STORE_SHARDS; i++) {
			struct shard *sh = store_shard(db, i);
			uint64_t cur = 0;

			store_shard_lock(db, i);
			if (sh->keys.count) {
				do
					cur = dict_scan(&sh->keys, cur, digest_node, &w);
				while (cur);
			}
			store_shard_unlock(db, i);
		}
	}
}
