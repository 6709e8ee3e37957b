// SPDX-License-Identifier: GPL-2.0-only
/*
 * The coherence checker. Writers change a small hot key set over TCP (SET,
 * INCR, DEL, EXPIRE, RENAME) while readers GET the same keys over UDP, or
 * MGET two to XKV_MGET_MAX_KEYS of them, mostly answered by the kernel fast
 * path. Every value is the version of the write that made it, so a read is
 * stale exactly when it returns something older than the last write
 * acknowledged before the read was sent:
 *   - a value x read after version v0 was acknowledged is fresh iff x >= v0;
 *   - a missing key is fresh iff some write with version >= v0 made it missing
 *     (issued before the reply arrived).
 * A value is torn (or made up) unless it is all digits, exactly as long as its
 * bulk header says, and no newer than the newest write issued for its key.
 * Usage: coherence HOST PORT OPS [WRITERS READERS KEYS]. Prints the counts;
 * exits 1 on any stale or torn read, or if the kernel answered no GET or no
 * MGET at all.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <linux/types.h>

#include "xkv_abi.h"

#define MAX_KEYS 64

static struct {
	_Atomic uint64_t acked;	     /* version of the last acknowledged change */
	_Atomic uint64_t nil_issued; /* highest version of a change that removed the key */
	_Atomic uint64_t issued;     /* version of the last change sent */
} keys[MAX_KEYS];

static const char *host;
static int port, nkeys = 16;
static uint64_t ops_target;
static _Atomic uint64_t writes, reads, kernel_reads, mget_reads, kernel_mget_reads, stale, torn,
	lost, stop;

