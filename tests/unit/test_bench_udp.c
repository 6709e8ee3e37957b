// SPDX-License-Identifier: GPL-2.0-only
/*
 * xkv-bench's UDP transport (tools/xkv-bench/transport_udp.c) against a fake
 * xkv UDP server written here: the connections of a thread share one socket
 * and batch their datagrams, so these check what that must not change.
 * Replies that come back out of order pair with their own requests; a
 * pipeline of P never has more than P requests in flight per connection;
 * dropped requests are counted as lost after the datagram timeout and the
 * connection carries on; duplicated replies and datagrams that are not
 * replies are ignored; replies flagged as the kernel's are counted; an open
 * loop keeps its timetable; and a port nobody serves fails the step at once.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/types.h>

#include "bench.h"
#include "clock.h"
#include "hist.h"
#include "workload.h"
#include "xkv_abi.h"

#include "kselftest_harness.h"

#define WAITING_MAX 4096
/* The fake server answers what waits after this long without a new request. */
#define IDLE_NS (20 * NSEC_PER_MSEC)

struct udp_fake {
	int fd;
	unsigned port;
	pthread_t thread;
	atomic_bool stop;
	unsigned hold;		 /* answer once this many requests wait (0, 1: at once) */
	bool reverse;		 /* answer the waiting requests newest first */
	unsigned drop_first;	 /* never answer the first N requests */
	bool kernel_odd;	 /* flag every other reply XKV_F_KERNEL */
	bool junk;		 /* after each reply: one that is not a reply, and a duplicate */
	atomic_ullong requests;	 /* requests received, the probe's PINGs not counted */
	atomic_uint max_waiting; /* most requests waiting for their reply at once */
};

struct waiting {
	struct sockaddr_in from;
	struct xkv_udp_hdr h;
};

static void fake_reply(struct udp_fake *fs, const struct waiting *w, const char *body, __u8 flags)
{
	char d[sizeof(struct xkv_udp_hdr) + 64];
	struct xkv_udp_hdr h = w->h;
	size_t len = strlen(body);

	h.flags = XKV_F_REPLY | flags;
	h.cmd_len = htons((__u16)len);
	memcpy(d, &h, sizeof(h));
	memcpy(d + sizeof(h), body, len);
	sendto(fs->fd, d, sizeof(h) + len, 0, (const struct sockaddr *)&w->from, sizeof(w->from));
}

static void *fake_main(void *arg)
{
	struct udp_fake *fs = arg;
	struct waiting *wait = calloc(WAITING_MAX, sizeof(*wait)), last = { 0 };
	unsigned nwait = 0, seen = 0, answered = 0;
	uint64_t last_arrival = 0;
	bool have_last = false;

	while (wait && !atomic_load(&fs->stop)) {
		struct pollfd pfd = { .fd = fs->fd, .events = POLLIN };
		char d[2048];

		poll(&pfd, 1, 5);
		for (;;) {
			struct waiting w;
			socklen_t alen = sizeof(w.from);
			ssize_t n = recvfrom(fs->fd, d, sizeof(d), MSG_DONTWAIT,
					     (struct sockaddr *)&w.from, &alen);

			if (n < (ssize_t)sizeof(w.h))
				break;
			memcpy(&w.h, d, sizeof(w.h));
			if (ntohs(w.h.magic) != XKV_UDP_MAGIC || (w.h.flags & XKV_F_REPLY))
				continue;
			/* The probe: answered at once, not a request of the step. */
			if (memmem(d + sizeof(w.h), ntohs(w.h.cmd_len), "PING", 4)) {
				fake_reply(fs, &w, "+PONG\r\n", 0);
				continue;
			}
			atomic_fetch_add(&fs->requests, 1);
			last_arrival = clock_ns();
			if (seen++ < fs->drop_first)
				continue;
			if (nwait < WAITING_MAX)
				wait[nwait++] = w;
			if (nwait > atomic_load(&fs->max_waiting))
				atomic_store(&fs->max_waiting, nwait);
		}
		if (!nwait || (nwait < fs->hold && clock_ns() - last_arrival < IDLE_NS))
			continue;
		for (unsigned i = 0; i < nwait; i++) {
			const struct waiting *w = &wait[fs->reverse ? nwait - 1 - i : i];

			fake_reply(fs, w, "+OK\r\n",
				   fs->kernel_odd && answered++ % 2 ? XKV_F_KERNEL : 0);
			if (fs->junk) {
				struct waiting req = *w;

				/* A request, not a reply: ignored. */
				req.h.flags = 0;
				sendto(fs->fd, &req.h, sizeof(req.h), 0,
				       (const struct sockaddr *)&w->from, sizeof(w->from));
				/* The previous reply once more: its request is no longer in flight. */
				if (have_last)
					fake_reply(fs, &last, "+OK\r\n", 0);
				last = *w;
				have_last = true;
			}
		}
		nwait = 0;
	}
	free(wait);
	return NULL;
}

