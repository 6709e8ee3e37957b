// SPDX-License-Identifier: GPL-2.0-only
/*
 * xkv-bench's open-loop timetable (tools/xkv-bench/schedule.h) on a fake
 * clock: send times for a rate, slots dealt over connections without drift,
 * catch-up after a stall with latency measured from the schedule, and the
 * achieved-rate and sustained computations. Then what the slots carry (the
 * workload's keys and requests) and how replies are counted (resp_reader),
 * and finally whole steps against a fake server written here, a loopback
 * listener that answers every request: request counts are exact, errors are
 * counted, and an open-loop step's achieved rate is within generous bounds
 * of its target (a timing never decides more than that).
 */
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"
#include "hist.h"
#include "resp_reader.h"
#include "schedule.h"
#include "workload.h"

#include "kselftest_harness.h"

#define MS 1000000ULL
#define SEC 1000000000ULL

/* ---- the timetable ------------------------------------------------------------ */

TEST(send_times_for_a_rate)
{
	struct schedule s;
	uint64_t when, start = 5 * SEC;

	schedule_init(&s, start, 1000, 0, 1, SCHEDULE_NONE, SCHEDULE_NONE);
	for (uint64_t j = 0; j < 100; j++)
		ASSERT_EQ(start + j * MS, schedule_slot_time(&s, j));
	/* Nothing is due before the start; slot 0 at the start, slot 1 a millisecond later. */
	ASSERT_FALSE(schedule_take(&s, start - 1, &when));
	ASSERT_TRUE(schedule_take(&s, start, &when));
	ASSERT_EQ(start, when);
	ASSERT_FALSE(schedule_take(&s, start + MS - 1, &when));
	ASSERT_EQ(start + MS, schedule_next(&s));
	ASSERT_TRUE(schedule_take(&s, start + MS, &when));
	ASSERT_EQ(start + MS, when);
}

TEST(no_drift_with_fractional_intervals)
{
	struct schedule s;

	/* 3/s is 333333333.33 ns apart: slots are computed, never accumulated. */
	schedule_init(&s, 0, 3, 0, 1, SCHEDULE_NONE, SCHEDULE_NONE);
	ASSERT_EQ(333333333, schedule_slot_time(&s, 1));
	ASSERT_EQ(666666666, schedule_slot_time(&s, 2));
	ASSERT_EQ(SEC, schedule_slot_time(&s, 3));
	ASSERT_EQ(1000 * SEC, schedule_slot_time(&s, 3000));
	/* A year of a billion requests a second does not overflow. */
	schedule_init(&s, 0, 1000000000, 0, 1, SCHEDULE_NONE, SCHEDULE_NONE);
	ASSERT_EQ(365ULL * 86400 * SEC, schedule_slot_time(&s, 365ULL * 86400 * 1000000000));
}

TEST(slots_dealt_over_connections)
{
	struct schedule s[4];
	uint64_t seen[100] = { 0 }, when;

	/* 1000/s over 4 connections: together they cover every millisecond once. */
	for (unsigned c = 0; c < 4; c++)
		schedule_init(&s[c], 0, 1000, c, 4, 100 * MS, SCHEDULE_NONE);
	for (unsigned c = 0; c < 4; c++) {
		uint64_t n = 0;

		ASSERT_EQ(25, schedule_left(&s[c]));
		while (schedule_take(&s[c], UINT64_MAX - 1, &when)) {
			ASSERT_EQ(0, when % MS);
			ASSERT_EQ(c, when / MS % 4);
			seen[when / MS]++;
			n++;
		}
		ASSERT_EQ(25, n);
		ASSERT_EQ(0, schedule_left(&s[c]));
		ASSERT_EQ(SCHEDULE_NONE, schedule_next(&s[c]));
	}
	for (unsigned i = 0; i < 100; i++)
		ASSERT_EQ(1, seen[i]);
}

