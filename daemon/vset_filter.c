// SPDX-License-Identifier: BSD-3-Clause
/*
 * vset_filter: compiles a FILTER expression into a postfix program with the
 * shunting-yard algorithm, and runs it over an element's JSON attributes.
 *
 * Compatibility drives every odd corner here; each one is what Redis 8.8
 * does, observable in replies:
 *   - the text is read as a C string and classified in the C locale;
 *   - a '-' is part of a number only at the start or after an operator other
 *     than ')', and numbers take digits, '.', 'e', 'E' only (so 1e-5 is an
 *     error: "1e" does not parse);
 *   - a run of letters and operator characters is cut at its longest
 *     operator prefix ("andx" is `and` then `x`); `true`/`false` do not
 *     exist, `null` does;
 *   - string literals keep their backslashes (no unescaping), JSON strings
 *     lose them (\n \r \t \\ \" and any other char kept as is);
 *   - unary operators cannot follow each other (`!!x` is an error), and any
 *     program that leaves exactly one value is accepted (`1 2 +` too);
 *   - the error position is the tokenizer's cursor for lexical errors and
 *     the start of the text for every other error;
 *   - a missing selector ends the run as false even under `or`: the program
 *     does not short-circuit.
 * JSON is scanned in place and only the requested top-level field is
 * converted; nested arrays are checked (and count as tuples) but their
 * contents never matter to a result, so they are validated iteratively.
 */
#include <pthread.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "vset_filter.h"

enum vf_type { VF_NUM, VF_STR, VF_TUPLE, VF_NULL, VF_SEL, VF_OP, VF_EOF };

enum vf_op {
	OP_OPAREN,
	OP_CPAREN,
	OP_NOT,
	OP_POW,
	OP_MUL,
	OP_DIV,
	OP_MOD,
	OP_ADD,
	OP_SUB,
	OP_GT,
	OP_GTE,
	OP_LT,
	OP_LTE,
	OP_EQ,
	OP_NEQ,
	OP_IN,
	OP_AND,
	OP_OR,
	OP_COUNT
};

/* Spellings; the tokenizer takes the longest one that prefixes the run. */
static const struct {
	const char *name;
	uint8_t len;
	uint8_t op;
} vf_spellings[] = {
	{ "(", 1, OP_OPAREN }, { ")", 1, OP_CPAREN }, { "!", 1, OP_NOT },  { "not", 3, OP_NOT },
	{ "**", 2, OP_POW },   { "*", 1, OP_MUL },    { "/", 1, OP_DIV },  { "%", 1, OP_MOD },
	{ "+", 1, OP_ADD },    { "-", 1, OP_SUB },    { ">", 1, OP_GT },   { ">=", 2, OP_GTE },
	{ "<", 1, OP_LT },     { "<=", 2, OP_LTE },   { "==", 2, OP_EQ },  { "!=", 2, OP_NEQ },
	{ "in", 2, OP_IN },    { "and", 3, OP_AND },  { "&&", 2, OP_AND }, { "or", 2, OP_OR },
	{ "||", 2, OP_OR },
};

static const uint8_t vf_prec[OP_COUNT] = {
	[OP_OPAREN] = 7, [OP_CPAREN] = 7, [OP_NOT] = 6, [OP_POW] = 5, [OP_MUL] = 4, [OP_DIV] = 4,
	[OP_MOD] = 4,	 [OP_ADD] = 3,	  [OP_SUB] = 3, [OP_GT] = 2,  [OP_GTE] = 2, [OP_LT] = 2,
	[OP_LTE] = 2,	 [OP_EQ] = 2,	  [OP_NEQ] = 2, [OP_IN] = 2,  [OP_AND] = 1, [OP_OR] = 0,
};

static int vf_arity(int op)
{
	if (op == OP_OPAREN || op == OP_CPAREN)
		return 0;
	return op == OP_NOT ? 1 : 2;
}

/*
 * A token, a program item and a runtime value all use this shape. s points
 * into the filter's copy of the text (literals, selectors) or into the JSON
 * or a scratch block (values read at run time). A tuple's ele is owned by
 * the filter (literals) or by the run's scratch; n == 0 with ele NULL is
 * also how a nested JSON array is represented.
 */
