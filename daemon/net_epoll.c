// SPDX-License-Identifier: BSD-3-Clause
/*
 * The epoll engine: the fallback where io_uring cannot be set up. Reads go
 * straight into the query buffer; replies are written at once and only wait
 * for EPOLLOUT when the socket is full.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "aof.h"
#include "client.h"
#include "log.h"
#include "mem.h"
#include "udp.h"
#include "util.h"
#include "worker.h"

#define MAX_EVENTS 256
#define MAX_IOV 64
/* Reads per readiness event before other clients get a turn. */
#define READS_PER_EVENT 16

struct epoll_worker {
	int epfd;
	struct client *closing; /* freed at the end of the event batch */
	/* Markers whose addresses tag the listener and wake-up events. */
	char listen_tag[WORKER_MAX_LISTEN], udp_tag[16], wake_tag;
};

/* Per-client engine state lives in engine_data as flags. */
#define WANT_WRITE ((void *)1)

static int epoll_init(struct worker *w)
{
	struct epoll_worker *ew = xcalloc(1, sizeof(*ew));
	struct epoll_event ev = { .events = EPOLLIN };

	ew->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ew->epfd < 0) {
		xfree(ew);
		return -errno;
	}
	for (int i = 0; i < w->nlisten; i++) {
		ev.data.ptr = &ew->listen_tag[i];
		epoll_ctl(ew->epfd, EPOLL_CTL_ADD, w->listen_fds[i], &ev);
	}
	for (int i = 0; i < w->nudp; i++) {
		ev.data.ptr = &ew->udp_tag[i];
		epoll_ctl(ew->epfd, EPOLL_CTL_ADD, w->udp_fds[i], &ev);
	}
	ev.data.ptr = &ew->wake_tag;
	epoll_ctl(ew->epfd, EPOLL_CTL_ADD, w->wake_fd, &ev);
	w->engine_data = ew;
	return 0;
}