TEST(end_and_limit)
{
	struct schedule s;
	uint64_t when, n = 0;

	/* A 10 ms window at 1000/s holds slots 0..9: the one at 10 ms is out. */
	schedule_init(&s, SEC, 1000, 0, 1, SEC + 10 * MS, SCHEDULE_NONE);
	ASSERT_EQ(10, schedule_left(&s));
	while (schedule_take(&s, 2 * SEC, &when))
		n++;
	ASSERT_EQ(10, n);
	/* 10 requests over 3 connections: 4, 3 and 3. */
	for (unsigned c = 0; c < 3; c++) {
		schedule_init(&s, 0, 1000, c, 3, SCHEDULE_NONE, 10);
		ASSERT_EQ(c == 0 ? 4 : 3, schedule_left(&s));
		for (n = 0; schedule_take(&s, UINT64_MAX - 1, &when); n++)
			;
		ASSERT_EQ(c == 0 ? 4 : 3, n);
	}
	/* A rate that does not divide the window: 7/s for 1 s is slots 0..6. */
	schedule_init(&s, 0, 7, 0, 1, SEC, SCHEDULE_NONE);
	ASSERT_EQ(7, schedule_left(&s));
	schedule_init(&s, 0, 7, 1, 2, SEC, SCHEDULE_NONE);
	ASSERT_EQ(3, schedule_left(&s));
}

TEST(catch_up_after_a_stall)
{
	struct schedule s;
	struct hist h;
	uint64_t when, n = 0;

	/*
	 * 1000/s; the client sends slot 0 on time, then stalls until 10.5 ms.
	 * The ten overdue slots come out at once, in order, each with its own
	 * scheduled time, and a reply arriving right away measures from it:
	 * the stall is in the latencies, 9.5 ms down to 0.5 ms.
	 */
	hist_init(&h);
	schedule_init(&s, 0, 1000, 0, 1, SCHEDULE_NONE, SCHEDULE_NONE);
	ASSERT_TRUE(schedule_take(&s, 0, &when));
	hist_record(&h, 0 - when);
	while (schedule_take(&s, 10 * MS + MS / 2, &when)) {
		n++;
		ASSERT_EQ(n * MS, when);
		hist_record(&h, 10 * MS + MS / 2 - when);
	}
	ASSERT_EQ(10, n);
	ASSERT_EQ(11 * MS, schedule_next(&s));
	ASSERT_EQ(11, h.total);
	ASSERT_EQ(9 * MS + MS / 2, h.max);
	ASSERT_EQ(0, h.min);
	/* Back on the timetable: slot 11 at 11 ms exactly. */
	ASSERT_FALSE(schedule_take(&s, 11 * MS - 1, &when));
	ASSERT_TRUE(schedule_take(&s, 11 * MS, &when));
	ASSERT_EQ(11 * MS, when);
}

/*
 * A simulated open-loop step on the fake clock: 1000 req/s for 1 s into a
 * FIFO server that needs `service` ns per request. Returns the achieved rate
 * and fills h with latencies measured from the schedule.
 */
static double simulate(uint64_t service, struct hist *h)
{
	struct schedule s;
	uint64_t when, free_at = 0, last = 0, done = 0;

	hist_init(h);
	schedule_init(&s, 0, 1000, 0, 1, SEC, SCHEDULE_NONE);
	while (schedule_take(&s, UINT64_MAX - 1, &when)) {
		uint64_t begin = when > free_at ? when : free_at;

		free_at = begin + service;
		hist_record(h, free_at - when);
		last = free_at;
		done++;
	}
	return schedule_achieved_rate(done, SEC, last);
}