struct vf_item {
	uint8_t type;
	uint8_t op;
	double num;
	const char *s;
	size_t len;
	struct vf_item *ele;
	size_t n;
};

struct vfilter {
	char *text; /* owned copy of the expression: literals point into it */
	struct vf_item *prog;
	int nprog;
	int depth; /* deepest value stack the program reaches */
};

/* C-locale classification, as Redis's ctype calls see it. */
static inline bool vf_digit(int c)
{
	return c >= '0' && c <= '9';
}

static inline bool vf_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static inline bool vf_space(int c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

static inline bool vf_opchar(int c)
{
	return c != 0 && strchr("+-*%/!()<>=|&", c) != NULL;
}

static inline bool vf_selchar(int c)
{
	return vf_alpha(c) || vf_digit(c) || c == '_' || c == '-';
}

static void vf_items_release(struct vf_item *items, int n)
{
	for (int i = 0; i < n; i++)
		if (items[i].type == VF_TUPLE)
			xfree(items[i].ele);
}

/* ---- tokenizer ------------------------------------------------------------
 * Each parser advances *pp exactly as far as Redis's does before it succeeds
 * or fails: the error text starts at that cursor.
 */

static int vf_lex_number(const char **pp, struct vf_item *t)
{
	const char *p = *pp;
	char buf[256], *end;
	int idx = 0;

	while (vf_digit(*p) || *p == '.' || *p == 'e' || *p == 'E' || (idx == 0 && *p == '-')) {
		if (idx >= (int)sizeof(buf) - 1) {
			*pp = p;
			return -EINVAL;
		}
		buf[idx++] = *p++;
	}
	buf[idx] = '\0';
	*pp = p;
	t->type = VF_NUM;
	t->num = strtod(buf, &end);
	return *end == '\0' ? 0 : -EINVAL;
}

static int vf_lex_string(const char **pp, struct vf_item *t)
{
	const char *p = *pp;
	char quote = *p++;

	t->type = VF_STR;
	t->s = p;
	while (*p) {
		if (p[0] == '\\' && p[1]) {
			p += 2;
			continue;
		}
		if (*p == quote) {
			t->len = (size_t)(p - t->s);
			*pp = p + 1;
			return 0;
		}
		p++;
	}
	*pp = p;
	return -EINVAL;
}

static void vf_skip_spaces(const char **pp)
{
	while (vf_space((unsigned char)**pp))
		(*pp)++;
}

/* [elem, ...] of numbers and strings only; t->ele is xmalloc'd and owned by
 * t (freed here on failure). */
static int vf_lex_tuple(const char **pp, struct vf_item *t)
{
	size_t alloc = 0;
	int ret = 0;

	t->type = VF_TUPLE;
	t->ele = NULL;
	t->n = 0;
	(*pp)++;
	for (;;) {
		struct vf_item e = { 0 };

		vf_skip_spaces(pp);
		if (**pp == ']') {
			(*pp)++;
			return 0;
		}
		if (t->n == alloc) {
			alloc = alloc ? alloc * 2 : 4;
			t->ele = xrealloc(t->ele, alloc * sizeof(*t->ele));
		}
		if (vf_digit(**pp) || **pp == '-')
			ret = vf_lex_number(pp, &e);
		else if (**pp == '"' || **pp == '\'')
			ret = vf_lex_string(pp, &e);
		else
			ret = -EINVAL;
		if (ret)
			break;
		t->ele[t->n++] = e;
		vf_skip_spaces(pp);
		if (**pp == ']') {
			(*pp)++;
			return 0;
		}
		if (**pp != ',') {
			ret = -EINVAL;
			break;
		}
		(*pp)++;
	}
	xfree(t->ele);
	t->ele = NULL;
	return ret;
}

static int vf_lex_op_or_null(const char **pp, struct vf_item *t)
{
	const char *start = *pp, *p = start;
	size_t run, best = 0;

	/* Only the first 5 characters of the run decide (the longest operator
	 * has 3, "null" must be exactly 4): scanning all of it for each token
	 * would make "((((...(" quadratic. The whole run is measured only for
	 * an error, whose position is its end. */
	while (p - start < 5 && (vf_alpha((unsigned char)*p) || vf_opchar((unsigned char)*p)))
		p++;
	run = (size_t)(p - start);
	if (run == 4 && !memcmp(start, "null", 4)) {
		*pp = p;
		t->type = VF_NULL;
		return 0;
	}
	for (size_t i = 0; i < sizeof(vf_spellings) / sizeof(vf_spellings[0]); i++) {
		size_t l = vf_spellings[i].len;

		if (l > run || l <= best || memcmp(vf_spellings[i].name, start, l))
			continue;
		best = l;
		t->type = VF_OP;
		t->op = vf_spellings[i].op;
	}
	if (!best) {
		while (vf_alpha((unsigned char)*p) || vf_opchar((unsigned char)*p))
			p++;
		*pp = p;
		return -EINVAL;
	}
	*pp = start + best;
	return 0;
}

/* Splits text into tokens ending with VF_EOF; on error *errpos is the cursor. */
static int vf_tokenize(const char *text, struct vf_item **out, int *ntok, size_t *errpos)
{
	const char *p = text;
	struct vf_item *toks = NULL;
	int n = 0, alloc = 0, ret = 0;

	for (;;) {
		struct vf_item t = { 0 };
		bool minus_is_number;

		vf_skip_spaces(&p);
		minus_is_number =
			n == 0 || (toks[n - 1].type == VF_OP && toks[n - 1].op != OP_CPAREN);
		if (*p == '\0') {
			t.type = VF_EOF;
		} else if (vf_digit((unsigned char)*p) ||
			   (minus_is_number && *p == '-' && vf_digit((unsigned char)p[1]))) {
			ret = vf_lex_number(&p, &t);
		} else if (*p == '"' || *p == '\'') {
			ret = vf_lex_string(&p, &t);
		} else if (*p == '.' && (p[1] == '\0' || vf_selchar((unsigned char)p[1]))) {
			/* Redis's selector test accepts the NUL: a final "." is an
			 * empty selector, which compiles and never matches. */
			t.type = VF_SEL;
			t.s = ++p;
			while (vf_selchar((unsigned char)*p))
				p++;
			t.len = (size_t)(p - t.s);
		} else if (*p == '[') {
			ret = vf_lex_tuple(&p, &t);
		} else if (vf_alpha((unsigned char)*p) || vf_opchar((unsigned char)*p)) {
			ret = vf_lex_op_or_null(&p, &t);
		} else {
			ret = -EINVAL;
		}
		if (ret) {
			*errpos = (size_t)(p - text);
			vf_items_release(toks, n);
			xfree(toks);
			return ret;
		}
		if (n == alloc) {
			alloc = alloc ? alloc * 2 : 16;
			toks = xrealloc(toks, (size_t)alloc * sizeof(*toks));
		}
		toks[n++] = t;
		if (t.type == VF_EOF)
			break;
	}
	*out = toks;
	*ntok = n;
	return 0;
}

/* ---- compiler ----------------------------------------------------------------- */

struct vf_build {
	struct vf_item *prog; /* at most ntok items */
	int nprog;
	int items; /* values on the run-time stack at this point */
	int depth;
};

/* Moves operator op to the program if the stack holds its operands. */
static int vf_emit_op(struct vf_build *b, const struct vf_item *op)
{
	int arity = vf_arity(op->op);

	if (b->items < arity)
		return -EINVAL;
	b->prog[b->nprog++] = *op;
	b->items = b->items - arity + 1;
	return 0;
}

static int vf_compile_tokens(struct vf_item *toks, int ntok, struct vf_build *b)
{
	/* Operators waiting on the stack (pointers into toks). */
	const struct vf_item **ops = xmalloc((size_t)ntok * sizeof(*ops));
	int nops = 0, ret = 0;

	for (int i = 0; i < ntok && toks[i].type != VF_EOF; i++) {
		const struct vf_item *t = &toks[i];

		if (t->type != VF_OP) {
			b->prog[b->nprog++] = *t;
			if (++b->items > b->depth)
				b->depth = b->items;
			continue;
		}
		if (t->op == OP_OPAREN) {
			ops[nops++] = t;
			continue;
		}
		if (t->op == OP_CPAREN) {
			for (;;) {
				const struct vf_item *top;

				if (!nops) {
					ret = -EINVAL;
					goto out;
				}
				top = ops[--nops];
				if (top->op == OP_OPAREN)
					break;
				ret = vf_emit_op(b, top);
				if (ret)
					goto out;
			}
			continue;
		}
		/* Pop what binds at least as tightly; ** is right associative. */
		while (nops && ops[nops - 1]->op != OP_OPAREN) {
			int top_prec = vf_prec[ops[nops - 1]->op], prec = vf_prec[t->op];

			if (top_prec < prec || (t->op == OP_POW && top_prec <= prec))
				break;
			ret = vf_emit_op(b, ops[--nops]);
			if (ret)
				goto out;
		}
		ops[nops++] = t;
	}
	while (nops) {
		const struct vf_item *top = ops[--nops];

		if (top->op == OP_OPAREN) {
			ret = -EINVAL;
			goto out;
		}
		ret = vf_emit_op(b, top);
		if (ret)
			goto out;
	}
	if (b->items != 1)
		ret = -EINVAL;
out:
	xfree(ops);
	return ret;
}

static __thread char *vf_errbuf;
/* Frees a thread's error text when it ends (a worker at shutdown). */
static pthread_key_t vf_errbuf_key;
static pthread_once_t vf_errbuf_once = PTHREAD_ONCE_INIT;

static void vf_errbuf_key_make(void)
{
	pthread_key_create(&vf_errbuf_key, xfree);
}

static const char *vf_set_error(const char *text, size_t errpos, size_t len)
{
	static const char prefix[] = "syntax error in FILTER expression near: ";
	size_t rest;

	if (errpos >= len)
		errpos = 0;
	rest = strlen(text + errpos);
	xfree(vf_errbuf);
	vf_errbuf = xmalloc(sizeof(prefix) + rest);
	pthread_once(&vf_errbuf_once, vf_errbuf_key_make);
	pthread_setspecific(vf_errbuf_key, vf_errbuf);
	memcpy(vf_errbuf, prefix, sizeof(prefix) - 1);
	memcpy(vf_errbuf + sizeof(prefix) - 1, text + errpos, rest + 1);
	return vf_errbuf;
}

int vfilter_compile(const char *expr, size_t len, struct vfilter **out, const char **err)
{
	struct vf_build b = { 0 };
	struct vf_item *toks = NULL;
	struct vfilter *f;
	size_t errpos = 0;
	int ntok = 0, ret;
	char *text = xstrndup(expr, strnlen(expr, len));

	ret = vf_tokenize(text, &toks, &ntok, &errpos);
	if (ret)
		goto fail;
	b.prog = xmalloc((size_t)ntok * sizeof(*b.prog));
	ret = vf_compile_tokens(toks, ntok, &b);
	if (ret) {
		errpos = 0; /* Redis reports these from the start of the text */
		vf_items_release(toks, ntok);
		xfree(toks);
		xfree(b.prog);
		goto fail;
	}
	xfree(toks); /* the program now owns the tuples' arrays */
	f = xmalloc(sizeof(*f));
	f->text = text;
	f->prog = b.prog;
	f->nprog = b.nprog;
	f->depth = b.depth;
	*out = f;
	return 0;
fail:
	if (err)
		*err = vf_set_error(text, errpos, len);
	xfree(text);
	return ret;
}

void vfilter_free(struct vfilter *f)
{
	if (!f)
		return;
	vf_items_release(f->prog, f->nprog);
	xfree(f->prog);
	xfree(f->text);
	xfree(f);
}

/* ---- JSON --------------------------------------------------------------------
 * Positions are offsets into json[0..end); a run's allocations (unescaped
 * strings, tuple arrays) hang off a scratch list freed when the run ends.
 */

struct vf_json {
	const char *s;
	size_t end;
	void *scratch; /* singly linked blocks, the link in the first word */
};

static void *vf_scratch(struct vf_json *j, size_t size)
{
	void **blk = xmalloc(sizeof(void *) + size);

	blk[0] = j->scratch;
	j->scratch = blk;
	return blk + 1;
}

static void vf_scratch_free(struct vf_json *j)
{
	while (j->scratch) {
		void **blk = j->scratch;

		j->scratch = blk[0];
		xfree(blk);
	}
}

static inline void vf_json_ws(const struct vf_json *j, size_t *p)
{
	while (*p < j->end && vf_space((unsigned char)j->s[*p]))
		(*p)++;
}

static inline bool vf_json_numchar(int c)
{
	return vf_digit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* Past a string at *p (which must be '"'); an escape skips two bytes. */
static bool vf_json_skip_string(const struct vf_json *j, size_t *p)
{
	if (*p >= j->end || j->s[*p] != '"')
		return false;
	(*p)++;
	while (*p < j->end) {
		if (j->s[*p] == '\\') {
			*p += 2;
			continue;
		}
		if (j->s[(*p)++] == '"')
			return true;
	}
	return false;
}

/* Past a bracketed value, counting only its own kind of bracket. */
static bool vf_json_skip_bracketed(const struct vf_json *j, size_t *p, char open, char close)
{
	long depth = 1;

	(*p)++;
	while (*p < j->end && depth > 0) {
		char c = j->s[*p];

		if (c == '"') {
			if (!vf_json_skip_string(j, p))
				return false;
			continue;
		}
		if (c == open)
			depth++;
		else if (c == close)
			depth--;
		(*p)++;
	}
	return depth == 0;
}

static bool vf_json_skip_value(const struct vf_json *j, size_t *p)
{
	size_t start;
	const char *lit;

	vf_json_ws(j, p);
	if (*p >= j->end)
		return false;
	switch (j->s[*p]) {
	case '"':
		return vf_json_skip_string(j, p);
	case '{':
		return vf_json_skip_bracketed(j, p, '{', '}');
	case '[':
		return vf_json_skip_bracketed(j, p, '[', ']');
	case 't':
		lit = "true";
		break;
	case 'f':
		lit = "false";
		break;
	case 'n':
		lit = "null";
		break;
	default:
		start = *p;
		while (*p < j->end && vf_json_numchar((unsigned char)j->s[*p]))
			(*p)++;
		return *p > start;
	}
	/* Skipped literals are not checked for a delimiter after them. */
	if (j->end - *p < strlen(lit) || memcmp(j->s + *p, lit, strlen(lit)))
		return false;
	*p += strlen(lit);
	return true;
}

static bool vf_json_string(struct vf_json *j, size_t *p, struct vf_item *v)
{
	size_t q = *p + 1, len = 0;
	bool esc = false, has_esc = false;

	while (q < j->end) {
		if (esc) {
			esc = false;
			has_esc = true;
		} else if (j->s[q] == '\\') {
			esc = true;
			q++;
			continue;
		} else if (j->s[q] == '"') {
			break;
		}
		q++;
		len++;
	}
	if (q >= j->end)
		return false;
	v->type = VF_STR;
	v->len = len;
	if (!has_esc) {
		v->s = j->s + *p + 1;
	} else {
		char *dst = vf_scratch(j, len + 1);

		v->s = dst;
		esc = false;
		for (size_t r = *p + 1; r < q; r++) {
			char c = j->s[r];

			if (!esc && c == '\\') {
				esc = true;
				continue;
			}
			if (esc) {
				esc = false;
				c = c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : c;
			}
			*dst++ = c;
		}
		*dst = '\0';
	}
	*p = q + 1;
	return true;
}

static bool vf_json_number(const struct vf_json *j, size_t *p, struct vf_item *v)
{
	char buf[256], *ep;
	int idx = 0;

	while (*p < j->end && idx < (int)sizeof(buf) - 1 &&
	       vf_json_numchar((unsigned char)j->s[*p]))
		buf[idx++] = j->s[(*p)++];
	buf[idx] = '\0';
	if (!idx)
		return false;
	v->type = VF_NUM;
	v->num = strtod(buf, &ep);
	return *ep == '\0';
}

/* true/false/null, which (unlike skipped ones) must end at a delimiter. */
static bool vf_json_literal(const struct vf_json *j, size_t *p, const char *lit)
{
	size_t l = strlen(lit);

	if (j->end - *p < l || memcmp(j->s + *p, lit, l))
		return false;
	if (*p + l < j->end) {
		char c = j->s[*p + l];

		if (!vf_space((unsigned char)c) && c != ',' && c != ']' && c != '}')
			return false;
	}
	*p += l;
	return true;
}

/* A scalar (string, number, literal) at *p, whitespace skipped first. A
 * '[' is left to the caller: *is_array is set and nothing is consumed. */
static bool vf_json_scalar(struct vf_json *j, size_t *p, struct vf_item *v, bool *is_array)
{
	char c;

	*is_array = false;
	vf_json_ws(j, p);
	if (*p >= j->end)
		return false;
	c = j->s[*p];
	switch (c) {
	case '"':
		return vf_json_string(j, p, v);
	case '[':
		*is_array = true;
		return true;
	case 't':
	case 'f':
		v->type = VF_NUM;
		v->num = c == 't';
		return vf_json_literal(j, p, c == 't' ? "true" : "false");
	case 'n':
		v->type = VF_NULL;
		return vf_json_literal(j, p, "null");
	default:
		if (vf_digit((unsigned char)c) || c == '-' || c == '+')
			return vf_json_number(j, p, v);
		return false;
	}
}

/* After an element: ',' continues (true, *closed false), ']' closes. */
static bool vf_json_after_element(const struct vf_json *j, size_t *p, bool *closed)
{
	vf_json_ws(j, p);
	if (*p >= j->end)
		return false;
	*closed = j->s[*p] == ']';
	if (*closed || j->s[*p] == ',') {
		(*p)++;
		if (!*closed)
			vf_json_ws(j, p);
		return true;
	}
	return false;
}

/*
 * Checks a nested array at *p ('[') without building it: the grammar of
 * arrays of scalars and arrays needs only a depth counter, so any nesting is
 * checked without recursion.
 */
static bool vf_json_check_array(struct vf_json *j, size_t *p)
{
	size_t depth = 0;
	struct vf_item v;
	bool nested, closed;

open:
	(*p)++;
	depth++;
	vf_json_ws(j, p);
	if (*p < j->end && j->s[*p] == ']') {
		(*p)++;
		goto close;
	}
element:
	if (!vf_json_scalar(j, p, &v, &nested))
		return false;
	if (nested)
		goto open;
after:
	if (!vf_json_after_element(j, p, &closed))
		return false;
	if (!closed)
		goto element;
close:
	if (--depth == 0)
		return true;
	goto after;
}

/* A top-level array at *p ('['): its elements, nested arrays as empty tuples. */
static bool vf_json_array(struct vf_json *j, size_t *p, struct vf_item *v)
{
	struct vf_item *ele = NULL;
	size_t n = 0, alloc = 0;
	bool nested, closed = false;

	(*p)++;
	vf_json_ws(j, p);
	if (*p < j->end && j->s[*p] == ']') {
		(*p)++;
		closed = true;
	}
	while (!closed) {
		struct vf_item e = { 0 };

		if (!vf_json_scalar(j, p, &e, &nested))
			return false;
		if (nested) {
			if (!vf_json_check_array(j, p))
				return false;
			e.type = VF_TUPLE;
		}
		if (n == alloc) {
			struct vf_item *grown;

			alloc = alloc ? alloc * 2 : 8;
			grown = vf_scratch(j, alloc * sizeof(*grown));
			if (n)
				memcpy(grown, ele, n * sizeof(*ele));
			ele = grown; /* the old block is freed with the scratch */
		}
		ele[n++] = e;
		if (!vf_json_after_element(j, p, &closed))
			return false;
	}
	v->type = VF_TUPLE;
	v->ele = ele;
	v->n = n;
	return true;
}

/* The value of top-level field name[0..nlen) as an item, or false. */
static bool vf_json_field(struct vf_json *j, const char *name, size_t nlen, struct vf_item *v)
{
	size_t p = 0;
	bool is_array;

	vf_json_ws(j, &p);
	if (p >= j->end || j->s[p] != '{')
		return false;
	p++;
	for (;;) {
		size_t key, klen;
		bool match;

		vf_json_ws(j, &p);
		if (p >= j->end || j->s[p] != '"')
			return false;
		key = p + 1;
		if (!vf_json_skip_string(j, &p))
			return false;
		/* Raw bytes: an escaped key never equals a selector. */
		klen = p - 1 - key;
		match = klen == nlen && !memcmp(j->s + key, name, nlen);
		vf_json_ws(j, &p);
		if (p >= j->end || j->s[p] != ':')
			return false;
		p++;
		vf_json_ws(j, &p);
		if (p >= j->end)
			return false;
		if (match)
			break;
		if (!vf_json_skip_value(j, &p))
			return false;
		vf_json_ws(j, &p);
		if (p >= j->end || j->s[p] != ',')
			return false;
		p++;
	}
	memset(v, 0, sizeof(*v));
	if (!vf_json_scalar(j, &p, v, &is_array))
		return false;
	return is_array ? vf_json_array(j, &p, v) : true;
}

/* ---- evaluation ------------------------------------------------------------ */

static double vf_num(const struct vf_item *v)
{
	char buf[256], *end;
	double d;

	if (v->type == VF_NUM)
		return v->num;
	if (v->type != VF_STR || v->len >= sizeof(buf))
		return 0;
	memcpy(buf, v->s, v->len);
	buf[v->len] = '\0';
	d = strtod(buf, &end);
	return *end == '\0' ? d : 0;
}

static bool vf_bool(const struct vf_item *v)
{
	if (v->type == VF_NUM)
		return v->num != 0;
	if (v->type == VF_STR)
		return v->len != 0;
	return v->type != VF_NULL;
}

static bool vf_equal(const struct vf_item *a, const struct vf_item *b)
{
	if (a->type == VF_STR && b->type == VF_STR)
		return a->len == b->len && !memcmp(a->s, b->s, a->len);
	if (a->type == VF_NUM && b->type == VF_NUM)
		return a->num == b->num;
	if (a->type == VF_NULL || b->type == VF_NULL)
		return a->type == b->type;
	return vf_num(a) == vf_num(b);
}

static bool vf_in(const struct vf_item *a, const struct vf_item *b)
{
	if (b->type == VF_TUPLE) {
		for (size_t i = 0; i < b->n; i++)
			if (vf_equal(a, &b->ele[i]))
				return true;
		return false;
	}
	if (a->type == VF_STR && b->type == VF_STR)
		return a->len <= b->len && memmem(b->s, b->len, a->s, a->len) != NULL;
	return false;
}

static double vf_apply(int op, const struct vf_item *a, const struct vf_item *b)
{
	switch (op) {
	case OP_NOT:
		return !vf_bool(b);
	case OP_POW:
		return pow(vf_num(a), vf_num(b));
	case OP_MUL:
		return vf_num(a) * vf_num(b);
	case OP_DIV:
		return vf_num(a) / vf_num(b);
	case OP_MOD:
		return fmod(vf_num(a), vf_num(b));
	case OP_ADD:
		return vf_num(a) + vf_num(b);
	case OP_SUB:
		return vf_num(a) - vf_num(b);
	case OP_GT:
		return vf_num(a) > vf_num(b);
	case OP_GTE:
		return vf_num(a) >= vf_num(b);
	case OP_LT:
		return vf_num(a) < vf_num(b);
	case OP_LTE:
		return vf_num(a) <= vf_num(b);
	case OP_EQ:
		return vf_equal(a, b);
	case OP_NEQ:
		return !vf_equal(a, b);
	case OP_IN:
		return vf_in(a, b);
	case OP_AND:
		return vf_bool(a) && vf_bool(b);
	case OP_OR:
		return vf_bool(a) || vf_bool(b);
	}
	return 0;
}

#define VF_STACK_ON_STACK 32

int vfilter_match(const struct vfilter *f, const char *json, size_t len)
{
	struct vf_item small[VF_STACK_ON_STACK], *st = small;
	struct vf_json j = { .s = json, .end = len };
	int n = 0, ret = 0;

	if (!json)
		return 0;
	if (f->depth > VF_STACK_ON_STACK)
		st = xmalloc((size_t)f->depth * sizeof(*st));
	for (int i = 0; i < f->nprog; i++) {
		const struct vf_item *t = &f->prog[i];
		struct vf_item r = { .type = VF_NUM };

		if (t->type == VF_SEL) {
			if (!t->len || !vf_json_field(&j, t->s, t->len, &st[n]))
				goto out;
			n++;
		} else if (t->type != VF_OP) {
			st[n++] = *t;
		} else {
			/* The compiler proved every operator has its operands. */
			const struct vf_item *b = &st[--n], *a = NULL;

			if (vf_arity(t->op) == 2)
				a = &st[--n];
			r.num = vf_apply(t->op, a, b);
			st[n++] = r;
		}
	}
	ret = n == 1 && vf_bool(&st[0]);
out:
	vf_scratch_free(&j);
	if (st != small)
		xfree(st);
	return ret;
}
