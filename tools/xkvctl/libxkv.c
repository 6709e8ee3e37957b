// SPDX-License-Identifier: BSD-3-Clause
/*
 * libxkv: the UDP GET and MGET client with its TCP fallback (the API is in libxkv.h,
 * the protocol in docs/udp-protocol.md).
 *
 * UDP: one connected socket, so that only the server's address can answer
 * and an ICMP port-unreachable comes back as ECONNREFUSED, which moves on to
 * the next resolved address at once instead of waiting for the timeout
 * ("localhost" is often ::1 first while the server listens on 127.0.0.1).
 * Request ids count up from a random start; a reply is taken if it answers
 * any attempt of the current call (a late answer to the first attempt is as
 * good as the answer to the second), and anything else is dropped.
 *
 * TCP: one connection, opened on first use and kept; AUTH is sent on each new
 * connection when a password is set. All socket I/O is non-blocking with
 * poll() against a deadline, so no call waits longer than its timeout.
 *
 * Cluster: a GET or MGET answered "-MOVED <slot> <host>:<port>" is asked
 * again of that node, through a client of its own made with this one's
 * settings, and the slot is remembered for it, so the next key of that slot
 * goes there at once (keys' slots are Redis Cluster's CRC16, hash tags
 * included). "-ASK" is followed once, over TCP, after ASKING, and not
 * remembered. At most XKV_MAX_REDIRECTS hops a call.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include <openssl/evp.h>

#include "libxkv.h"
#include "xkv_abi.h"

#define HDR_LEN sizeof(struct xkv_udp_hdr)
/* What a bulk reply adds to its value: "$" + up to 10 digits + CRLF, and CRLF. */
#define BULK_OVERHEAD 16
/* Nesting and size limits for replies read over TCP (Redis's own bulk limit). */
#define RESP_MAX_DEPTH 32
#define RESP_MAX_BULK (512LL << 20)
#define RESP_MAX_LINE 65536
#define TCP_READ_CHUNK 65536
#define XKV_MAX_REDIRECTS 5
#define XKV_MAX_NODES 64 /* other cluster nodes a client keeps */
#define CLUSTER_SLOTS 16384

struct xkv {
	struct addrinfo *addrs; /* owned: every address of host:port */
	uint64_t token;		/* fastpath-token, host order (as the server compares it) */
	uint64_t derived_token; /* from the password, sent when token is 0 */
	char *password;		/* owned, or NULL */
	size_t padding;
	int timeout_ms, retries, tcp_timeout_ms;
	uint32_t next_id; /* the next request id */

	/* UDP: the socket is connected to udp_ai; udp_ai NULL until the first call. */
	int udp_fd;
	const struct addrinfo *udp_ai;
	char *out, *in; /* owned: XKV_MAX_DATAGRAM bytes each (request, reply) */

	/* TCP: the kept connection (-1: none) and its input buffer. */
	int tcp_fd;
	char *tin;			   /* owned */
	size_t tin_len, tin_cap, tin_used; /* tin_used: the last reply, dropped on next use */

	/* Cluster: the nodes met in redirects (owned clients, with their
	 * "host:port" names), and for each slot the node serving it, as an
	 * index into nodes plus one (0: this client). NULL until a MOVED. */
	struct xkv *nodes[XKV_MAX_NODES];
	char *node_names[XKV_MAX_NODES];
	int nnodes;
	uint8_t *route;
	uint16_t port; /* of host:port, for a redirect that names no host */
	char *host;

	char err[256];
};