static int fake_start(struct udp_fake *fs)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);

	fs->fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fs->fd < 0 || bind(fs->fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fs->fd, (struct sockaddr *)&a, &alen))
		return -errno;
	fs->port = ntohs(a.sin_port);
	return -pthread_create(&fs->thread, NULL, fake_main, fs);
}

static void fake_stop(struct udp_fake *fs)
{
	atomic_store(&fs->stop, true);
	pthread_join(fs->thread, NULL);
	close(fs->fd);
}

/* A closed-loop step of `requests` GETs over UDP against the fake server. */
static int run_udp(const struct udp_fake *fs, unsigned threads, unsigned conns, unsigned pipeline,
		   uint64_t requests, uint64_t rate, double secs, struct bench_result *res)
{
	struct bench_opts o;
	struct bench_step step;
	struct workload w;
	char err[160];
	int ret;

	bench_opts_init(&o);
	o.port = fs->port;
	o.transport = &transport_udp;
	o.threads = threads;
	o.conns = conns;
	o.pipeline = pipeline;
	o.requests = requests;
	o.test_time = secs;
	o.progress = false;
	o.load.keys = 1000;
	o.load.ratio_set = 0;
	o.load.ratio_get = 1;
	if (workload_init(&w, &o.load, err, sizeof(err)))
		return -EINVAL;
	bench_step_from_opts(&step, &o, rate);
	ret = bench_run(&o, &w, &step, res);
	workload_free(&w);
	return ret;
}

TEST(out_of_order_replies_pair_with_their_requests)
{
	struct udp_fake fs = { .hold = 8, .reverse = true };
	struct bench_result *res = malloc(sizeof(*res));

	/* 2 connections x 4 in flight: each batch of 8 comes back newest first. */
	ASSERT_NE(NULL, res);
	ASSERT_EQ(0, fake_start(&fs));
	ASSERT_EQ(0, run_udp(&fs, 1, 2, 4, 400, 0, 0, res));
	fake_stop(&fs);
	ASSERT_FALSE(bench_failed(res))
	{
		TH_LOG("%s", res->first_error);
	}
	ASSERT_TRUE(res->datagram);
	ASSERT_EQ(400, res->requests);
	ASSERT_EQ(400, res->hist.total);
	ASSERT_EQ(400, atomic_load(&fs.requests));
	ASSERT_EQ(400 * strlen("+OK\r\n"), res->bytes_in);
	ASSERT_LE(atomic_load(&fs.max_waiting), 8);
	ASSERT_EQ(0, res->kernel);
	free(res);
}