static int tcp_connect(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	inet_pton(AF_INET, host, &sa.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("connect");
		exit(2);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Sends a command and reads its one-line reply (every reply used here is a
 * status, an error or an integer). Returns the reply's first byte. */
static char command(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char command(int fd, const char *fmt, ...)
{
	char line[256], reply[256], *args[4], *save = NULL, buf[512];
	int argc = 0, n = 0;
	size_t got = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	for (char *a = strtok_r(line, " ", &save); a && argc < 4; a = strtok_r(NULL, " ", &save))
		args[argc++] = a;
	n = snprintf(buf, sizeof(buf), "*%d\r\n", argc);
	for (int i = 0; i < argc; i++)
		n += snprintf(buf + n, sizeof(buf) - n, "$%zu\r\n%s\r\n", strlen(args[i]), args[i]);
	if (write(fd, buf, (size_t)n) != n) {
		perror("write");
		exit(2);
	}
	while (got < sizeof(reply) - 1) {
		ssize_t r = read(fd, reply + got, 1);

		if (r <= 0) {
			perror("read");
			exit(2);
		}
		got++;
		if (got >= 2 && reply[got - 2] == '\r' && reply[got - 1] == '\n')
			break;
	}
	if (reply[0] == '-') {
		reply[got] = '\0';
		fprintf(stderr, "server error: %s", reply);
		exit(2);
	}
	return reply[0];
}

static void *writer(void *arg)
{
	int id = (int)(intptr_t)arg, fd = tcp_connect();
	uint64_t version[MAX_KEYS] = { 0 }, rnd = 0x9e3779b97f4a7c15ULL * (uint64_t)(id + 1);
	bool present[MAX_KEYS] = { false };

	while (!atomic_load(&stop)) {
		int k, op;
		uint64_t v;

		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		k = (int)(rnd % (uint64_t)nkeys);
		if (k % 2 != id % 2 && nkeys > 1)
			continue; /* each key has one writer, so versions are ordered */
		op = (int)((rnd >> 20) % 10);
		v = ++version[k];
		if (op != 8 || !present[k])
			atomic_store(&keys[k].issued, v);
		if (op < 4 || !present[k]) {
			command(fd, "SET key:%d %llu", k, (unsigned long long)v);
			present[k] = true;
		} else if (op < 7) {
			/* The value was v - 1 (the previous change made it): now v. */
			command(fd, "INCR key:%d", k);
		} else if (op == 7) {
			atomic_store(&keys[k].nil_issued, v);
			command(fd, "DEL key:%d", k);
			present[k] = false;
		} else if (op == 8) {
			/* A deadline far away changes no value, but passes the choke point. */
			--version[k];
			command(fd, "EXPIRE key:%d 1000", k);
			continue;
		} else {
			atomic_store(&keys[k].nil_issued, v);
			command(fd, "RENAME key:%d aside:%d", k, id);
			present[k] = false;
		}
		atomic_store(&keys[k].acked, v);
		atomic_fetch_add(&writes, 1);
	}
	close(fd);
	return NULL;
}

/* Checks one key's value (or nil) read after v0 was acknowledged. */
static void check_value(int k, uint64_t v0, const char *p, const char *end, bool kernel)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	char *digits_end;
	uint64_t x, newest;
	long long len;

	if (end - p >= 5 && !memcmp(p, "$-1\r\n", 5)) {
		if (atomic_load(&keys[k].nil_issued) < v0 && v0 > 0) {
			atomic_fetch_add(&stale, 1);
			fprintf(stderr,
				"stale: key:%d missing, but version %llu was acknowledged\n", k,
				(unsigned long long)v0);
		}
		return;
	}
	len = nl && *p == '$' ? strtoll(p + 1, NULL, 10) : -1;
	x = len > 0 && len <= 20 && end - (nl + 1) >= len + 2 ? strtoull(nl + 1, &digits_end, 10)
							      : 0;
	newest = atomic_load(&keys[k].issued);
	if (len <= 0 || len > 20 || end - (nl + 1) < len + 2 || digits_end != nl + 1 + len ||
	    memcmp(nl + 1 + len, "\r\n", 2) || x > newest) {
		atomic_fetch_add(&torn, 1);
		fprintf(stderr, "torn: key:%d = %.*s (newest version issued %llu)%s\n", k,
			(int)(end - p < 40 ? end - p : 40), p, (unsigned long long)newest,
			kernel ? " (kernel)" : "");
	} else if (x < v0) {
		atomic_fetch_add(&stale, 1);
		fprintf(stderr, "stale: key:%d = %llu after version %llu was acknowledged%s\n", k,
			(unsigned long long)x, (unsigned long long)v0, kernel ? " (kernel)" : "");
	}
}

/* The length of the bulk reply (or nil) at p, or 0 if it is not one. */
static size_t bulk_len(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	long long len;

	if (!nl || *p != '$')
		return 0;
	len = strtoll(p + 1, NULL, 10);
	if (len == -1)
		return (size_t)(nl + 1 - p);
	if (len < 0 || end - (nl + 1) < len + 2)
		return 0;
	return (size_t)(nl + 1 - p) + (size_t)len + 2;
}

static void *reader(void *arg)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0), id = (int)(intptr_t)arg;
	struct timeval tv = { 0, 200000 };
	uint32_t request_id = (uint32_t)id << 24;
	uint64_t rnd = 0x2545f4914f6cdd1dULL * (uint64_t)(id + 7);
	char req[512], rep[512];

	inet_pton(AF_INET, host, &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	while (!atomic_load(&stop)) {
		struct xkv_udp_hdr *h = (void *)req;
		const struct xkv_udp_hdr *r = (const void *)rep;
		int k[XKV_MGET_MAX_KEYS], nread, cmd_len;
		uint64_t v0[XKV_MGET_MAX_KEYS];
		char cmd[400];
		const char *p, *end;
		bool kernel;
		ssize_t n;

		/* Half the reads are a GET, half an MGET of 2..XKV_MGET_MAX_KEYS keys. */
		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		nread = (rnd >> 40) & 1 ? 2 + (int)((rnd >> 41) % (XKV_MGET_MAX_KEYS - 1)) : 1;
		cmd_len = nread == 1
				  ? snprintf(cmd, sizeof(cmd), "*2\r\n$3\r\nGET\r\n")
				  : snprintf(cmd, sizeof(cmd), "*%d\r\n$4\r\nMGET\r\n", nread + 1);
		for (int i = 0; i < nread; i++) {
			char key[32];
			int klen;

			k[i] = (int)((rnd >> (4 * i)) % (uint64_t)nkeys);
			klen = snprintf(key, sizeof(key), "key:%d", k[i]);
			cmd_len += snprintf(cmd + cmd_len, sizeof(cmd) - (size_t)cmd_len,
					    "$%d\r\n%s\r\n", klen, key);
		}
		memset(req, 0, sizeof(req));
		h->magic = htons(XKV_UDP_MAGIC);
		h->version = XKV_UDP_VERSION;
		h->request_id = htonl(++request_id);
		h->cmd_len = htons((uint16_t)cmd_len);
		memcpy(req + sizeof(*h), cmd, (size_t)cmd_len);
		/* What was acknowledged before the request leaves. */
		for (int i = 0; i < nread; i++)
			v0[i] = atomic_load(&keys[k[i]].acked);
		/* Room for 20-digit values: the reply always fits. */
		if (send(fd, req, sizeof(req), 0) < 0)
			continue;
		do
			n = recv(fd, rep, sizeof(rep), 0);
		while (n >= (ssize_t)sizeof(*r) && ntohl(r->request_id) != request_id);
		if (n < (ssize_t)sizeof(*r)) {
			atomic_fetch_add(&lost, 1);
			continue;
		}
		kernel = r->flags & XKV_F_KERNEL;
		atomic_fetch_add(&reads, 1);
		if (kernel)
			atomic_fetch_add(&kernel_reads, 1);
		p = rep + sizeof(*r);
		end = p + ntohs(r->cmd_len);
		if (end > rep + n || (r->flags & XKV_F_TRUNCATED)) {
			atomic_fetch_add(&torn, 1);
			fprintf(stderr, "torn: a reply of %zd bytes says %u\n", n,
				ntohs(r->cmd_len));
			continue;
		}
		if (nread > 1) {
			char head[8];

			atomic_fetch_add(&mget_reads, 1);
			if (kernel)
				atomic_fetch_add(&kernel_mget_reads, 1);
			snprintf(head, sizeof(head), "*%d\r\n", nread);
			if (end - p < 4 || memcmp(p, head, 4)) {
				atomic_fetch_add(&torn, 1);
				fprintf(stderr, "torn: an MGET reply starts %.*s\n", 4, p);
				continue;
			}
			p += 4;
		}
		for (int i = 0; i < nread; i++) {
			size_t len = p < end ? bulk_len(p, end) : 0;

			check_value(k[i], v0[i], p, len ? p + len : end, kernel);
			if (!len)
				break;
			p += len;
		}
		if (atomic_load(&reads) + atomic_load(&writes) >= ops_target)
			atomic_store(&stop, 1);
	}
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	int nwriters = 2, nreaders = 4;
	pthread_t threads[64];
	int n = 0;

	if (argc < 4) {
		fprintf(stderr, "usage: coherence HOST PORT OPS [WRITERS READERS KEYS]\n");
		return 2;
	}
	host = argv[1];
	port = atoi(argv[2]);
	ops_target = strtoull(argv[3], NULL, 10);
	if (argc > 6) {
		nwriters = atoi(argv[4]);
		nreaders = atoi(argv[5]);
		nkeys = atoi(argv[6]);
	}
	if (nkeys < 1 || nkeys > MAX_KEYS || nwriters < 1 || nwriters > 2 || nreaders < 1 ||
	    nreaders > 32) {
		fprintf(stderr, "coherence: 1..2 writers, 1..32 readers, 1..%d keys\n", MAX_KEYS);
		return 2;
	}
	for (int i = 0; i < nwriters; i++)
		pthread_create(&threads[n++], NULL, writer, (void *)(intptr_t)i);
	for (int i = 0; i < nreaders; i++)
		pthread_create(&threads[n++], NULL, reader, (void *)(intptr_t)i);
	for (int i = 0; i < n; i++)
		pthread_join(threads[i], NULL);
	printf("ops %llu writes %llu reads %llu kernel_reads %llu mget_reads %llu "
	       "kernel_mget_reads %llu lost %llu stale %llu torn %llu\n",
	       (unsigned long long)(writes + reads), (unsigned long long)writes,
	       (unsigned long long)reads, (unsigned long long)kernel_reads,
	       (unsigned long long)mget_reads, (unsigned long long)kernel_mget_reads,
	       (unsigned long long)lost, (unsigned long long)stale, (unsigned long long)torn);
	return stale || torn || !kernel_reads || !kernel_mget_reads ? 1 : 0;
}