static void seterr(struct xkv *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void seterr(struct xkv *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(x->err, sizeof(x->err), fmt, ap);
	va_end(ap);
}

/* An error reply's text, without its '-' and CRLF. */
static void seterr_reply(struct xkv *x, const char *p, size_t len)
{
	while (len && (p[len - 1] == '\r' || p[len - 1] == '\n'))
		len--;
	if (len && (p[0] == '-' || p[0] == '!'))
		p++, len--;
	seterr(x, "%.*s", (int)len, p);
}

const char *xkv__errmsg(const struct xkv *x)
{
	return x->err;
}

const char *xkv__via_name(unsigned how)
{
	switch (how) {
	case XKV_VIA_KERNEL:
		return "kernel";
	case XKV_VIA_DAEMON_UDP:
		return "daemon udp";
	case XKV_VIA_TCP:
		return "tcp";
	}
	return "?";
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for events on fd until deadline (ms, CLOCK_MONOTONIC): 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd pfd = { .fd = fd, .events = events };

	for (;;) {
		int64_t left = deadline - now_ms();
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/* ---- construction ------------------------------------------------------------ */

struct xkv *xkv__new(const char *host, uint16_t port, uint64_t token)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM };
	char service[8];
	struct xkv *x;
	int r;

	if (!host || !*host || !port) {
		errno = EINVAL;
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		goto err;
	x->udp_fd = x->tcp_fd = -1;
	x->token = token;
	x->port = port;
	x->host = strdup(host);
	if (!x->host)
		goto err_free;
	x->padding = XKV_DEFAULT_PADDING;
	x->timeout_ms = XKV_DEFAULT_TIMEOUT_MS;
	x->retries = XKV_DEFAULT_RETRIES;
	x->tcp_timeout_ms = XKV_DEFAULT_TCP_TIMEOUT_MS;
	/* A random start keeps two clients behind one NAT from sharing ids. */
	if (getrandom(&x->next_id, sizeof(x->next_id), GRND_NONBLOCK) != sizeof(x->next_id))
		x->next_id = (uint32_t)now_ms() ^ (uint32_t)getpid() << 16;
	x->out = calloc(1, XKV_MAX_DATAGRAM);
	x->in = malloc(XKV_MAX_DATAGRAM);
	if (!x->out || !x->in)
		goto err_free;
	snprintf(service, sizeof(service), "%u", port);
	/* The same addresses serve TCP: the daemon listens on one port for both. */
	r = getaddrinfo(host, service, &hints, &x->addrs);
	if (r) {
		errno = r == EAI_MEMORY ? ENOMEM : r == EAI_SYSTEM ? errno : EHOSTUNREACH;
		goto err_free;
	}
	return x;

err_free:
	r = errno;
	xkv__free(x);
	errno = r;
	return NULL;
err:
	errno = ENOMEM;
	return NULL;
}

void xkv__free(struct xkv *x)
{
	if (!x)
		return;
	if (x->udp_fd >= 0)
		close(x->udp_fd);
	if (x->tcp_fd >= 0)
		close(x->tcp_fd);
	if (x->addrs)
		freeaddrinfo(x->addrs);
	for (int i = 0; i < x->nnodes; i++) {
		xkv__free(x->nodes[i]);
		free(x->node_names[i]);
	}
	free(x->route);
	free(x->host);
	free(x->password);
	free(x->out);
	free(x->in);
	free(x->tin);
	free(x);
}

int xkv__set_padding(struct xkv *x, size_t bytes)
{
	if (bytes < HDR_LEN || bytes > XKV_MAX_DATAGRAM)
		return -EINVAL;
	x->padding = bytes;
	return 0;
}

int xkv__set_timeout_ms(struct xkv *x, int ms)
{
	if (ms <= 0)
		return -EINVAL;
	x->timeout_ms = ms;
	return 0;
}

int xkv__set_retries(struct xkv *x, int retries)
{
	if (retries < 0)
		return -EINVAL;
	x->retries = retries;
	return 0;
}

int xkv__set_tcp_timeout_ms(struct xkv *x, int ms)
{
	if (ms <= 0)
		return -EINVAL;
	x->tcp_timeout_ms = ms;
	return 0;
}

int xkv__derive_token(const char *password, size_t len, uint64_t *token)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int ok;

	ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
	     EVP_DigestUpdate(ctx, XKV_TOKEN_CONTEXT, strlen(XKV_TOKEN_CONTEXT)) &&
	     EVP_DigestUpdate(ctx, password, len) && EVP_DigestFinal_ex(ctx, md, &mdlen) &&
	     mdlen >= sizeof(*token);
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return -EIO;
	/* Raw bytes, no byte order: the server compares the same 8 bytes. */
	memcpy(token, md, sizeof(*token));
	return 0;
}

int xkv__set_password(struct xkv *x, const char *password)
{
	uint64_t derived = 0;
	char *copy = NULL;

	if (password && xkv__derive_token(password, strlen(password), &derived) < 0)
		return -EIO;
	if (password && !(copy = strdup(password)))
		return -ENOMEM;
	free(x->password);
	x->password = copy;
	x->derived_token = derived;
	/* A connection authenticated otherwise is not the one asked for. */
	if (x->tcp_fd >= 0) {
		close(x->tcp_fd);
		x->tcp_fd = -1;
	}
	return 0;
}

/* ---- RESP -------------------------------------------------------------------- */

/* Parses the decimal in p[0..end): 0, or -EPROTO unless it is exactly a number. */
static int parse_ll(const char *p, const char *end, long long *v)
{
	bool neg = p < end && *p == '-';
	long long n = 0;

	if (neg)
		p++;
	if (p >= end || end - p > 18)
		return -EPROTO;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return -EPROTO;
		n = n * 10 + (*p - '0');
	}
	*v = neg ? -n : n;
	return 0;
}

/*
 * The length of the complete reply at p[0..len): > 0, 0 if more bytes are
 * needed, -EPROTO if it is not RESP. RESP2 and RESP3 types alike.
 */
