// SPDX-License-Identifier: BSD-3-Clause
/*
 * LOLWUT [VERSION n] [args]: the computer art each Redis version draws.
 * Redis 8.8 (the default here) composes a poem as Balestrini's TAPE MARK I
 * did; VERSION 5 draws Georg Nees's "Schotter" in Braille dots, VERSION 6 a
 * skyline in terminal colours; any other version prints the version line
 * alone. The drawings are the same pixels as Redis's for the same random
 * draws: the geometry below keeps its float and double steps, so a drawing
 * without randomness (Schotter with at most two rows of squares) is byte for
 * byte Redis's. The version named in the last line is the one INFO reports.
 */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "commands.h"
#include "mem.h"
#include "reply.h"
#include "text.h"
#include "util.h"

#define LOLWUT_REDIS_VERSION "7.0.15" /* as INFO's redis_version */
#define LOLWUT_RAND_MAX 2147483647

/* A per-call generator with the range of glibc's rand() (0 .. 2^31-1). */
struct lw_rand {
	uint64_t s;
};

static int lw_rand(struct lw_rand *r)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return (int)(r->s >> 33);
}

struct canvas {
	int width, height;
	unsigned char *px;
};

static void canvas_init(struct canvas *cv, int width, int height, int color)
{
	cv->width = width;
	cv->height = height;
	cv->px = xmalloc((size_t)width * (size_t)height);
	memset(cv->px, color, (size_t)width * (size_t)height);
}

static void canvas_set(struct canvas *cv, int x, int y, int color)
{
	if (x >= 0 && y >= 0 && x < cv->width && y < cv->height)
		cv->px[x + y * cv->width] = (unsigned char)color;
}

static int canvas_get(const struct canvas *cv, int x, int y)
{
	if (x < 0 || y < 0 || x >= cv->width || y >= cv->height)
		return 0;
	return cv->px[x + y * cv->width];
}

/* Bresenham's line, every octant, both ends included. */
static void canvas_line(struct canvas *cv, int x0, int y0, int x1, int y1, int color)
{
	int dx = abs(x1 - x0), dy = abs(y1 - y0);
	int step_x = x0 < x1 ? 1 : -1, step_y = y0 < y1 ? 1 : -1;
	int err = dx - dy;

	for (;;) {
		int e2 = 2 * err; /* both steps decided on the same error */

		canvas_set(cv, x0, y0, color);
		if (x0 == x1 && y0 == y1)
			return;
		if (e2 > -dy) {
			err -= dy;
			x0 += step_x;
		}
		if (e2 < dx) {
			err += dx;
			y0 += step_y;
		}
	}
}

/* A square of side `side` centred on (x, y), turned by `angle` radians:
 * its corners lie on the circle of radius side/sqrt(2), rounded as Redis
 * rounds them (a float radius, double trigonometry). */
static void canvas_square(struct canvas *cv, int x, int y, float side, float angle)
{
	float radius = roundf((float)(side / 1.4142135623));
	float a = (float)(M_PI / 4 + angle);
	int cx[4], cy[4];

	for (int i = 0; i < 4; i++) {
		cx[i] = (int)round(sin(a) * radius + x);
		cy[i] = (int)round(cos(a) * radius + y);
		a = (float)(a + M_PI / 2);
	}
	for (int i = 0; i < 4; i++)
		canvas_line(cv, cx[i], cy[i], cx[(i + 1) % 4], cy[(i + 1) % 4], 1);
}

/* One Braille character per 2x4 pixels (U+2800 plus the dots' bits), rows
 * of them separated by newlines. */
static void render_braille(const struct canvas *cv, struct text *t)
{
	/* Dot bit of each pixel of a cell, by column then row. */
	static const int dot[2][4] = { { 0, 1, 2, 6 }, { 3, 4, 5, 7 } };

	for (int y = 0; y < cv->height; y += 4) {
		for (int x = 0; x < cv->width; x += 2) {
			int bits = 0, code;

			for (int col = 0; col < 2; col++)
				for (int row = 0; row < 4; row++)
					if (canvas_get(cv, x + col, y + row))
						bits |= 1 << dot[col][row];
			code = 0x2800 + bits;
			text_printf(t, "%c%c%c", 0xE0 | (code >> 12), 0x80 | ((code >> 6) & 0x3F),
				    0x80 | (code & 0x3F));
		}
		if (y != cv->height - 1)
			text_printf(t, "\n");
	}
}

