// SPDX-License-Identifier: BSD-3-Clause
/*
 * The HyperLogLog family: PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST.
 *
 * A HyperLogLog is an ordinary string value in Redis's byte layout (hll.h), so
 * GET, SET, APPEND and the rest see the same bytes as on Redis. The handlers
 * make the value raw and mutable, edit it in place through hll.c, and grow it
 * through obj_string_make_raw(); a value that turns dense is replaced whole.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "commands.h"
#include "notify.h"
#include "config.h"
#include "hll.h"
#include "mem.h"
#include "t_hash.h"

#define ERR_INVALID_HLL "-INVALIDOBJ Corrupted HLL object detected"
#define ERR_NOT_HLL "-WRONGTYPE Key is not a valid HyperLogLog string value."

/* Is e a HyperLogLog? Otherwise replies as Redis does, false. */
static bool entry_is_hll(struct client *c, const struct entry *e)
{
	if (!entry_is(c, e, OBJ_STRING))
		return false;
	if (e->val.enc == ENC_INT || !hll_valid((const uint8_t *)e->val.bytes, e->val.len)) {
		reply_error(c, ERR_NOT_HLL);
		return false;
	}
	return true;
}

/* A new, empty HyperLogLog value (raw, as Redis creates it). */
static struct obj hll_new(void)
{
	char *p = xmalloc(HLL_SPARSE_EMPTY_SIZE + 1);

	hll_init_sparse((uint8_t *)p);
	p[HLL_SPARSE_EMPTY_SIZE] = '\0';
	return obj_string_owned(p, HLL_SPARSE_EMPTY_SIZE);
}

/* Makes the value of o dense in place; 0, or -1 if its sparse form is corrupt. */
static int hll_make_dense(struct obj *o)
{
	char *dense;

	if (hll_encoding((const uint8_t *)o->bytes) == HLL_DENSE)
		return 0;
	dense = xmalloc(HLL_DENSE_SIZE + 1);
	if (hll_sparse_to_dense((const uint8_t *)o->bytes, o->len, (uint8_t *)dense) < 0) {
		xfree(dense);
		return -1;
	}
	dense[HLL_DENSE_SIZE] = '\0';
	obj_free(o);
	*o = obj_string_owned(dense, HLL_DENSE_SIZE);
	return 0;
}

/* Raises register index of the value o to count, whatever its encoding;
 * 1 if it changed, 0 if not, -1 if it is corrupt. */
static int hll_set(struct obj *o, long index, uint8_t count)
{
	if (hll_encoding((const uint8_t *)o->bytes) == HLL_SPARSE) {
		uint8_t *p = (uint8_t *)obj_string_make_raw(o, o->len + HLL_SPARSE_ROOM);
		size_t len = o->len; /* a bit-field: no address */
		int r;

		p[len] = '\0';
		r = hll_sparse_set(p, &len, index, count, (size_t)config.hll_sparse_max_bytes);

		o->len = len;
		p[len] = '\0';
		if (r != HLL_PROMOTE)
			return r;
		if (hll_make_dense(o) < 0)
			return -1;
	}
	return hll_dense_set((uint8_t *)o->bytes + HLL_HDR_SIZE, index, count);
}

void cmd_pfadd(struct client *c)
{
	struct entry *e = key_find(c, 1);
	int updated = 0;

	if (!e) {
		e = db_add(c->db, c->argv[1].p, c->argv[1].len, hll_new());
		updated++;
	} else if (!entry_is_hll(c, e)) {
		return;
	} else {
		obj_string_make_raw(&e->val, e->val.len);
	}
	for (int j = 2; j < c->argc; j++) {
		long index;
		int count = hll_pattern(c->argv[j].p, c->argv[j].len, &index);
		int r = hll_set(&e->val, index, (uint8_t)count);

		if (r < 0) {
			/* What it raised before the corruption stays, unsignalled,
			 * as in Redis. */
			db_changed_unsignalled(c->db, e);
			reply_error(c, ERR_INVALID_HLL);
			return;
		}
		updated += r;
	}
	/* Its creation and each element that raised a register, as Redis. */
	command_dirty((uint64_t)updated);
	if (updated) {
		hll_cache_invalidate((uint8_t *)e->val.bytes);
		db_changed(c->db, e);
		notify_arg(c, NOTIFY_STRING, "pfadd", 1);
	}
	reply_int(c, updated ? 1 : 0);
}