static ssize_t resp_reply_len(const char *p, size_t len, int depth)
{
	const char *nl;
	size_t head, off, count;
	long long n;

	if (len == 0)
		return 0;
	if (depth > RESP_MAX_DEPTH)
		return -EPROTO;
	nl = memchr(p, '\n', len < RESP_MAX_LINE ? len : RESP_MAX_LINE);
	if (!nl)
		return len < RESP_MAX_LINE ? 0 : -EPROTO;
	if (nl == p || nl[-1] != '\r')
		return -EPROTO;
	head = (size_t)(nl - p) + 1;
	switch (p[0]) {
	case '+':
	case '-':
	case ':':
	case '_':
	case ',':
	case '#':
	case '(':
		return (ssize_t)head;
	case '$':
	case '!':
	case '=':
		if (parse_ll(p + 1, nl - 1, &n) < 0 || n < -1 || n > RESP_MAX_BULK)
			return -EPROTO;
		if (n == -1)
			return (ssize_t)head;
		if (len < head + (size_t)n + 2)
			return 0;
		if (p[head + n] != '\r' || p[head + n + 1] != '\n')
			return -EPROTO;
		return (ssize_t)(head + (size_t)n + 2);
	case '*':
	case '~':
	case '>':
	case '%':
	case '|':
		if (parse_ll(p + 1, nl - 1, &n) < 0 || n < -1 || n > RESP_MAX_BULK)
			return -EPROTO;
		if (n == -1)
			return (ssize_t)head;
		count = (size_t)n * (p[0] == '%' || p[0] == '|' ? 2 : 1);
		/* An attribute map comes before the reply it annotates. */
		count += p[0] == '|';
		off = head;
		for (size_t i = 0; i < count; i++) {
			ssize_t r = resp_reply_len(p + off, len - off, depth + 1);

			if (r <= 0)
				return r;
			off += (size_t)r;
		}
		return (ssize_t)off;
	}
	return -EPROTO;
}

/* Writes argv as a RESP array into a malloc'd buffer (*out, *out_len). */
static int resp_encode(int argc, const char **argv, const size_t *lens, char **out, size_t *out_len)
{
	size_t cap = 16, n;
	char *buf;

	if (argc <= 0)
		return -EINVAL;
	for (int i = 0; i < argc; i++)
		cap += (lens ? lens[i] : strlen(argv[i])) + 32;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	n = (size_t)snprintf(buf, cap, "*%d\r\n", argc);
	for (int i = 0; i < argc; i++) {
		size_t len = lens ? lens[i] : strlen(argv[i]);

		n += (size_t)snprintf(buf + n, cap - n, "$%zu\r\n", len);
		memcpy(buf + n, argv[i], len);
		memcpy(buf + n + len, "\r\n", 2);
		n += len + 2;
	}
	*out = buf;
	*out_len = n;
	return 0;
}

/* A malloc'd, NUL-terminated copy of p[0..len). */
static int dup_bytes(const char *p, size_t len, char **out, size_t *out_len)
{
	char *copy = malloc(len + 1);

	if (!copy)
		return -ENOMEM;
	memcpy(copy, p, len);
	copy[len] = '\0';
	*out = copy;
	if (out_len)
		*out_len = len;
	return 0;
}

/* The reply to GET: 0 with the value copied out, 1 for nil, or -errno. */
static int get_reply(struct xkv *x, const char *p, size_t len, char **value, size_t *vlen)
{
	const char *nl = memchr(p, '\n', len);
	long long n;

	if (len && (p[0] == '-' || p[0] == '!')) {
		seterr_reply(x, p, len);
		return -EREMOTEIO;
	}
	if (len && p[0] == '_')
		return 1;
	if (!nl || p[0] != '$' || parse_ll(p + 1, nl - 1, &n) < 0 || n < -1) {
		seterr(x, "unexpected reply to GET: %.*s", (int)(len < 40 ? len : 40), p);
		return -EPROTO;
	}
	if (n == -1)
		return 1;
	return dup_bytes(nl + 1, (size_t)n, value, vlen);
}

static bool is_noauth(const char *p, size_t len)
{
	return len >= 7 && memcmp(p, "-NOAUTH", 7) == 0;
}

/* ---- UDP ----------------------------------------------------------------------- */

static void udp_close(struct xkv *x)
{
	if (x->udp_fd >= 0)
		close(x->udp_fd);
	x->udp_fd = -1;
}

/* Connects the UDP socket to the current address, moving past those that
 * cannot be used. -ECONNREFUSED (or the last error) once none is left. */
static int udp_open(struct xkv *x, int last_err)
{
	while (x->udp_fd < 0) {
		const struct addrinfo *ai = x->udp_ai;
		int fd;

		if (!ai)
			return last_err;
		fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			x->udp_fd = fd;
			break;
		}
		last_err = -errno;
		if (fd >= 0)
			close(fd);
		x->udp_ai = ai->ai_next;
	}
	return 0;
}

static void udp_next_addr(struct xkv *x)
{
	udp_close(x);
	if (x->udp_ai)
		x->udp_ai = x->udp_ai->ai_next;
}