/* Reads argv[i] if present into *v; false after replying an error. */
static bool opt_long(struct client *c, int i, long long *v)
{
	return i >= c->argc || arg_ll(c, i, v);
}

static long long clamp(long long v, long long lo, long long hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* Version 5: Schotter, squares that come loose row after row. */
static bool lolwut5(struct client *c, int base, struct lw_rand *r, struct text *t)
{
	long long cols = 66, per_row = 8, per_col = 12;
	struct canvas cv;
	int width, padding, height;
	float side;

	if (!opt_long(c, base + 1, &cols) || !opt_long(c, base + 2, &per_row) ||
	    !opt_long(c, base + 3, &per_col))
		return false;
	cols = clamp(cols, 1, 1000);
	per_row = clamp(per_row, 1, 200);
	per_col = clamp(per_col, 1, 200);
	width = (int)cols * 2;
	padding = width > 4 ? 2 : 0;
	side = (float)(width - padding * 2) / (float)per_row;
	height = (int)(side * (float)per_col + (float)(padding * 2));
	canvas_init(&cv, width, height, 0);
	for (int y = 0; y < per_col; y++) {
		for (int x = 0; x < per_row; x++) {
			int sx = (int)((float)x * side + side / 2 + (float)padding);
			int sy = (int)((float)y * side + side / 2 + (float)padding);
			float angle = 0;

			/* The first two rows stay in order. */
			if (y > 1) {
				float d[3];

				for (int i = 0; i < 3; i++)
					d[i] = (float)lw_rand(r) / (float)LOLWUT_RAND_MAX /
					       (float)per_col * (float)y;
				for (int i = 0; i < 3; i++)
					if (lw_rand(r) % 2)
						d[i] = -d[i];
				angle = d[0];
				sx = (int)((float)sx + d[1] * side / 3);
				sy = (int)((float)sy + d[2] * side / 3);
			}
			canvas_square(&cv, sx, sy, side, angle);
		}
	}
	render_braille(&cv, t);
	text_printf(t, "\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. %s\n",
		    LOLWUT_REDIS_VERSION);
	xfree(cv.px);
	return true;
}

struct building {
	int x, width, height, color;
	bool windows;
};

/* A building standing on the bottom row, its roof two pixels narrower on
 * each side; lit windows two pixels wide in its inner part. */
static void draw_building(struct canvas *cv, const struct building *b, struct lw_rand *r)
{
	int bottom = cv->height - 1, top = bottom - b->height + 1;

	for (int y = bottom; y >= top; y--) {
		for (int x = b->x; x < b->x + b->width; x++) {
			int color = b->color;

			if (y == top && (x <= b->x + 1 || x >= b->x + b->width - 2))
				continue;
			if (b->windows && x > b->x + 1 && x < b->x + b->width - 2 && y > top + 1 &&
			    y < bottom - 1) {
				int rx = x - (b->x + 1), ry = y - (top + 1);

				if ((rx / 2) % 2 && ry % 2) {
					do
						color = 1 + lw_rand(r) % 2;
					while (color == b->color);
					if (rx % 2) /* a window's right half */
						color = canvas_get(cv, x - 1, y);
				}
			}
			canvas_set(cv, x, y, color);
		}
	}
}

/* Version 6: a skyline as in the parallax backgrounds of 8-bit games. */
static bool lolwut6(struct client *c, int base, struct lw_rand *r, struct text *t)
{
	static const char *const esc[] = { "0;30;40m", "0;90;100m", "0;37;47m", "0;97;107m" };
	long long cols = 80, rows = 20;
	struct building b;
	struct canvas cv;

	if (!opt_long(c, base + 1, &cols) || !opt_long(c, base + 2, &rows))
		return false;
	canvas_init(&cv, (int)clamp(cols, 1, 1000), (int)clamp(rows, 1, 1000), 3);
	/* Two background layers without windows, the lighter one behind. */
	for (int color = 2; color >= 1; color--) {
		b.color = color;
		b.windows = false;
		for (int x = -10; x < cv.width;) {
			x += lw_rand(r) % 8;
			b.x = x;
			b.width = 10 + lw_rand(r) % 9;
			b.height = cv.height / 2 + lw_rand(r) % cv.height / (color == 2 ? 2 : 3);
			draw_building(&cv, &b, r);
			x += color == 2 ? b.width / 2 : b.width + 1;
		}
	}
	b.color = 0;
	b.windows = true;
	for (int x = -10; x < cv.width;) {
		x += lw_rand(r) % 8;
		b.x = x;
		b.width = 5 + lw_rand(r) % 14;
		if (b.width % 4)
			b.width += b.width % 3;
		b.height = cv.height / 3 + lw_rand(r) % cv.height / 2;
		draw_building(&cv, &b, r);
		x += b.width + 5;
	}
	for (int y = 0; y < cv.height; y++) {
		for (int x = 0; x < cv.width; x++)
			text_printf(t, "\033[%s \033[0m", esc[canvas_get(&cv, x, y) & 3]);
		if (y != cv.height - 1)
			text_printf(t, "\n");
	}
	text_printf(t,
		    "\nDedicated to the 8 bit game developers of past and present.\n"
		    "Original 8 bit image from Plaguemon by hikikomori. Redis ver. %s\n",
		    LOLWUT_REDIS_VERSION);
	xfree(cv.px);
	return true;
}

/* A verse of TAPE MARK I's sources: its English and Italian text, the
 * metre it ends on and begins with, and its source. */
struct verse {
	const char *en, *it;
	char first[4], last[4];
	char group;
};

static const struct verse verses[] = {
	/* Michihito Hachiya, Diary of Hiroshima. */
	{ " The blinding / globe / of fire ", " l accecante   /  globo  /  di fuoco  ", "1/4",
	  "2/3", '1' },
	{ " It expands / rapidly ", " si espande   /  rapidamente  ", "1/2", "3/4", '1' },
	{ " Thirty times / brighter / than the sun ", " trenta volte  / piu luminoso  / del sole ",
	  "2/3", "2/4", '1' },
	{ " When it reaches / the stratosphere ", " quando  raggiunge / la stratosfera  ", "3/4",
	  "1/2", '1' },
	{ " The summit / of the cloud ", " la  sommita  /  della nuvola ", "1/3", "2/3", '1' },
	{ " Assumes / the well-known shape / of a mushroom ",
	  " assume   / la ben nota forma  / di fungo ", "2/4", "3/4", '1' },
	/* Paul Goldwin, The Mystery of the Elevator. */
	{ " The head / pressed / upon the shoulder ", " la testa / premuta  / sulla spalla  ",
	  "1/4", "2/4", '2' },
	{ " The hair / between the lips ", " i  capelli   /  tra le labbra ", "1/4", "2/4", '2' },
	{ " They lay / motionless / without speaking ", " giacquero  /   immobili / senza parlare ",
	  "2/3", "2/3", '2' },
	{ " Till he moved / his fingers / slowly ",
	  " finche non mosse  /  le dita  / lentamente    ", "3/4", "1/3", '2' },
	{ " Trying / to grasp ", " cercando / di afferrare  ", "3/4", "1/2", '2' },
	/* Lao Tse, Tao Te Ching. */
	{ " While the multitude / of things / comes into being ",
	  " mentre la moltitudine  /  delle cose  /   accade   ", "1/2", "1/2", '3' },
	{ " I envisage / their return ", " io contemplo  /  il loro ritorno    ", "2/3", "3/4",
	  '3' },
	{ " Although / things / flourish ", " malgrado / che le cose  /  fioriscano    ", "1/2",
	  "2/3", '3' },
	{ " They all return / to / their roots ", " esse tornano  / tutte    / alla loro radice   ",
	  "2/3", "1/4", '3' },
};

#define NVERSES (sizeof(verses) / sizeof(verses[0]))
#define STANZA_MAX 10

/* May verse v follow prev? Their metres meet, and their sources differ. */
static bool verse_follows(const struct verse *v, const struct verse *prev)
{
	return (v->first[0] == prev->last[0] || v->first[2] == prev->last[0] ||
		v->first[2] == prev->last[2]) &&
	       v->group != prev->group;
}

/* Version 8: TAPE MARK I. The verses shuffled (Fisher-Yates); then each
 * line of the stanza is the first remaining verse that may follow the last
 * one, up to ten lines; upper case, the metre's slashes blanked. */
static void lolwut8(struct client *c, int base, struct lw_rand *r, struct text *t)
{
	const struct verse *pool[NVERSES], *stanza[STANZA_MAX];
	bool italian = arg_is(c, base + 1, "IT");
	size_t left = NVERSES, n = 0, start = t->len;

	for (size_t i = 0; i < NVERSES; i++)
		pool[i] = &verses[i];
	for (size_t i = NVERSES - 1; i > 0; i--) {
		size_t j = (size_t)lw_rand(r) % (i + 1);
		const struct verse *tmp = pool[j];

		pool[j] = pool[i];
		pool[i] = tmp;
	}
	while (n < STANZA_MAX) {
		size_t i = 0;

		while (i < left && n && !verse_follows(pool[i], stanza[n - 1]))
			i++;
		if (i == left)
			break;
		stanza[n++] = pool[i];
		memmove(&pool[i], &pool[i + 1], (left - i - 1) * sizeof(pool[0]));
		left--;
	}
	for (size_t i = 0; i < n; i++)
		text_printf(t, "%s\n", italian ? stanza[i]->it : stanza[i]->en);
	for (size_t i = start; i < t->len; i++)
		t->p[i] = t->p[i] == '/' ? ' ' : (char)toupper((unsigned char)t->p[i]);
	text_printf(
		t,
		"\nIn 1961, Nanni Balestrini created one of the first computer-generated poems, "
		"TAPE "
		"MARK I, using an IBM 7090 mainframe. Each execution combined verses from three "
		"literary sources following algorithmic rules based on metrical compatibility and "
		"group constraints. This LOLWUT command reproduces Balestrini's original "
		"algorithm, "
		"generating new stanzas through the same computational poetry process described in "
		"Almanacco Letterario Bompiani, 1962.\n\n"
		"https://en.wikipedia.org/wiki/Digital_poetry\n"
		"https://www.youtube.com/watch?v=8i7uFCK7G0o (English subs)\n\n"
		"Use: LOLWUT IT for the original Italian output. Redis ver. %s\n",
		LOLWUT_REDIS_VERSION);
}

void cmd_lolwut(struct client *c)
{
	struct lw_rand r = { (uint64_t)mono_us() * 0x9E3779B97F4A7C15ull | 1 };
	struct text t = { 0 };
	unsigned major = 8; /* Redis 8.8's own art */
	bool ok = true;
	int base = 0;

	if (c->argc >= 3 && arg_is(c, 1, "VERSION")) {
		long long v;
		char ver[32];

		if (!arg_ll(c, 2, &v))
			return;
		/* Redis formats "%u.0.0" and reads its first digit: 50 is
		 * not 5. */
		snprintf(ver, sizeof(ver), "%u.0.0", (unsigned)v);
		major = ver[1] == '.' ? (unsigned)(ver[0] - '0') : 0;
		base = 2;
	}
	if (major == 5)
		ok = lolwut5(c, base, &r, &t);
	else if (major == 6)
		ok = lolwut6(c, base, &r, &t);
	else if (major == 8)
		lolwut8(c, base, &r, &t);
	else
		text_printf(&t, "Redis ver. %s\n", LOLWUT_REDIS_VERSION);
	if (ok) /* else an argument's error is the reply */
		reply_verbatim(c, t.p ? t.p : "", t.len);
	xfree(t.p);
}