void cmd_pfcount(struct client *c)
{
	struct entry *e;
	uint8_t *p;
	uint64_t card;

	if (c->argc > 2) {
		/* The union's estimate, from the registers' maxima: nothing cached. */
		uint8_t *max = xcalloc(1, HLL_REGISTERS);

		for (int j = 1; j < c->argc; j++) {
			e = key_find_read(c, j);
			if (!e)
				continue;
			if (!entry_is_hll(c, e))
				goto out;
			if (hll_merge(max, (const uint8_t *)e->val.bytes, e->val.len) < 0) {
				reply_error(c, ERR_INVALID_HLL);
				goto out;
			}
		}
		reply_int(c, (long long)hll_count_raw(max));
	out:
		xfree(max);
		return;
	}
	e = key_find_read(c, 1);
	if (!e) {
		reply_int(c, 0);
		return;
	}
	if (!entry_is_hll(c, e))
		return;
	p = (uint8_t *)e->val.bytes;
	if (hll_cache_valid(p)) {
		card = hll_cache_get(p);
	} else {
		bool invalid = false;

		/* The cache lives in the value: storing it is a change, as in Redis. */
		card = hll_count(p, e->val.len, &invalid);
		if (invalid) {
			reply_error(c, ERR_INVALID_HLL);
			return;
		}
		p = (uint8_t *)obj_string_make_raw(&e->val, e->val.len);
		hll_cache_set(p, card);
		db_changed(c->db, e);
	}
	reply_int(c, (long long)card);
}

void cmd_pfmerge(struct client *c)
{
	uint8_t *max = xcalloc(1, HLL_REGISTERS);
	bool dense = false;
	struct entry *e;

	/* The destination's own registers count too: argv[1] is merged first. */
	for (int j = 1; j < c->argc; j++) {
		e = key_find_read(c, j);
		if (!e)
			continue;
		if (!entry_is_hll(c, e))
			goto out;
		if (hll_encoding((const uint8_t *)e->val.bytes) == HLL_DENSE)
			dense = true;
		if (hll_merge(max, (const uint8_t *)e->val.bytes, e->val.len) < 0) {
			reply_error(c, ERR_INVALID_HLL);
			goto out;
		}
	}
	e = key_find(c, 1);
	if (!e)
		e = db_add(c->db, c->argv[1].p, c->argv[1].len, hll_new());
	else
		obj_string_make_raw(&e->val, e->val.len);
	/* A dense input makes the result dense at once; otherwise it stays
	 * sparse as long as it can, register by register. */
	if (dense) {
		if (hll_make_dense(&e->val) < 0) {
			reply_error(c, ERR_INVALID_HLL);
			goto out;
		}
		hll_dense_from_raw((uint8_t *)e->val.bytes + HLL_HDR_SIZE, max);
	} else {
		for (long i = 0; i < HLL_REGISTERS; i++)
			if (max[i])
				hll_set(&e->val, i, max[i]);
	}
	hll_cache_invalidate((uint8_t *)e->val.bytes);
	command_dirty(1); /* the target, created or not */
	db_changed(c->db, e);
	/* Redis's event for a merge is PFADD's: a mass add. */
	notify_arg(c, NOTIFY_STRING, "pfadd", 1);
	reply_ok(c);
out:
	xfree(max);
}

/* PFDEBUG DECODE: the sparse opcodes as "z:<len>", "Z:<len>", "v:<val>,<len>". */
static void pfdebug_decode(struct client *c, const uint8_t *p, size_t len)
{
	const uint8_t *end = p + len;
	size_t cap = len * 12 + 1, n = 0;
	char *out = xmalloc(cap);

	for (p += HLL_HDR_SIZE; p < end;) {
		if ((*p & 0xc0) == 0) {
			n += (size_t)snprintf(out + n, cap - n, "z:%d ", (*p & 0x3f) + 1);
			p++;
		} else if ((*p & 0xc0) == 0x40 && p + 1 < end) {
			n += (size_t)snprintf(out + n, cap - n, "Z:%d ",
					      (((p[0] & 0x3f) << 8) | p[1]) + 1);
			p += 2;
		} else if ((*p & 0xc0) == 0x40) {
			break; /* a truncated XZERO: Redis reads past it; we stop */
		} else {
			n += (size_t)snprintf(out + n, cap - n, "v:%d,%d ", ((*p >> 2) & 0x1f) + 1,
					      (*p & 3) + 1);
			p++;
		}
	}
	while (n && out[n - 1] == ' ')
		n--;
	reply_bulk(c, out, n);
	xfree(out);
}