/* Is the datagram in[0..n) a reply to one of the ids first..last? */
static bool udp_is_reply(const struct xkv *x, size_t n, uint32_t first, uint32_t last)
{
	const struct xkv_udp_hdr *h = (const void *)x->in;

	if (n < HDR_LEN || ntohs(h->magic) != XKV_UDP_MAGIC || h->version != XKV_UDP_VERSION ||
	    !(h->flags & XKV_F_REPLY))
		return false;
	if (ntohl(h->request_id) - first > last - first)
		return false;
	return (h->flags & XKV_F_TRUNCATED) || ntohs(h->cmd_len) <= n - HDR_LEN;
}

/* Waits for a reply to ids first..last until deadline: its length (in x->in),
 * -ETIMEDOUT, or -errno (-ECONNREFUSED when the port is closed). */
static ssize_t udp_wait(struct xkv *x, uint32_t first, uint32_t last, int64_t deadline)
{
	for (;;) {
		ssize_t n = recv(x->udp_fd, x->in, XKV_MAX_DATAGRAM, MSG_TRUNC);

		if (n >= 0) {
			/* Longer than any reply we asked for: not ours. */
			if (n <= XKV_MAX_DATAGRAM && udp_is_reply(x, (size_t)n, first, last))
				return n;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		n = wait_fd(x->udp_fd, POLLIN, deadline);
		if (n < 0)
			return n;
	}
}

/*
 * Sends cmd in a request datagram of `size` bytes (more if cmd needs it) and
 * waits for the reply, with the timeout and retries. Returns the reply's
 * length (header included, in x->in) or a negative errno.
 */
static ssize_t udp_exchange(struct xkv *x, const char *cmd, size_t cmd_len, size_t size)
{
	struct xkv_udp_hdr *h = (void *)x->out;
	uint32_t first = x->next_id;
	int attempts = 0, err = -ECONNREFUSED;

	if (size < HDR_LEN + cmd_len)
		size = HDR_LEN + cmd_len;
	if (size > XKV_MAX_DATAGRAM || cmd_len > UINT16_MAX)
		return -EMSGSIZE;
	memset(x->out, 0, size);
	h->magic = htons(XKV_UDP_MAGIC);
	h->version = XKV_UDP_VERSION;
	h->cmd_len = htons((uint16_t)cmd_len);
	/* An explicit fastpath-token wins; else the password's, else none. */
	h->token = x->token ? x->token : x->derived_token;
	memcpy(x->out + HDR_LEN, cmd, cmd_len);
	if (!x->udp_ai && x->udp_fd < 0)
		x->udp_ai = x->addrs;

	while (attempts <= x->retries) {
		ssize_t r = udp_open(x, err);

		if (r < 0)
			break;
		h->request_id = htonl(x->next_id++);
		attempts++;
		if (send(x->udp_fd, x->out, size, 0) < 0) {
			r = -errno;
		} else {
			r = udp_wait(x, first, x->next_id - 1, now_ms() + x->timeout_ms);
			if (r >= 0)
				return r;
		}
		if (r == -ETIMEDOUT || r == -EINTR || r == -ENOBUFS || r == -EAGAIN)
			continue;
		/* Refused or unreachable here: the next address, not a lost attempt. */
		attempts--;
		err = (int)r;
		udp_next_addr(x);
	}
	/* Every address refused: start from the first again next time. */
	if (!x->udp_ai)
		x->udp_ai = x->addrs;
	if (attempts > x->retries) {
		seterr(x, "no UDP reply after %d attempts of %d ms", attempts, x->timeout_ms);
		return -ETIMEDOUT;
	}
	seterr(x, "UDP: %s", strerror(-err));
	return err;
}

/*
 * One command over UDP: its RESP reply at *resp (inside x->in, valid until
 * the next call) and the reply's flags. A TRUNCATED reply is asked for once
 * more, padded to fit; -EMSGSIZE if that is not possible.
 */
static int udp_request(struct xkv *x, const char *cmd, size_t cmd_len, const char **resp,
		       size_t *resp_len, unsigned *flags)
{
	const struct xkv_udp_hdr *h = (const void *)x->in;
	size_t size = x->padding, need = 0;

	for (int round = 0; round < 2; round++) {
		ssize_t n = udp_exchange(x, cmd, cmd_len, size);
		size_t len;

		if (n < 0)
			return (int)n;
		if (!(h->flags & XKV_F_TRUNCATED)) {
			len = ntohs(h->cmd_len);
			if (!len || resp_reply_len(x->in + HDR_LEN, len, 0) != (ssize_t)len) {
				seterr(x, "malformed UDP reply (%zu bytes of RESP)", len);
				return -EPROTO;
			}
			*resp = x->in + HDR_LEN;
			*resp_len = len;
			*flags = h->flags;
			return 0;
		}
		/* value_len is the value's size, or the whole reply's for an error. */
		need = HDR_LEN + (size_t)ntohl(h->value_len) + BULK_OVERHEAD;
		if (need <= size || need > XKV_MAX_DATAGRAM)
			break;
		size = need;
	}
	seterr(x, "the reply (%zu bytes with the header) does not fit a datagram", need);
	return -EMSGSIZE;
}

static unsigned via(unsigned flags)
{
	return flags & XKV_F_KERNEL ? XKV_VIA_KERNEL : XKV_VIA_DAEMON_UDP;
}

int xkv__udp_command(struct xkv *x, int argc, const char **argv, const size_t *lens, char **reply,
		     size_t *rlen, unsigned *how)
{
	const char *resp;
	size_t cmd_len, resp_len;
	unsigned flags;
	char *cmd;
	int r;

	x->err[0] = '\0';
	r = resp_encode(argc, argv, lens, &cmd, &cmd_len);
	if (r < 0)
		return r;
	r = udp_request(x, cmd, cmd_len, &resp, &resp_len, &flags);
	if (r == 0) {
		r = dup_bytes(resp, resp_len, reply, rlen);
		if (r == 0 && how)
			*how = via(flags);
	}
	free(cmd);
	return r;
}

/* ---- TCP ----------------------------------------------------------------------- */

static void tcp_close(struct xkv *x)
{
	if (x->tcp_fd >= 0)
		close(x->tcp_fd);
	x->tcp_fd = -1;
	x->tin_len = x->tin_used = 0;
}

static int tcp_send(struct xkv *x, const char *p, size_t len, int64_t deadline)
{
	while (len) {
		ssize_t n = send(x->tcp_fd, p, len, MSG_NOSIGNAL);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			int r = wait_fd(x->tcp_fd, POLLOUT, deadline);

			if (r < 0)
				return r;
		} else if (errno != EINTR) {
			return -errno;
		}
	}
	return 0;
}

