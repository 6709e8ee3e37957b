// SPDX-License-Identifier: GPL-2.0-only
/*
 * Drives tcp_get.bpf.c on loopback and prints what the running kernel does
 * with GET replies made in a sockmap program (docs/fastpath.md, "TCP in the
 * kernel: why not (yet)"). Each case is one TAP line: "ok" when the client
 * got every reply, in order, and the server's socket was left with nothing
 * phantom to read; "not ok ... # TODO" when the kernel broke the stream (a
 * known limitation, so the run still passes). Needs root. Not in `make test`:
 * `make test-tcp-fastpath`.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "tcp_get.skel.h"

#define REQ "*2\r\n$3\r\nGET\r\n$8\r\nkkkkkkkk\r\n" /* 27 bytes */
#define REQ_LEN 27
#define PING "*1\r\n$4\r\nPING\r\n"
#define PONG "+PONG\r\n"
#define NREQ 3
#define WAIT_MS 1000

static int n_tap;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The reply tcp_get.bpf.c makes for REQ: "$<len>\r\n" + 'v' * len + "\r\n". */
static int reply_for(int delta, char *out)
{
	int total = REQ_LEN + delta, vlen = total - 7;

	sprintf(out, "$%d\r\n", vlen);
	memset(out + 5, 'v', vlen);
	memcpy(out + 5 + vlen, "\r\n", 2);
	return total;
}

/* Reads until want bytes or WAIT_MS of silence; returns the count. */
static int recv_upto(int fd, char *buf, int want, double *first_ms)
{
	int got = 0;
	double t0 = now_ms();

	while (got < want) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, WAIT_MS) <= 0)
			break;
		/* Never block: a socket whose accounting broke can poll
		 * readable with nothing to read. */
		n = recv(fd, buf + got, want - got, MSG_DONTWAIT);
		if (n < 0 && errno == EAGAIN && now_ms() - t0 < WAIT_MS) {
			usleep(1000);
			continue;
		}
		if (n <= 0)
			break;
		if (!got && first_ms)
			*first_ms = now_ms() - t0;
		got += n;
	}
	return got;
}

