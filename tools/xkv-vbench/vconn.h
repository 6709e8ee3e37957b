/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vconn: a blocking RESP connection for xkv-vbench. Requests are sent as
 * pre-built bytes; a reply is read whole into the connection's buffer and
 * handed back as a span, from which vconn_names() takes the elements of an
 * array of bulk strings (a VSIM reply). One thread per connection.
 */
#ifndef XKV_VBENCH_VCONN_H
#define XKV_VBENCH_VCONN_H

#include <stddef.h>
#include <stdint.h>

struct vconn {
	int fd;
	char *buf;
	size_t cap, start, end; /* unread bytes are buf[start..end) */
};

/* A reply: buf[0..len) inside the connection's buffer, valid until the
 * next read. */
struct vreply {
	const char *buf;
	size_t len;
};

int vconn_open(struct vconn *c, const char *host, int port);
void vconn_close(struct vconn *c);
int vconn_send(struct vconn *c, const void *p, size_t len);
/* Blocks until one complete reply has arrived; -EPROTO, -EIO on EOF. */
int vconn_read(struct vconn *c, struct vreply *r);
/* A request from argv (lengths given) appended to out/len (realloc'd). */
void vconn_format(char **out, size_t *len, size_t *cap, int argc, const char *const *argv,
		  const size_t *lens);
/* The elements of an array reply parsed as integers into rows (at most
 * max); returns how many, or -EPROTO if r is not an array of bulk strings
 * (an error reply, say). */
int vconn_names(const struct vreply *r, int64_t *rows, int max);
/* Whether r is an error reply. */
static inline int vconn_is_error(const struct vreply *r)
{
	return r->len && r->buf[0] == '-';
}

#endif