/* Reads one complete reply: its length at x->tin, or -errno (-ECONNRESET on EOF). */
static ssize_t tcp_read_reply(struct xkv *x, int64_t deadline)
{
	/* Drop the previous reply; a server sends nothing unasked, but keep what it did. */
	if (x->tin_used) {
		memmove(x->tin, x->tin + x->tin_used, x->tin_len - x->tin_used);
		x->tin_len -= x->tin_used;
		x->tin_used = 0;
	}
	for (;;) {
		ssize_t r = resp_reply_len(x->tin, x->tin_len, 0), n;

		if (r > 0) {
			x->tin_used = (size_t)r;
			return r;
		}
		if (r < 0) {
			seterr(x, "the server's reply is not RESP");
			return r;
		}
		if (x->tin_cap - x->tin_len < TCP_READ_CHUNK) {
			size_t cap = x->tin_cap ? x->tin_cap * 2 : 2 * TCP_READ_CHUNK;
			char *p = realloc(x->tin, cap);

			if (!p)
				return -ENOMEM;
			x->tin = p;
			x->tin_cap = cap;
		}
		n = recv(x->tcp_fd, x->tin + x->tin_len, x->tin_cap - x->tin_len, 0);
		if (n > 0) {
			x->tin_len += (size_t)n;
		} else if (n == 0) {
			seterr(x, "the server closed the connection");
			return -ECONNRESET;
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			r = wait_fd(x->tcp_fd, POLLIN, deadline);
			if (r < 0)
				return r;
		} else if (errno != EINTR) {
			return -errno;
		}
	}
}

static int tcp_connect_one(struct xkv *x, const struct addrinfo *ai)
{
	int fd, one = 1, err = 0;
	socklen_t len = sizeof(err);

	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		if (errno != EINPROGRESS) {
			err = -errno;
			goto err_close;
		}
		err = wait_fd(fd, POLLOUT, now_ms() + x->tcp_timeout_ms);
		if (err < 0)
			goto err_close;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err) {
			err = -err;
			goto err_close;
		}
	}
	x->tcp_fd = fd;
	return 0;

err_close:
	close(fd);
	return err;
}

/* Opens the connection (every address in turn) and authenticates it. */
static int tcp_connect(struct xkv *x)
{
	const char *argv[2] = { "AUTH", x->password };
	int64_t deadline;
	ssize_t n;
	size_t len;
	char *cmd;
	int r = -EHOSTUNREACH;

	for (const struct addrinfo *ai = x->addrs; ai; ai = ai->ai_next) {
		r = tcp_connect_one(x, ai);
		if (r == 0)
			break;
	}
	if (r < 0) {
		seterr(x, "TCP: %s", strerror(-r));
		return r;
	}
	if (!x->password)
		return 0;
	r = resp_encode(2, argv, NULL, &cmd, &len);
	if (r < 0)
		goto err_close;
	deadline = now_ms() + x->tcp_timeout_ms;
	r = tcp_send(x, cmd, len, deadline);
	free(cmd);
	if (r < 0)
		goto err_close;
	n = tcp_read_reply(x, deadline);
	if (n < 0) {
		r = (int)n;
		goto err_close;
	}
	if (n != 5 || memcmp(x->tin, "+OK\r\n", 5) != 0) {
		seterr_reply(x, x->tin, (size_t)n);
		r = -EACCES;
		goto err_close;
	}
	return 0;

err_close:
	tcp_close(x);
	return r;
}