void cmd_pfdebug(struct client *c)
{
	const char *sub = c->argv[1].p;
	struct entry *e;

	if (!strcasecmp(sub, "simd")) {
		if (c->argc != 3)
			goto arity;
		if (!arg_is(c, 2, "on") && !arg_is(c, 2, "off")) {
			reply_error(c, "Argument must be ON or OFF");
			return;
		}
		/* The registers are merged and packed without SIMD here. */
		reply_status(c, "disabled");
		return;
	}
	e = key_find(c, 2);
	if (!e) {
		reply_error(c, "The specified key does not exist");
		return;
	}
	if (!entry_is_hll(c, e))
		return;
	obj_string_make_raw(&e->val, e->val.len);
	if (!strcasecmp(sub, "getreg") || !strcasecmp(sub, "todense")) {
		bool was_sparse = hll_encoding((const uint8_t *)e->val.bytes) == HLL_SPARSE;

		if (c->argc != 3)
			goto arity;
		if (hll_make_dense(&e->val) < 0) {
			reply_error(c, ERR_INVALID_HLL);
			return;
		}
		if (was_sparse)
			db_changed(c->db, e);
		if (!strcasecmp(sub, "todense")) {
			reply_int(c, was_sparse);
			return;
		}
		reply_array(c, HLL_REGISTERS);
		for (long i = 0; i < HLL_REGISTERS; i++)
			reply_int(c,
				  hll_dense_get((const uint8_t *)e->val.bytes + HLL_HDR_SIZE, i));
	} else if (!strcasecmp(sub, "decode")) {
		if (c->argc != 3)
			goto arity;
		if (hll_encoding((const uint8_t *)e->val.bytes) != HLL_SPARSE) {
			reply_error(c, "HLL encoding is not sparse");
			return;
		}
		pfdebug_decode(c, (const uint8_t *)e->val.bytes, e->val.len);
	} else if (!strcasecmp(sub, "encoding")) {
		if (c->argc != 3)
			goto arity;
		reply_status(c, hll_encoding((const uint8_t *)e->val.bytes) == HLL_DENSE
					? "dense"
					: "sparse");
	} else {
		reply_errorf(c, "Unknown PFDEBUG subcommand '%s'", sub);
	}
	return;
arity:
	reply_errorf(c, "Wrong number of arguments for the '%s' subcommand", sub);
}

/* PFSELFTEST's first part: random registers read back, neighbours intact. */
static bool selftest_registers(struct client *c, uint8_t *regs)
{
	static uint8_t bytes[HLL_REGISTERS];

	for (int cycle = 0; cycle < 1000; cycle++) {
		for (long i = 0; i < HLL_REGISTERS; i++) {
			bytes[i] = (uint8_t)(hash_rand() & HLL_REGISTER_MAX);
			hll_dense_put(regs, i, bytes[i]);
		}
		for (long i = 0; i < HLL_REGISTERS; i++) {
			if (hll_dense_get(regs, i) != bytes[i]) {
				reply_errorf(c, "TESTFAILED Register %ld should be %d but is %d", i,
					     bytes[i], hll_dense_get(regs, i));
				return false;
			}
		}
	}
	return true;
}

/*
 * PFSELFTEST's second part: ten million distinct elements added to a dense
 * and a sparse value at once; at 1, 10, 100 ... both estimates agree and stay
 * within six standard errors (one at 10, where collisions are likely).
 */
static bool selftest_estimates(struct client *c, uint8_t *dense)
{
	double relerr = 1.04 / sqrt(HLL_REGISTERS);
	struct obj sparse = hll_new();
	uint64_t seed = hash_rand(), checkpoint = 1;
	bool ok = true;

	memset(dense + HLL_HDR_SIZE, 0, HLL_DENSE_SIZE - HLL_HDR_SIZE);
	for (uint64_t j = 1; j <= 10000000 && ok; j++) {
		uint64_t ele = j ^ seed;
		long index;
		int count = hll_pattern(&ele, sizeof(ele), &index);
		const uint8_t *sp;

		hll_dense_set(dense + HLL_HDR_SIZE, index, (uint8_t)count);
		hll_set(&sparse, index, (uint8_t)count);
		if (j != checkpoint)
			continue;
		sp = (const uint8_t *)sparse.bytes;
		uint64_t est = hll_count(dense, HLL_DENSE_SIZE, NULL);
		int64_t abserr = llabs((long long)checkpoint - (long long)est);
		uint64_t maxerr = j == 10 ? 1 : (uint64_t)ceil(relerr * 6 * (double)checkpoint);

		if (j < (uint64_t)config.hll_sparse_max_bytes / 2 &&
		    hll_encoding(sp) != HLL_SPARSE) {
			reply_error(c, "TESTFAILED sparse encoding not used");
			ok = false;
		} else if (est != hll_count(sp, sparse.len, NULL)) {
			reply_error(c, "TESTFAILED dense/sparse disagree");
			ok = false;
		} else if ((uint64_t)abserr > maxerr) {
			reply_errorf(c, "TESTFAILED Too big error. card:%llu abserr:%llu",
				     (unsigned long long)checkpoint, (unsigned long long)abserr);
			ok = false;
		}
		checkpoint *= 10;
	}
	obj_free(&sparse);
	return ok;
}

void cmd_pfselftest(struct client *c)
{
	uint8_t *dense = xcalloc(1, HLL_DENSE_SIZE + 1);

	memcpy(dense, "HYLL", 4);
	if (selftest_registers(c, dense + HLL_HDR_SIZE) && selftest_estimates(c, dense))
		reply_ok(c);
	xfree(dense);
}