TEST(overload_shows_in_rate_and_latency)
{
	struct hist h;
	double rate;

	/* 0.5 ms per request: keeps up, every latency is the service time. */
	rate = simulate(MS / 2, &h);
	ASSERT_TRUE(rate > 999.0 && rate <= 1000.0);
	ASSERT_TRUE(schedule_sustained(1000, rate));
	ASSERT_EQ(MS / 2, h.min);
	ASSERT_EQ(MS / 2, h.max);
	/*
	 * 2 ms per request: half the rate. Measured from the schedule, the queue
	 * shows: the last request waited about a second.
	 */
	rate = simulate(2 * MS, &h);
	ASSERT_TRUE(rate > 499.0 && rate < 501.0);
	ASSERT_FALSE(schedule_sustained(1000, rate));
	ASSERT_EQ(2 * MS, h.min);
	ASSERT_EQ(2000 * MS - 999 * MS, h.max);
	ASSERT_LT(900 * MS, hist_percentile(&h, 99));
}

TEST(achieved_rate_and_sustained)
{
	/* Open loop, on time: replies over the window. */
	ASSERT_TRUE(schedule_achieved_rate(10000, SEC, SEC) == 10000.0);
	/* The last reply came after the window: over the longer time. */
	ASSERT_TRUE(schedule_achieved_rate(10000, SEC, 2 * SEC) == 5000.0);
	/* All done early: still over the window. */
	ASSERT_TRUE(schedule_achieved_rate(5000, SEC, SEC / 2) == 5000.0);
	/* Closed loop: no window. */
	ASSERT_TRUE(schedule_achieved_rate(1000, 0, SEC / 4) == 4000.0);
	ASSERT_TRUE(schedule_achieved_rate(0, 0, 0) == 0.0);
	/* 97% is the line. */
	ASSERT_TRUE(schedule_sustained(10000, 9700.0));
	ASSERT_FALSE(schedule_sustained(10000, 9699.9));
	ASSERT_TRUE(schedule_sustained(10000, 10000.0));
	ASSERT_TRUE(schedule_sustained(1, 0.97));
	ASSERT_FALSE(schedule_sustained(1000000000, 969999999.0));
}

/* ---- what the slots carry ------------------------------------------------------ */

static void spec_defaults(struct workload_spec *spec)
{
	struct bench_opts o;

	bench_opts_init(&o);
	*spec = o.load;
}

TEST(request_encoding)
{
	static const char head[] = "*3\r\n$3\r\nSET\r\n$4\r\nk:42\r\n$3\r\n";
	struct workload_spec spec;
	struct workload w;
	char err[160], buf[256];
	size_t n;

	spec_defaults(&spec);
	spec.command = "set";
	spec.key_prefix = "k:";
	spec.data_size = 3;
	ASSERT_EQ(0, workload_init(&w, &spec, err, sizeof(err)));
	n = workload_encode(&w, 0, 42, buf);
	ASSERT_EQ(sizeof(head) - 1 + 3 + 2, n);
	ASSERT_EQ(0, memcmp(buf, head, sizeof(head) - 1));
	/* The value: three lowercase letters and CRLF. */
	for (size_t i = sizeof(head) - 1; i < n - 2; i++)
		ASSERT_TRUE(buf[i] >= 'a' && buf[i] <= 'z');
	ASSERT_EQ(0, memcmp(buf + n - 2, "\r\n", 2));
	ASSERT_LE(n, w.max_len);
	n = workload_encode(&w, 0, UINT64_MAX, buf);
	ASSERT_LE(n, w.max_len);
	workload_free(&w);

	/* A template, keys repeated, words kept as given. */
	spec.command = "HSET __key__ f __data__ g __key__";
	spec.data_size = 0;
	ASSERT_EQ(0, workload_init(&w, &spec, err, sizeof(err)));
	n = workload_encode(&w, 0, 7, buf);
	buf[n] = '\0';
	ASSERT_STREQ(
		"*6\r\n$4\r\nHSET\r\n$3\r\nk:7\r\n$1\r\nf\r\n$0\r\n\r\n$1\r\ng\r\n$3\r\nk:7\r\n",
		buf);
	workload_free(&w);

	/* A ratio: 1 SET, then 3 GETs, over and over. */
	spec.command = NULL;
	spec.ratio_set = 1;
	spec.ratio_get = 3;
	ASSERT_EQ(0, workload_init(&w, &spec, err, sizeof(err)));
	for (uint64_t seq = 0; seq < 12; seq++)
		ASSERT_EQ(seq % 4 ? 1 : 0, workload_pick(&w, seq));
	n = workload_encode(&w, 1, 5, buf);
	buf[n] = '\0';
	ASSERT_STREQ("*2\r\n$3\r\nGET\r\n$3\r\nk:5\r\n", buf);
	workload_free(&w);

	spec.command = "   ";
	ASSERT_EQ(-EINVAL, workload_init(&w, &spec, err, sizeof(err)));
}