/*
 * Sends req and reads its reply: at *reply (inside x->tin, valid until the
 * next TCP call). A kept connection the server has closed since (its idle
 * timeout) is reopened once, but only if no byte of a reply came back, so a
 * command is never run twice because of it.
 */
static int tcp_roundtrip(struct xkv *x, const char *req, size_t req_len, const char **reply,
			 size_t *rlen)
{
	for (int round = 0; round < 2; round++) {
		bool kept = x->tcp_fd >= 0;
		int64_t deadline;
		ssize_t n;
		int r;

		if (!kept) {
			r = tcp_connect(x);
			if (r < 0)
				return r;
		}
		deadline = now_ms() + x->tcp_timeout_ms;
		r = tcp_send(x, req, req_len, deadline);
		n = r < 0 ? r : tcp_read_reply(x, deadline);
		if (n > 0) {
			*reply = x->tin;
			*rlen = (size_t)n;
			return 0;
		}
		r = (int)n;
		if (!(kept && x->tin_len == 0 && (r == -ECONNRESET || r == -EPIPE))) {
			if (!x->err[0])
				seterr(x, "TCP: %s", strerror(-r));
			tcp_close(x);
			return r;
		}
		tcp_close(x);
	}
	return -ECONNRESET;
}

int xkv__command(struct xkv *x, int argc, const char **argv, const size_t *lens, char **reply,
		 size_t *rlen)
{
	const char *resp;
	size_t len, resp_len;
	char *cmd;
	int r;

	x->err[0] = '\0';
	r = resp_encode(argc, argv, lens, &cmd, &len);
	if (r < 0)
		return r;
	r = tcp_roundtrip(x, cmd, len, &resp, &resp_len);
	if (r == 0)
		r = dup_bytes(resp, resp_len, reply, rlen);
	free(cmd);
	return r;
}

/* ---- cluster redirects ------------------------------------------------------------ */

/* Redis Cluster's key hash: CRC16 (XMODEM: polynomial 0x1021, initial 0). */
static uint16_t crc16(const char *p, size_t len)
{
	uint16_t crc = 0;

	for (size_t i = 0; i < len; i++) {
		crc ^= (uint16_t)((uint8_t)p[i] << 8);
		for (int b = 0; b < 8; b++)
			crc = crc & 0x8000 ? (uint16_t)(crc << 1 ^ 0x1021) : (uint16_t)(crc << 1);
	}
	return crc;
}

/* A key's slot: of what is between its first '{' and the next '}' if that
 * is not empty, else of the whole key. */
static uint16_t key_slot(const char *key, size_t len)
{
	const char *open = memchr(key, '{', len), *close;

	if (open) {
		close = memchr(open + 1, '}', len - (size_t)(open + 1 - key));
		if (close && close > open + 1)
			return crc16(open + 1, (size_t)(close - open - 1)) % CLUSTER_SLOTS;
	}
	return crc16(key, len) % CLUSTER_SLOTS;
}

static struct xkv *route_of(struct xkv *x, uint16_t slot)
{
	return x->route && x->route[slot] ? x->nodes[x->route[slot] - 1] : x;
}

/* The client of node "host:port" (made with x's settings on first use), or
 * NULL. An empty host is x's own. */
static struct xkv *node_of(struct xkv *x, const char *name, int *idx)
{
	const char *colon = strrchr(name, ':');
	char host[256];
	long port;
	struct xkv *n;

	for (int i = 0; i < x->nnodes; i++)
		if (!strcmp(x->node_names[i], name)) {
			*idx = i;
			return x->nodes[i];
		}
	if (!colon || x->nnodes == XKV_MAX_NODES || (size_t)(colon - name) >= sizeof(host))
		return NULL;
	port = strtol(colon + 1, NULL, 10);
	if (port <= 0 || port > 65535)
		return NULL;
	if (colon == name)
		snprintf(host, sizeof(host), "%s", x->host);
	else
		snprintf(host, sizeof(host), "%.*s", (int)(colon - name), name);
	/* "[::1]" as some servers write an IPv6 address. */
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	n = xkv__new(host, (uint16_t)port, x->token);
	if (!n)
		return NULL;
	n->padding = x->padding;
	n->timeout_ms = x->timeout_ms;
	n->retries = x->retries;
	n->tcp_timeout_ms = x->tcp_timeout_ms;
	n->derived_token = x->derived_token;
	if (x->password && !(n->password = strdup(x->password))) {
		xkv__free(n);
		return NULL;
	}
	x->node_names[x->nnodes] = strdup(name);
	if (!x->node_names[x->nnodes]) {
		xkv__free(n);
		return NULL;
	}
	x->nodes[x->nnodes] = n;
	*idx = x->nnodes++;
	return n;
}