TEST(pipeline_one_is_one_in_flight_per_connection)
{
	struct udp_fake fs = { .hold = 6 };
	struct bench_result *res = malloc(sizeof(*res));

	/*
	 * 2 threads x 3 connections, pipeline 1: the server holds its replies
	 * until 6 requests wait, and may never see a 7th before it answers.
	 */
	ASSERT_NE(NULL, res);
	ASSERT_EQ(0, fake_start(&fs));
	ASSERT_EQ(0, run_udp(&fs, 2, 3, 1, 300, 0, 0, res));
	fake_stop(&fs);
	ASSERT_FALSE(bench_failed(res))
	{
		TH_LOG("%s", res->first_error);
	}
	ASSERT_EQ(300, res->requests);
	ASSERT_EQ(300, atomic_load(&fs.requests));
	ASSERT_LE(atomic_load(&fs.max_waiting), 6);
	ASSERT_LE(1, atomic_load(&fs.max_waiting));
	free(res);
}

TEST(dropped_requests_are_lost_and_the_connections_go_on)
{
	struct udp_fake fs = { .drop_first = 3 };
	struct bench_result *res = malloc(sizeof(*res));

	/*
	 * 4 connections, pipeline 1: the first 3 requests are one each of 3
	 * connections; they wait out the datagram timeout (1 s) together.
	 */
	ASSERT_NE(NULL, res);
	ASSERT_EQ(0, fake_start(&fs));
	ASSERT_EQ(0, run_udp(&fs, 1, 4, 1, 40, 0, 0, res));
	fake_stop(&fs);
	ASSERT_TRUE(bench_failed(res));
	ASSERT_EQ(40, atomic_load(&fs.requests));
	ASSERT_EQ(37, res->requests);
	ASSERT_EQ(3, res->lost);
	ASSERT_EQ(0, res->conn_errors);
	ASSERT_EQ(0, res->errors);
	ASSERT_NE(NULL, strstr(res->first_error, "lost"));
	free(res);
}

TEST(junk_and_duplicates_are_ignored_kernel_replies_counted)
{
	struct udp_fake fs = { .junk = true, .kernel_odd = true };
	struct bench_result *res = malloc(sizeof(*res));

	ASSERT_NE(NULL, res);
	ASSERT_EQ(0, fake_start(&fs));
	ASSERT_EQ(0, run_udp(&fs, 2, 2, 2, 200, 0, 0, res));
	fake_stop(&fs);
	ASSERT_FALSE(bench_failed(res))
	{
		TH_LOG("%s", res->first_error);
	}
	ASSERT_EQ(200, res->requests);
	ASSERT_EQ(200, res->hist.total);
	ASSERT_EQ(200 * strlen("+OK\r\n"), res->bytes_in);
	ASSERT_EQ(100, res->kernel);
	free(res);
}

TEST(open_loop_keeps_its_timetable)
{
	struct udp_fake fs = { 0 };
	struct bench_result *res = malloc(sizeof(*res));

	ASSERT_NE(NULL, res);
	ASSERT_EQ(0, fake_start(&fs));
	ASSERT_EQ(0, run_udp(&fs, 2, 2, 4, 0, 2000, 0.5, res));
	fake_stop(&fs);
	ASSERT_FALSE(bench_failed(res))
	{
		TH_LOG("%s", res->first_error);
	}
	/* The timetable holds exactly 1000 slots: sent and answered, or unsent. */
	ASSERT_EQ(1000, res->requests + res->unsent);
	ASSERT_EQ(res->requests, atomic_load(&fs.requests));
	ASSERT_LE(res->achieved, 2000.0 * 1.01);
	free(res);
}

TEST(no_udp_server)
{
	struct udp_fake fs = { 0 };
	struct bench_result *res = malloc(sizeof(*res));

	/* A port that was just free: the probe's PING draws a port unreachable. */
	ASSERT_NE(NULL, res);
	ASSERT_EQ(0, fake_start(&fs));
	fake_stop(&fs);
	ASSERT_EQ(-ECONNREFUSED, run_udp(&fs, 2, 2, 1, 0, 0, 0.2, res));
	ASSERT_NE(NULL, strstr(res->first_error, "Connection refused"));
	free(res);
}

TEST_HARNESS_MAIN