TEST(sequential_keys_cover_the_space)
{
	struct workload_spec spec;
	struct workload w;
	struct keygen k;
	unsigned seen[100] = { 0 };
	char err[160];

	spec_defaults(&spec);
	spec.keys = 100;
	spec.pattern = KEY_SEQUENTIAL;
	ASSERT_EQ(0, workload_init(&w, &spec, err, sizeof(err)));
	/* 3 connections, each its share (34, 33, 33), as a prefill deals them. */
	for (unsigned c = 0; c < 3; c++) {
		keygen_init(&k, &w, c, 3);
		for (unsigned i = 0; i < (c == 0 ? 34 : 33); i++)
			seen[keygen_next(&k)]++;
	}
	for (unsigned i = 0; i < 100; i++)
		ASSERT_EQ(1, seen[i]);
	workload_free(&w);
}

TEST(zipf_frequencies)
{
	const unsigned n = 10, draws = 1000000;
	double s_values[] = { 0.5, 0.99, 1.0, 1.5 };

	for (unsigned t = 0; t < sizeof(s_values) / sizeof(s_values[0]); t++) {
		unsigned counts[10] = { 0 };
		uint64_t rng = 12345;
		struct zipf z;
		double norm = 0;

		ASSERT_EQ(0, zipf_init(&z, n, s_values[t]));
		for (unsigned i = 0; i < draws; i++) {
			uint64_t k = zipf_sample(&z, &rng);

			ASSERT_GT(n, k);
			counts[k]++;
		}
		for (unsigned k = 1; k <= n; k++)
			norm += pow(k, -s_values[t]);
		for (unsigned k = 1; k <= n; k++) {
			double want = draws * pow(k, -s_values[t]) / norm;

			/* Within 3% or 5 sigma, whichever is wider. */
			ASSERT_TRUE(fabs(counts[k - 1] - want) <= fmax(0.03 * want, 5 * sqrt(want)))
			{
				TH_LOG("s=%g rank %u: %u draws, expected %.0f", s_values[t], k,
				       counts[k - 1], want);
			}
		}
	}
	ASSERT_EQ(-EINVAL, zipf_init(&(struct zipf){ 0 }, 10, 0.0));
	ASSERT_EQ(-EINVAL, zipf_init(&(struct zipf){ 0 }, 0, 1.0));
}

/* ---- counting replies ------------------------------------------------------------ */