/*
 * err (an error reply's text) as a redirect: "MOVED <slot> <host>:<port>"
 * sets *at to that node for good (the slot remembered), "ASK ..." for the next
 * try only, with *asking. -1 if err is no redirect (or its node is unknown).
 */
static int follow_redirect(struct xkv *x, const char *err, struct xkv **at, bool *asking)
{
	bool moved = !strncmp(err, "MOVED ", 6), ask = !strncmp(err, "ASK ", 4);
	char name[300];
	long slot;
	char *end;
	int idx;
	struct xkv *n;

	if (!moved && !ask)
		return -1;
	slot = strtol(err + (moved ? 6 : 4), &end, 10);
	if (slot < 0 || slot >= CLUSTER_SLOTS || *end != ' ' || strlen(end + 1) >= sizeof(name))
		return -1;
	snprintf(name, sizeof(name), "%s", end + 1);
	n = node_of(x, name, &idx);
	if (!n)
		return -1;
	if (moved) {
		if (!x->route && !(x->route = calloc(CLUSTER_SLOTS, sizeof(*x->route))))
			return -1;
		x->route[slot] = (uint8_t)(idx + 1);
	}
	*at = n;
	*asking = ask;
	return 0;
}

/* Sends ASKING on the TCP connection, so that its next command is served
 * by the node a slot is migrating to. */
static int tcp_asking(struct xkv *x)
{
	const char *argv[1] = { "ASKING" };
	const char *resp;
	size_t len, resp_len;
	char *cmd;
	int r = resp_encode(1, argv, NULL, &cmd, &len);

	if (r < 0)
		return r;
	r = tcp_roundtrip(x, cmd, len, &resp, &resp_len);
	free(cmd);
	if (r == 0 && (resp_len != 5 || memcmp(resp, "+OK\r\n", 5))) {
		seterr_reply(x, resp, resp_len);
		r = -EREMOTEIO;
	}
	return r;
}

/* ---- GET ------------------------------------------------------------------------ */

/* GET of this one node, UDP then TCP; asking: over TCP after ASKING. */
static int get_once(struct xkv *x, const char *key, size_t klen, bool asking, char **value,
		    size_t *vlen, unsigned *how)
{
	const char *argv[2] = { "GET", key };
	const size_t lens[2] = { 3, klen };
	const char *resp;
	size_t cmd_len, resp_len;
	unsigned flags;
	char *cmd;
	int r;

	x->err[0] = '\0';
	r = resp_encode(2, argv, lens, &cmd, &cmd_len);
	if (r < 0)
		return r;
	if (asking) {
		r = tcp_asking(x);
		if (r < 0)
			goto out;
		goto tcp;
	}
	/*
	 * Whatever UDP cannot settle goes to TCP: no answer, a value too large
	 * for a datagram, a malformed reply, or NOAUTH (no token, or the wrong
	 * one), which the password may cure. Any other answer is the answer.
	 */
	r = udp_request(x, cmd, cmd_len, &resp, &resp_len, &flags);
	if (r == 0 && !is_noauth(resp, resp_len)) {
		r = get_reply(x, resp, resp_len, value, vlen);
		if (how && r != -ENOMEM && r != -EPROTO)
			*how = via(flags);
		if (r != -EPROTO)
			goto out;
	}
	if (r == -ENOMEM)
		goto out;
tcp:
	x->err[0] = '\0';
	r = tcp_roundtrip(x, cmd, cmd_len, &resp, &resp_len);
	if (r == 0) {
		r = get_reply(x, resp, resp_len, value, vlen);
		if (how && r != -ENOMEM && r != -EPROTO)
			*how = XKV_VIA_TCP;
	}
out:
	free(cmd);
	return r;
}

int xkv__get(struct xkv *x, const char *key, size_t klen, char **value, size_t *vlen, unsigned *how)
{
	struct xkv *at = route_of(x, key_slot(key, klen));
	bool asking = false;
	int r;

	for (int hop = 0;; hop++) {
		r = get_once(at, key, klen, asking, value, vlen, how);
		if (r != -EREMOTEIO || hop == XKV_MAX_REDIRECTS ||
		    follow_redirect(x, at->err, &at, &asking) < 0)
			break;
	}
	if (at != x)
		memcpy(x->err, at->err, sizeof(x->err));
	return r;
}

/* ---- MGET ----------------------------------------------------------------------- */

static void free_values(int n, char **values)
{
	for (int i = 0; i < n; i++) {
		free(values[i]);
		values[i] = NULL;
	}
}