/* A connected pair on loopback: *cli (the "client"), *srv (the "daemon"). */
static int tcp_pair(int *cli, int *srv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (l < 0 || bind(l, (void *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (void *)&a, &al))
		return -errno;
	*cli = socket(AF_INET, SOCK_STREAM, 0);
	if (*cli < 0 || connect(*cli, (void *)&a, sizeof(a)))
		return -errno;
	*srv = accept(l, NULL, NULL);
	close(l);
	if (*srv < 0)
		return -errno;
	setsockopt(*cli, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(*srv, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

/* The sockmap's values are 64-bit: the fd must not bring stack garbage. */
static int map_add(int map_fd, __u32 key, int fd)
{
	__u64 val = (__u64)fd;

	return bpf_map_update_elem(map_fd, &key, &val, BPF_ANY);
}

/* What the daemon's end would see: bytes it could read, without waiting. */
static int srv_leftover(int srv, int *inq)
{
	char junk[4096];
	ssize_t n;

	*inq = -1;
	ioctl(srv, SIOCINQ, inq);
	n = recv(srv, junk, sizeof(junk), MSG_DONTWAIT);
	return n < 0 ? 0 : (int)n;
}

static void tap(bool ok, const char *name, const char *detail)
{
	printf("%s %d - %s%s%s\n", ok ? "ok" : "not ok", ++n_tap, name, ok ? "" : " # TODO ",
	       ok ? "" : "broken on this kernel");
	printf("#   %s\n", detail);
}

/*
 * sk_skb: the server socket's verdict turns each request into a reply of
 * REQ_LEN + delta bytes and sends it back on the same socket.
 */
static void skb_case(int delta, bool parser, bool pipelined)
{
	char name[128], detail[512], want[NREQ * 128], got[NREQ * 128 + 64];
	int cli = -1, srv = -1, rlen, map_fd, inq, left, n = 0, good = 0, after;
	struct tcp_get *skel;
	double first = -1;
	bool ok;

	snprintf(name, sizeof(name), "sk_skb verdict, reply %+d bytes, %s, %s", delta,
		 parser ? "stream parser" : "no parser", pipelined ? "3 pipelined" : "3 in turn");
	skel = tcp_get__open();
	if (!skel)
		goto fail;
	skel->rodata->reply_delta = delta;
	if (tcp_get__load(skel))
		goto fail;
	map_fd = bpf_map__fd(skel->maps.sock_map);
	if ((parser && bpf_prog_attach(bpf_program__fd(skel->progs.get_parser), map_fd,
				       BPF_SK_SKB_STREAM_PARSER, 0)) ||
	    bpf_prog_attach(bpf_program__fd(skel->progs.get_verdict), map_fd,
			    BPF_SK_SKB_STREAM_VERDICT, 0))
		goto fail;
	if (tcp_pair(&cli, &srv) || map_add(map_fd, 0, srv))
		goto fail;
	rlen = reply_for(delta, want);
	for (int i = 1; i < NREQ; i++)
		memcpy(want + i * rlen, want, rlen);
	if (pipelined) {
		char reqs[NREQ * REQ_LEN];

		for (int i = 0; i < NREQ; i++)
			memcpy(reqs + i * REQ_LEN, REQ, REQ_LEN);
		send(cli, reqs, sizeof(reqs), 0);
		n = recv_upto(cli, got, NREQ * rlen + 64, &first);
		for (int i = 0; i < NREQ; i++)
			good += n >= (i + 1) * rlen && !memcmp(got + i * rlen, want, rlen);
	} else {
		for (int i = 0; i < NREQ; i++) {
			int m;

			send(cli, REQ, REQ_LEN, 0);
			m = recv_upto(cli, got + n, rlen, i ? NULL : &first);
			good += m == rlen && !memcmp(got + n, want, rlen);
			n += m;
			if (m != rlen)
				break; /* stalled: the next would only pile up */
		}
	}
	/* The shorter and the longer reply show up here, as phantom bytes
	 * or a stall; let the kernel's workers finish first. */
	usleep(100 * 1000);
	/* Out of the map, the socket is plain TCP again: its own accounting
	 * (rcv_nxt - copied_seq) decides what the daemon reads next. */
	bpf_map_delete_elem(map_fd, &(__u32){ 0 });
	left = srv_leftover(srv, &inq);
	send(cli, REQ, REQ_LEN, 0);
	after = recv_upto(srv, got, sizeof(got), NULL);
	ok = good == NREQ && n == NREQ * rlen && left == 0 && inq == 0 && after == REQ_LEN;
	snprintf(detail, sizeof(detail),
		 "client got %d of %d reply bytes, %d of %d replies right, first after %.2f ms; "
		 "then out of the map the server socket has SIOCINQ %d, %d bytes readable, and "
		 "reads %d of the next request's %d bytes; parser runs %llu, verdicts %llu, "
		 "rewritten %llu",
		 n, NREQ * rlen, good, NREQ, first, inq, left, after, REQ_LEN,
		 (unsigned long long)skel->bss->parser_runs,
		 (unsigned long long)skel->bss->verdict_runs,
		 (unsigned long long)skel->bss->rewritten);
	tap(ok, name, detail);
	close(cli);
	close(srv);
	tcp_get__destroy(skel);
	return;
fail:
	printf("not ok %d - %s # setup failed: %s\n", ++n_tap, name, strerror(errno));
	if (cli >= 0)
		close(cli);
	if (srv >= 0)
		close(srv);
	tcp_get__destroy(skel);
}

/*
 * sk_skb with the stream parser: a PING (the daemon's to answer) and a GET
 * (the kernel's) in one write. The replies must come back in that order.
 */
static void skb_mixed_case(void)
{
	const char *name = "sk_skb verdict, stream parser, PING then GET in one write";
	char detail[512], w[64], want[128], got[128], buf[64];
	int cli = -1, srv = -1, rlen, map_fd, srv_n, n, wlen;
	struct tcp_get *skel;
	bool ok;

	skel = tcp_get__open();
	if (!skel || tcp_get__load(skel))
		goto fail;
	map_fd = bpf_map__fd(skel->maps.sock_map);
	if (bpf_prog_attach(bpf_program__fd(skel->progs.get_parser), map_fd,
			    BPF_SK_SKB_STREAM_PARSER, 0) ||
	    bpf_prog_attach(bpf_program__fd(skel->progs.get_verdict), map_fd,
			    BPF_SK_SKB_STREAM_VERDICT, 0))
		goto fail;
	if (tcp_pair(&cli, &srv) || map_add(map_fd, 0, srv))
		goto fail;
	memcpy(w, PING, strlen(PING));
	memcpy(w + strlen(PING), REQ, REQ_LEN);
	send(cli, w, strlen(PING) + REQ_LEN, 0);
	srv_n = recv_upto(srv, buf, strlen(PING), NULL);
	if (srv_n == (int)strlen(PING))
		send(srv, PONG, strlen(PONG), 0);
	memcpy(want, PONG, strlen(PONG));
	rlen = reply_for(0, want + strlen(PONG));
	wlen = strlen(PONG) + rlen;
	n = recv_upto(cli, got, wlen, NULL);
	ok = n == wlen && !memcmp(got, want, wlen);
	snprintf(detail, sizeof(detail),
		 "server read %d bytes (the PING is %zu); client got \"%.*s...\" (%d bytes): %s",
		 srv_n, strlen(PING), n < 12 ? n : 12, got, n,
		 ok ? "PONG first, in order" : "not both replies, in the order asked");
	for (char *c = detail; *c; c++)
		if (*c == '\r' || *c == '\n')
			*c = '.';
	tap(ok, name, detail);
	close(cli);
	close(srv);
	tcp_get__destroy(skel);
	return;
fail:
	printf("not ok %d - %s # setup failed: %s\n", ++n_tap, name, strerror(errno));
	if (cli >= 0)
		close(cli);
	if (srv >= 0)
		close(srv);
	tcp_get__destroy(skel);
}

/*
 * sk_msg: the client's own socket is in the map; its sendmsg of a GET is
 * answered into its own receive queue and never reaches the wire. mixed
 * sends a PING (for the server) and then a GET in one write.
 */
static void msg_case(int delta, bool pipelined, bool mixed)
{
	char name[128], detail[512], want[NREQ * 128 + 16], got[NREQ * 128 + 64], buf[256];
	int cli = -1, srv = -1, rlen, map_fd, inq, n = 0, good = 0, srv_n = 0, wlen;
	struct tcp_get *skel;
	double first = -1;
	bool ok;

	snprintf(name, sizeof(name), "sk_msg on the client, reply %+d bytes, %s", delta,
		 mixed	     ? "PING then GET in one write"
		 : pipelined ? "3 pipelined"
			     : "3 in turn");
	skel = tcp_get__open();
	if (!skel)
		goto fail;
	skel->rodata->reply_delta = delta;
	if (tcp_get__load(skel))
		goto fail;
	map_fd = bpf_map__fd(skel->maps.sock_map);
	if (bpf_prog_attach(bpf_program__fd(skel->progs.get_msg), map_fd, BPF_SK_MSG_VERDICT, 0))
		goto fail;
	if (tcp_pair(&cli, &srv) || map_add(map_fd, 1, cli))
		goto fail;
	rlen = reply_for(delta, want);
	if (mixed) {
		char w[64];

		memcpy(w, PING, strlen(PING));
		memcpy(w + strlen(PING), REQ, REQ_LEN);
		send(cli, w, strlen(PING) + REQ_LEN, 0);
		/* The server answers the PING as soon as it has read it. */
		srv_n = recv_upto(srv, buf, strlen(PING), NULL);
		if (srv_n == (int)strlen(PING))
			send(srv, PONG, strlen(PONG), 0);
		memmove(want + strlen(PONG), want, rlen);
		memcpy(want, PONG, strlen(PONG));
		wlen = strlen(PONG) + rlen;
		n = recv_upto(cli, got, wlen, &first);
		good = n == wlen && !memcmp(got, want, wlen) ? NREQ : 0;
		snprintf(detail, sizeof(detail),
			 "server read %d bytes (the PING is %zu); client got \"%.*s...\" (%d "
			 "bytes): %s",
			 srv_n, strlen(PING), n < 12 ? n : 12, got, n,
			 good ? "PONG first, in order" : "not the order the requests were sent in");
		for (char *c = detail; *c; c++)
			if (*c == '\r' || *c == '\n')
				*c = '.';
		ok = good == NREQ;
		goto out;
	}
	for (int i = 1; i < NREQ; i++)
		memcpy(want + i * rlen, want, rlen);
	if (pipelined) {
		char reqs[NREQ * REQ_LEN];

		for (int i = 0; i < NREQ; i++)
			memcpy(reqs + i * REQ_LEN, REQ, REQ_LEN);
		send(cli, reqs, sizeof(reqs), 0);
		n = recv_upto(cli, got, NREQ * rlen, &first);
		for (int i = 0; i < NREQ; i++)
			good += n >= (i + 1) * rlen && !memcmp(got + i * rlen, want, rlen);
	} else {
		for (int i = 0; i < NREQ; i++) {
			int m;

			send(cli, REQ, REQ_LEN, 0);
			m = recv_upto(cli, got + n, rlen, i ? NULL : &first);
			good += m == rlen && !memcmp(got + n, want, rlen);
			n += m;
			if (m != rlen)
				break;
		}
	}
	usleep(100 * 1000);
	srv_n = srv_leftover(srv, &inq);
	ok = good == NREQ && n == NREQ * rlen && srv_n == 0;
	snprintf(detail, sizeof(detail),
		 "client got %d of %d reply bytes, %d of %d replies right, first after %.2f ms; "
		 "server read %d bytes",
		 n, NREQ * rlen, good, NREQ, first, srv_n);
out:
	snprintf(detail + strlen(detail), sizeof(detail) - strlen(detail),
		 "; msg runs %llu, answered %llu, passed %llu",
		 (unsigned long long)skel->bss->msg_runs,
		 (unsigned long long)skel->bss->msg_answered,
		 (unsigned long long)skel->bss->msg_passed);
	tap(ok, name, detail);
	close(cli);
	close(srv);
	tcp_get__destroy(skel);
	return;
fail:
	printf("not ok %d - %s # setup failed: %s\n", ++n_tap, name, strerror(errno));
	if (cli >= 0)
		close(cli);
	if (srv >= 0)
		close(srv);
	tcp_get__destroy(skel);
}

int main(void)
{
	static const int deltas[] = { 0, 16, -8 };
	struct utsname u;

	setvbuf(stdout, NULL, _IOLBF, 0);
	uname(&u);
	printf("TAP version 13\n# kernel %s, libbpf %s\n", u.release, libbpf_version_string());
	for (int p = 0; p < 2; p++)
		for (int d = 0; d < 3; d++)
			skb_case(deltas[d], p, false);
	for (int p = 0; p < 2; p++)
		for (int d = 0; d < 3; d++)
			skb_case(deltas[d], p, true);
	skb_mixed_case();
	for (int d = 0; d < 3; d++)
		msg_case(deltas[d], false, false);
	for (int d = 0; d < 3; d++)
		msg_case(deltas[d], true, false);
	msg_case(0, false, true);
	printf("1..%d\n", n_tap);
	return 0;
}