/* Every RESP2 and RESP3 reply form, one reply each. */
static const char *const zoo[] = {
	"+OK\r\n",
	":42\r\n",
	"$5\r\nhello\r\n",
	"$12\r\nab\r\ncd\r\nef\r\n\r\n",
	"$0\r\n\r\n",
	"$-1\r\n",
	"*-1\r\n",
	"*0\r\n",
	"*3\r\n*1\r\n*1\r\n:1\r\n$0\r\n\r\n-ERR nested errors are data\r\n",
	"_\r\n",
	",3.14\r\n",
	"#t\r\n",
	"(12345678901234567890\r\n",
	"=8\r\ntxt:abcd\r\n",
	"%2\r\n+a\r\n:1\r\n+b\r\n*2\r\n$1\r\nx\r\n~1\r\n:2\r\n",
	"~0\r\n",
	">3\r\n+message\r\n+chan\r\n$2\r\nhi\r\n+OK\r\n", /* a push, then the reply */
	"|1\r\n+ttl\r\n:3\r\n:7\r\n",			  /* an attribute, then the reply */
	"*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n",		  /* an attribute inside */
	"$?\r\n;4\r\nHell\r\n;1\r\no\r\n;0\r\n",
	"*?\r\n:1\r\n*?\r\n+x\r\n.\r\n.\r\n",
	"%?\r\n+k\r\n+v\r\n.\r\n",
	"*1\r\n%0\r\n",
};

/* Feeds the bytes n at a time, keeping what the reader leaves, like a connection. */
static int feed_in_pieces(struct resp_reader *r, const char *p, size_t len, size_t n)
{
	char buf[4096];
	size_t have = 0, pos = 0;

	while (pos < len) {
		size_t k = len - pos < n ? len - pos : n;
		ssize_t used;

		memcpy(buf + have, p + pos, k);
		have += k;
		pos += k;
		used = resp_reader_feed(r, buf, have);
		if (used < 0)
			return (int)used;
		memmove(buf, buf + used, have - (size_t)used);
		have -= (size_t)used;
	}
	return (int)have;
}

TEST(reader_counts_every_type)
{
	char all[4096] = "";
	size_t nzoo = sizeof(zoo) / sizeof(zoo[0]);

	for (size_t i = 0; i < nzoo; i++)
		strcat(all, zoo[i]);
	for (size_t piece = 1; piece <= 17; piece++) {
		struct resp_reader r;

		resp_reader_init(&r);
		ASSERT_EQ(0, feed_in_pieces(&r, all, strlen(all), piece));
		ASSERT_EQ(nzoo, r.replies);
		ASSERT_EQ(0, r.errors);
		ASSERT_EQ(1, r.pushes);
		ASSERT_EQ(0, r.depth);
	}
}

TEST(reader_counts_errors)
{
	const char *in = "-ERR first\r\n+OK\r\n!11\r\nSYNTAX blob\r\n*1\r\n-ERR inner\r\n"
			 "-WRONGTYPE second\r\n";
	struct resp_reader r;

	for (size_t piece = 1; piece <= 7; piece++) {
		resp_reader_init(&r);
		ASSERT_EQ(0, feed_in_pieces(&r, in, strlen(in), piece));
		ASSERT_EQ(5, r.replies);
		ASSERT_EQ(3, r.errors);
		ASSERT_STREQ("ERR first", r.first_error);
	}
	resp_reader_init(&r);
	ASSERT_EQ(0, feed_in_pieces(&r, "!11\r\nSYNTAX blob\r\n", 18, 3));
	ASSERT_STREQ("SYNTAX blob", r.first_error);
}

TEST(reader_rejects_garbage)
{
	const char *bad[] = {
		"?x\r\n",   "$abc\r\n", "$3\r\nabcXY", "*-2\r\n",      ".\r\n",
		"+no cr\n", "\r\n",	";3\r\n",      "$?\r\n+x\r\n", "*1\r\n.\r\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct resp_reader r;

		resp_reader_init(&r);
		ASSERT_EQ(-EPROTO, resp_reader_feed(&r, bad[i], strlen(bad[i])))
		{
			TH_LOG("accepted %s", bad[i]);
		}
	}
}

/* ---- a fake server ------------------------------------------------------------ */

struct fake_server {
	int lfd;
	unsigned port;
	pthread_t thread;
	atomic_bool stop;
	const char *const *replies; /* given in rotation, one per request */
	unsigned nreplies;
	size_t piece;	      /* write replies in sends of this many bytes (0: at once) */
	bool close_after_one; /* close each connection after its first reply */
	atomic_ullong requests;
};