static void epoll_close_client(struct client *c)
{
	struct epoll_worker *ew = c->worker->engine_data;

	if (c->closing)
		return;
	c->closing = true;
	epoll_ctl(ew->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	c->next_closing = ew->closing;
	ew->closing = c;
}

static void set_want_write(struct client *c, bool on)
{
	struct epoll_worker *ew = c->worker->engine_data;
	struct epoll_event ev = { .events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c };

	if ((c->engine_data == WANT_WRITE) == on)
		return;
	c->engine_data = on ? WANT_WRITE : NULL;
	epoll_ctl(ew->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Writes what it can; closes the client when it is done with it. */
static void flush(struct client *c)
{
	struct iovec iov[MAX_IOV];

	if (c->closing)
		return;
	if (c->flags & CLIENT_CLOSE_ASAP) {
		epoll_close_client(c);
		return;
	}
	/* The AOF has the writes first (the disk, under appendfsync always). */
	if (client_has_replies(c))
		aof_before_replies();
	while (client_has_replies(c)) {
		int n = client_reply_iov(c, iov, MAX_IOV, SIZE_MAX);
		ssize_t sent = writev(c->fd, iov, n);

		if (sent < 0) {
			if (errno == EAGAIN || errno == EINTR) {
				set_want_write(c, true);
				return;
			}
			epoll_close_client(c);
			return;
		}
		worker_client_sent(c, (size_t)sent);
	}
	set_want_write(c, false);
	if (c->flags & CLIENT_CLOSE_AFTER_REPLY)
		epoll_close_client(c);
}

static void epoll_wants_write(struct client *c)
{
	flush(c);
}

static void handle_read(struct client *c)
{
	for (int i = 0; i < READS_PER_EVENT && !c->closing; i++) {
		size_t room;
		char *buf = client_read_buffer(c, &room);
		ssize_t n = read(c->fd, buf, room);

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			epoll_close_client(c);
			return;
		}
		if (n < 0)
			break;
		if (!worker_client_input(c, (size_t)n) || (size_t)n < room)
			break;
	}
	flush(c);
}

static void accept_all(struct worker *w, int lfd)
{
	struct epoll_worker *ew = w->engine_data;

	for (int i = 0; i < 64; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct epoll_event ev = { .events = EPOLLIN };
		struct client *c;

		if (fd < 0)
			return;
		c = worker_accept(w, fd);
		if (!c)
			continue;
		ev.data.ptr = c;
		if (epoll_ctl(ew->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
			epoll_close_client(c);
	}
}

static void free_closed(struct epoll_worker *ew)
{
	while (ew->closing) {
		struct client *c = ew->closing;

		ew->closing = c->next_closing;
		worker_client_free(c);
	}
}

/* Handles n ready events; nested (a busy script's turn), the script's own
 * client and the UDP sockets wait (level-triggered: they stay ready). */
static void handle_events(struct worker *w, struct epoll_event *events, int n, bool nested)
{
	struct epoll_worker *ew = w->engine_data;

	for (int i = 0; i < n; i++) {
		void *tag = events[i].data.ptr;

		if (tag == &ew->wake_tag) {
			worker_drain_mail(w);
		} else if ((char *)tag >= ew->udp_tag &&
			   (char *)tag < ew->udp_tag + sizeof(ew->udp_tag)) {
			if (!nested)
				udp_serve(w, w->udp_fds[(char *)tag - ew->udp_tag]);
		} else if ((char *)tag >= ew->listen_tag &&
			   (char *)tag < ew->listen_tag + sizeof(ew->listen_tag)) {
			accept_all(w, w->listen_fds[(char *)tag - ew->listen_tag]);
		} else {
			struct client *c = tag;

			if (c->closing)
				continue;
			if ((events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) &&
			    !(c->flags & CLIENT_PROTECTED))
				handle_read(c);
			else if (events[i].events & EPOLLOUT)
				flush(c);
		}
	}
}

/* A turn from inside a busy script's command, without waiting; closed
 * clients are freed by the outer turn (the script's own may be one). */
static void epoll_poll_nested(struct worker *w)
{
	struct epoll_worker *ew = w->engine_data;
	struct epoll_event events[MAX_EVENTS];
	int n = epoll_wait(ew->epfd, events, MAX_EVENTS, 0);

	handle_events(w, events, n, true);
}

static void epoll_run(struct worker *w)
{
	struct epoll_worker *ew = w->engine_data;
	struct epoll_event events[MAX_EVENTS];

	while (!server.shutdown) {
		int n = epoll_wait(ew->epfd, events, MAX_EVENTS, worker_wait_ms(w));

		handle_events(w, events, n, false);
		free_closed(ew);
		worker_cron(w);
		/* Writes that owe nobody a reply (a master's stream, expiries)
		 * reach the file within the turn too. */
		aof_before_replies();
	}
	for (struct client *c = w->clients; c; c = c->next_in_worker)
		epoll_close_client(c);
	free_closed(ew);
}

static void epoll_destroy(struct worker *w)
{
	struct epoll_worker *ew = w->engine_data;

	close(ew->epfd);
	xfree(ew);
	w->engine_data = NULL;
}

/* A socket the server opened itself (the link to a master). */
static struct client *epoll_adopt(struct worker *w, int fd)
{
	struct epoll_worker *ew = w->engine_data;
	struct epoll_event ev = { .events = EPOLLIN };
	struct client *c = worker_adopt(w, fd);

	ev.data.ptr = c;
	if (epoll_ctl(ew->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		epoll_close_client(c);
		return NULL;
	}
	return c;
}

const struct net_engine net_engine_epoll = {
	.name = "epoll",
	.init = epoll_init,
	.run = epoll_run,
	.destroy = epoll_destroy,
	.wants_write = epoll_wants_write,
	.close_client = epoll_close_client,
	.adopt = epoll_adopt,
	.poll_nested = epoll_poll_nested,
};