/*
 * The reply to MGET of nkeys keys: 0 with the values copied out (NULL for
 * nil), -EREMOTEIO for an error reply, -EPROTO for anything but the array, or
 * -ENOMEM; on failure every values[i] is NULL.
 */
static int mget_reply(struct xkv *x, const char *p, size_t len, int nkeys, char **values,
		      size_t *vlens)
{
	const char *end = p + len, *nl = memchr(p, '\n', len);
	long long n;
	int r = -EPROTO;

	for (int i = 0; i < nkeys; i++)
		values[i] = NULL;
	if (len && (p[0] == '-' || p[0] == '!')) {
		seterr_reply(x, p, len);
		return -EREMOTEIO;
	}
	if (!nl || p[0] != '*' || parse_ll(p + 1, nl - 1, &n) < 0 || n != nkeys)
		goto bad;
	p = nl + 1;
	for (int i = 0; i < nkeys; i++) {
		nl = p < end ? memchr(p, '\n', (size_t)(end - p)) : NULL;
		if (nl && p[0] == '_' && nl == p + 2) {
			p = nl + 1; /* RESP3's null */
			continue;
		}
		if (!nl || p[0] != '$' || parse_ll(p + 1, nl - 1, &n) < 0 || n < -1)
			goto bad;
		p = nl + 1;
		if (n == -1)
			continue;
		if (n > end - p - 2) /* resp_reply_len() checked the CRLF */
			goto bad;
		r = dup_bytes(p, (size_t)n, &values[i], &vlens[i]);
		if (r < 0)
			goto err;
		p += n + 2;
	}
	return 0;

bad:
	r = -EPROTO;
	seterr(x, "unexpected reply to MGET");
err:
	free_values(nkeys, values);
	return r;
}

/* MGET of this one node; asking: over TCP after ASKING. */
static int mget_once(struct xkv *x, int nkeys, const char *const *keys, const size_t *klens,
		     bool asking, char **values, size_t *vlens, unsigned *how)
{
	const char **argv;
	size_t *lens, cmd_len, resp_len;
	const char *resp;
	unsigned flags;
	char *cmd = NULL;
	int r;

	x->err[0] = '\0';
	if (nkeys < 1)
		return -EINVAL;
	argv = calloc((size_t)nkeys + 1, sizeof(*argv));
	lens = calloc((size_t)nkeys + 1, sizeof(*lens));
	r = -ENOMEM;
	if (!argv || !lens)
		goto out;
	argv[0] = "MGET";
	lens[0] = 4;
	for (int i = 0; i < nkeys; i++) {
		argv[i + 1] = keys[i];
		lens[i + 1] = klens ? klens[i] : strlen(keys[i]);
	}
	r = resp_encode(nkeys + 1, argv, lens, &cmd, &cmd_len);
	if (r < 0)
		goto out;
	if (asking) {
		r = tcp_asking(x);
		if (r < 0)
			goto out;
		goto tcp;
	}
	/* Any error over UDP goes to TCP: MGET itself answers none, so it is
	 * about UDP (NOAUTH, or a server that does not serve MGET there). */
	r = udp_request(x, cmd, cmd_len, &resp, &resp_len, &flags);
	if (r == 0) {
		r = mget_reply(x, resp, resp_len, nkeys, values, vlens);
		if (r == 0 && how)
			*how = via(flags);
		if (r == 0 || r == -ENOMEM)
			goto out;
	}
	if (r == -ENOMEM)
		goto out;
tcp:
	x->err[0] = '\0';
	r = tcp_roundtrip(x, cmd, cmd_len, &resp, &resp_len);
	if (r == 0) {
		r = mget_reply(x, resp, resp_len, nkeys, values, vlens);
		if (how && r != -ENOMEM && r != -EPROTO)
			*how = XKV_VIA_TCP;
	}
out:
	if (r < 0)
		for (int i = 0; i < nkeys; i++)
			values[i] = NULL;
	free(cmd);
	free(argv);
	free(lens);
	return r;
}

int xkv__mget(struct xkv *x, int nkeys, const char *const *keys, const size_t *klens, char **values,
	      size_t *vlens, unsigned *how)
{
	struct xkv *at;
	bool asking = false;
	int r;

	if (nkeys < 1)
		return -EINVAL;
	/* A cluster serves an MGET whose keys share a slot: the first key's. */
	at = route_of(x, key_slot(keys[0], klens ? klens[0] : strlen(keys[0])));
	for (int hop = 0;; hop++) {
		r = mget_once(at, nkeys, keys, klens, asking, values, vlens, how);
		if (r != -EREMOTEIO || hop == XKV_MAX_REDIRECTS ||
		    follow_redirect(x, at->err, &at, &asking) < 0)
			break;
	}
	if (at != x)
		memcpy(x->err, at->err, sizeof(x->err));
	return r;
}