struct fake_client {
	int fd;
	size_t len;
	char buf[65536];
};

/* Complete requests at the front of buf: their count, their length in *used. */
static unsigned count_requests(const char *buf, size_t len, size_t *used)
{
	unsigned n = 0;
	size_t pos = 0;

	for (;;) {
		size_t p = pos;
		char *end;
		long argc;

		if (p >= len || buf[p] != '*' || !memchr(buf + p, '\n', len - p))
			break;
		argc = strtol(buf + p + 1, &end, 10);
		p = (size_t)(end - buf) + 2;
		for (long i = 0; i < argc && p <= len; i++) {
			long blen;

			if (p >= len || !memchr(buf + p, '\n', len - p))
				goto out;
			blen = strtol(buf + p + 1, &end, 10);
			p = (size_t)(end - buf) + 2 + (size_t)blen + 2;
		}
		if (p > len)
			break;
		pos = p;
		n++;
	}
out:
	*used = pos;
	return n;
}

static void send_all(int fd, const char *p, size_t len, size_t piece)
{
	while (len) {
		size_t k = piece && piece < len ? piece : len;
		ssize_t n = send(fd, p, k, MSG_NOSIGNAL);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return;
		}
		p += n;
		len -= (size_t)n;
	}
}

static void *fake_main(void *arg)
{
	struct fake_server *fs = arg;
	struct fake_client *cl[64] = { 0 };
	struct pollfd pfd[65];
	unsigned ncl = 0;
	uint64_t seq = 0;

	while (!atomic_load(&fs->stop)) {
		pfd[0] = (struct pollfd){ .fd = fs->lfd, .events = POLLIN };
		for (unsigned i = 0; i < ncl; i++)
			pfd[i + 1] = (struct pollfd){ .fd = cl[i]->fd, .events = POLLIN };
		if (poll(pfd, ncl + 1, 20) <= 0)
			continue;
		if ((pfd[0].revents & POLLIN) && ncl < 64) {
			int fd = accept(fs->lfd, NULL, NULL), one = 1;

			if (fd >= 0) {
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				cl[ncl] = calloc(1, sizeof(*cl[ncl]));
				cl[ncl++]->fd = fd;
			}
		}
		for (unsigned i = 0; i < ncl; i++) {
			struct fake_client *c = cl[i];
			char out[65536];
			size_t used, olen = 0;
			ssize_t n;
			unsigned reqs;

			if (!(pfd[i + 1].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
			if (n <= 0) {
				close(c->fd);
				c->fd = -1;
				continue;
			}
			c->len += (size_t)n;
			reqs = count_requests(c->buf, c->len, &used);
			memmove(c->buf, c->buf + used, c->len - used);
			c->len -= used;
			for (unsigned k = 0; k < reqs; k++) {
				const char *rep = fs->replies[seq++ % fs->nreplies];
				size_t rlen = strlen(rep);

				if (olen + rlen > sizeof(out)) {
					send_all(c->fd, out, olen, fs->piece);
					olen = 0;
				}
				memcpy(out + olen, rep, rlen);
				olen += rlen;
			}
			send_all(c->fd, out, olen, fs->piece);
			atomic_fetch_add(&fs->requests, reqs);
			if (reqs && fs->close_after_one) {
				close(c->fd);
				c->fd = -1;
			}
		}
		/* Drop the closed ones. */
		for (unsigned i = 0; i < ncl;) {
			if (cl[i]->fd >= 0) {
				i++;
				continue;
			}
			free(cl[i]);
			cl[i] = cl[--ncl];
		}
	}
	for (unsigned i = 0; i < ncl; i++) {
		close(cl[i]->fd);
		free(cl[i]);
	}
	return NULL;
}

static int fake_start(struct fake_server *fs, const char *const *replies, unsigned n)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);

	fs->replies = replies;
	fs->nreplies = n;
	fs->lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (fs->lfd < 0 || bind(fs->lfd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(fs->lfd, 128) || getsockname(fs->lfd, (struct sockaddr *)&a, &alen))
		return -errno;
	fs->port = ntohs(a.sin_port);
	return -pthread_create(&fs->thread, NULL, fake_main, fs);
}

static void fake_stop(struct fake_server *fs)
{
	atomic_store(&fs->stop, true);
	pthread_join(fs->thread, NULL);
	close(fs->lfd);
}

/* Options for a short step against the fake server. */
static void fake_opts(struct bench_opts *o, const struct fake_server *fs, unsigned threads,
		      unsigned conns, unsigned pipeline)
{
	bench_opts_init(o);
	o->port = fs->port;
	o->threads = threads;
	o->conns = conns;
	o->pipeline = pipeline;
	o->progress = false;
	o->load.keys = 1000;
}

static const char *const ok_reply[] = { "+OK\r\n" };

TEST(open_loop_rate_against_fake_server)
{
	struct fake_server fs = { 0 };
	struct bench_opts o;
	struct bench_step step;
	struct bench_result *res = malloc(sizeof(*res));
	struct workload w;
	char err[160];

	ASSERT_NE(NULL, res);
	ASSERT_EQ(0, fake_start(&fs, ok_reply, 1));
	fake_opts(&o, &fs, 2, 2, 8);
	o.test_time = 0.5;
	ASSERT_EQ(0, workload_init(&w, &o.load, err, sizeof(err)));
	bench_step_from_opts(&step, &o, 2000);
	ASSERT_EQ(0, bench_run(&o, &w, &step, res));
	fake_stop(&fs);
	TH_LOG("target 2000/s: %llu requests, achieved %.1f/s, p99 %.3f ms",
	       (unsigned long long)res->requests, res->achieved,
	       hist_percentile(&res->hist, 99) / 1e6);
	ASSERT_FALSE(bench_failed(res));
	/* The timetable holds exactly 1000 slots: sent and answered, or unsent. */
	ASSERT_EQ(1000, res->requests + res->unsent);
	ASSERT_EQ(res->requests, atomic_load(&fs.requests));
	ASSERT_EQ(res->requests, res->hist.total);
	/* Open loop never beats its target; a loaded machine may fall short, not by half. */
	ASSERT_LE(res->achieved, 2000.0 * 1.01);
	ASSERT_GE(res->achieved, 2000.0 * 0.5);
	ASSERT_EQ(500 * MS, res->window_ns);
	workload_free(&w);
	free(res);
}

TEST(closed_loop_counts_exactly)
{
	struct fake_server fs = { 0 };
	struct bench_opts o;
	struct bench_step step;
	struct bench_result *res = malloc(sizeof(*res));
	struct workload w;
	char err[160];

	ASSERT_NE(NULL, res);
	ASSERT_EQ(0, fake_start(&fs, ok_reply, 1));
	fake_opts(&o, &fs, 2, 3, 7);
	o.requests = 1000;
	o.test_time = 0;
	ASSERT_EQ(0, workload_init(&w, &o.load, err, sizeof(err)));
	bench_step_from_opts(&step, &o, 0);
	ASSERT_EQ(0, bench_run(&o, &w, &step, res));
	fake_stop(&fs);
	ASSERT_FALSE(bench_failed(res));
	ASSERT_EQ(1000, res->requests);
	ASSERT_EQ(1000, atomic_load(&fs.requests));
	ASSERT_EQ(1000, res->hist.total);
	ASSERT_LT(0, res->achieved);
	ASSERT_EQ(0, res->window_ns);
	workload_free(&w);
	free(res);
}

TEST(pipelined_resp3_replies_in_pieces)
{
	struct fake_server fs = { .piece = 3 };
	struct bench_opts o;
	struct bench_step step;
	struct bench_result *res = malloc(sizeof(*res));
	struct workload w;
	char err[160];

	/* Every reply form, dribbled out 3 bytes per send, 16 in flight per connection. */
	ASSERT_NE(NULL, res);
	ASSERT_EQ(0, fake_start(&fs, zoo, sizeof(zoo) / sizeof(zoo[0])));
	fake_opts(&o, &fs, 1, 2, 16);
	o.requests = 600;
	o.test_time = 0;
	ASSERT_EQ(0, workload_init(&w, &o.load, err, sizeof(err)));
	bench_step_from_opts(&step, &o, 0);
	ASSERT_EQ(0, bench_run(&o, &w, &step, res));
	fake_stop(&fs);
	ASSERT_FALSE(bench_failed(res))
	{
		TH_LOG("%s", res->first_error);
	}
	ASSERT_EQ(600, res->requests);
	ASSERT_EQ(600, res->hist.total);
	workload_free(&w);
	free(res);
}

TEST(error_replies_fail_the_run)
{
	static const char *const errs[] = { "-ERR fake failure\r\n", "!4\r\nBLOB\r\n" };
	struct fake_server fs = { 0 };
	struct bench_opts o;
	struct bench_step step;
	struct bench_result *res = malloc(sizeof(*res));
	struct workload w;
	char err[160];

	ASSERT_NE(NULL, res);
	ASSERT_EQ(0, fake_start(&fs, errs, 2));
	fake_opts(&o, &fs, 1, 1, 4);
	o.requests = 200;
	o.test_time = 0;
	ASSERT_EQ(0, workload_init(&w, &o.load, err, sizeof(err)));
	bench_step_from_opts(&step, &o, 0);
	ASSERT_EQ(0, bench_run(&o, &w, &step, res));
	fake_stop(&fs);
	ASSERT_TRUE(bench_failed(res));
	ASSERT_EQ(200, res->requests);
	ASSERT_EQ(200, res->errors);
	ASSERT_STREQ("ERR fake failure", res->first_error);
	workload_free(&w);
	free(res);
}

TEST(closed_connections_fail_the_run)
{
	struct fake_server fs = { .close_after_one = true };
	struct bench_opts o;
	struct bench_step step;
	struct bench_result *res = malloc(sizeof(*res));
	struct workload w;
	char err[160];

	ASSERT_NE(NULL, res);
	ASSERT_EQ(0, fake_start(&fs, ok_reply, 1));
	fake_opts(&o, &fs, 1, 2, 1);
	o.requests = 100;
	o.test_time = 0;
	ASSERT_EQ(0, workload_init(&w, &o.load, err, sizeof(err)));
	bench_step_from_opts(&step, &o, 0);
	ASSERT_EQ(0, bench_run(&o, &w, &step, res));
	fake_stop(&fs);
	ASSERT_TRUE(bench_failed(res));
	ASSERT_EQ(2, res->conn_errors);
	ASSERT_STREQ("connection closed by the server", res->first_error);
	workload_free(&w);
	free(res);
}

TEST(no_server)
{
	struct fake_server fs = { 0 };
	struct bench_opts o;
	struct bench_step step;
	struct bench_result *res = malloc(sizeof(*res));
	struct workload w;
	char err[160];

	/* A port that was just free: nobody listens there. */
	ASSERT_NE(NULL, res);
	ASSERT_EQ(0, fake_start(&fs, ok_reply, 1));
	fake_stop(&fs);
	fake_opts(&o, &fs, 2, 2, 1);
	o.test_time = 0.2;
	ASSERT_EQ(0, workload_init(&w, &o.load, err, sizeof(err)));
	bench_step_from_opts(&step, &o, 0);
	ASSERT_EQ(-ECONNREFUSED, bench_run(&o, &w, &step, res));
	ASSERT_NE(NULL, strstr(res->first_error, "Connection refused"));
	workload_free(&w);
	free(res);
}

TEST_HARNESS_MAIN
