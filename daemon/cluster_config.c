// SPDX-License-Identifier: BSD-3-Clause
/*
 * cluster_config: nodes.conf in Redis's format — the lines of CLUSTER NODES
 * with the aux fields (",hostname,tls-port=0,shard-id=...") and a closing
 * "vars currentEpoch N lastVoteEpoch M" line. Loaded once at start, rewritten
 * whole (temporary file, rename) on every change, under a flock() held for
 * the process's life, as Redis does; the file and its directory are fsynced
 * when the change must survive a crash (epochs, the bus's decisions).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster.h"
#include "cluster_ctl.h"
#include "config.h"
#include "log.h"
#include "mem.h"
#include "text.h"
#include "util.h"

static int lock_fd = -1; /* held for the process's life: the file's flock */

static const struct {
	uint32_t flag;
	const char *name;
} flag_names[] = {
	{ CLUSTER_NODE_MYSELF, "myself" }, { CLUSTER_NODE_MASTER, "master" },
	{ CLUSTER_NODE_SLAVE, "slave" },   { CLUSTER_NODE_PFAIL, "fail?" },
	{ CLUSTER_NODE_FAIL, "fail" },	   { CLUSTER_NODE_HANDSHAKE, "handshake" },
	{ CLUSTER_NODE_NOADDR, "noaddr" }, { CLUSTER_NODE_NOFAILOVER, "nofailover" },
};

const char *cluster_flags_string(uint32_t flags, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(flag_names) / sizeof(flag_names[0]); i++)
		if (flags & flag_names[i].flag)
			len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "," : "",
						flag_names[i].name);
	if (!len)
		snprintf(buf, size, "noflags");
	return buf;
}

void cluster_describe_node(struct text *t, const struct cluster_node *n, bool for_file)
{
	const struct cluster_node_bus *nb = cluster_nb(n);
	struct cluster_node *me = cluster_myself();
	uint32_t flags = atomic_load(&n->flags);
	char fl[128];
	int start = -1;

	text_printf(t, "%.40s %s:%u@%u", n->name, n->ip, n->port, n->cport);
	if (n->hostname[0])
		text_printf(t, ",%s", n->hostname);
	if (for_file) {
		if (!n->hostname[0])
			text_append(t, ",", 1);
		/* Redis's aux fields, in its order (tcp-port is the address's). */
		text_printf(t, ",tls-port=%u", n->pport);
		if (nb->human_nodename[0])
			text_printf(t, ",nodename=%s", nb->human_nodename);
		if (n->shard_id[0])
			text_printf(t, ",shard-id=%.40s", n->shard_id);
	}
	text_printf(t, " %s %.40s %lld %lld %llu %s",
		    cluster_flags_string(flags & ~CLUSTER_NODE_FORGOTTEN, fl, sizeof(fl)),
		    n->replicaof ? n->replicaof->name : "-", (long long)nb->ping_sent,
		    (long long)nb->pong_received, (unsigned long long)cluster_node_epoch(n),
		    (nb->link || n == me) ? "connected" : "disconnected");
	for (int j = 0; j <= CLUSTER_SLOTS; j++) {
		bool mine =
			j < CLUSTER_SLOTS && atomic_load(&cluster_slot((uint16_t)j)->owner) == n;

		if (mine && start < 0)
			start = j;
		if (!mine && start >= 0) {
			if (start == j - 1)
				text_printf(t, " %d", start);
			else
				text_printf(t, " %d-%d", start, j - 1);
			start = -1;
		}
	}
	if (n != me)
		return;
	for (int j = 0; j < CLUSTER_SLOTS; j++) {
		const struct cluster_slot *s = cluster_slot((uint16_t)j);
		struct cluster_node *to = atomic_load(&s->migrating_to);
		struct cluster_node *from = atomic_load(&s->importing_from);

		if (to)
			text_printf(t, " [%d->-%.40s]", j, to->name);
		else if (from)
			text_printf(t, " [%d-<-%.40s]", j, from->name);
	}
}

void cluster_describe_nodes(struct text *t, bool for_file)
{
	for (struct cluster_node *n = cluster_nodes_first(); n; n = n->next) {
		if (for_file && (atomic_load(&n->flags) & CLUSTER_NODE_HANDSHAKE))
			continue;
		cluster_describe_node(t, n, for_file);
		text_append(t, "\n", 1);
	}
}

/* The directory of path, fsynced so that a rename in it is durable. */
static int fsync_dir_of(const char *path)
{
	char *copy = xstrndup(path, strlen(path));
	int fd, ret = 0;

	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
	xfree(copy);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

int cluster_config_save(bool durable)
{
	struct text t = { 0 };
	char tmp[4096];
	size_t off = 0;
	int fd, ret = 0;

	cluster_describe_nodes(&t, true);
	text_printf(&t, "vars currentEpoch %llu lastVoteEpoch %llu\n",
		    (unsigned long long)cluster_ctl.current_epoch,
		    (unsigned long long)cluster_ctl.last_vote_epoch);
	snprintf(tmp, sizeof(tmp), "%s.tmp-%d-%lld", config.cluster_config_file, (int)getpid(),
		 (long long)now_ms());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		log_warning("Could not open temp cluster config file: %s", strerror(errno));
		goto out;
	}
	while (off < t.len) {
		ssize_t w = write(fd, t.p + off, t.len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			ret = w < 0 ? -errno : -EIO;
			log_warning(
				"Failed after writing (%zu) bytes to tmp cluster config file: %s",
				off, strerror(-ret));
			goto out;
		}
		off += (size_t)w;
	}
	if (durable && fsync(fd) < 0) {
		ret = -errno;
		log_warning("Could not sync tmp cluster config file: %s", strerror(errno));
		goto out;
	}
	if (rename(tmp, config.cluster_config_file) < 0) {
		ret = -errno;
		log_warning("Could not rename tmp cluster config file: %s", strerror(errno));
		goto out;
	}
	if (durable)
		ret = fsync_dir_of(config.cluster_config_file);
	if (ret < 0)
		log_warning("Could not sync cluster config file dir: %s", strerror(-ret));
out:
	if (fd >= 0)
		close(fd);
	if (ret < 0)
		unlink(tmp);
	xfree(t.p);
	return ret;
}

static int lock_config(void)
{
	int fd = open(config.cluster_config_file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	if (fd < 0) {
		log_warning("Can't open %s in order to acquire a lock: %s",
			    config.cluster_config_file, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			log_warning("Sorry, the cluster configuration file %s is already used by a "
				    "different Redis Cluster node. Please make sure that different "
				    "nodes use different cluster configuration files.",
				    config.cluster_config_file);
		else
			log_warning("Impossible to lock %s: %s", config.cluster_config_file,
				    strerror(errno));
		close(fd);
		return -1;
	}
	lock_fd = fd;
	return 0;
}

static bool valid_name(const char *p, size_t len)
{
	if (len != CLUSTER_NAMELEN)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return false;
	return true;
}

static struct cluster_node *node_get(const char *name)
{
	struct cluster_node *n = cluster_node_lookup(name, strlen(name));

	return n ? n : cluster_ctl_node_new(name, 0);
}

/* ip:port@cport[,hostname][,aux=val]* into n; 0 or -1. */
static int parse_address(struct cluster_node *n, char *addr)
{
	char *save = NULL, *part = strtok_r(addr, ",", &save), *colon, *at;
	int i = 0;

	if (!part)
		return -1;
	colon = strrchr(part, ':');
	if (!colon)
		return -1;
	*colon = '\0';
	snprintf(n->ip, sizeof(n->ip), "%s", part);
	at = strchr(colon + 1, '@');
	if (at)
		*at++ = '\0';
	n->port = (uint16_t)atoi(colon + 1);
	n->cport = (uint16_t)(at ? atoi(at) : n->port + CLUSTER_PORT_INCR);
	/* strtok_r skips empty fields: the hostname is the next one only if it
	 * is not an aux field. */
	for (part = strtok_r(NULL, ",", &save); part; part = strtok_r(NULL, ",", &save), i++) {
		char *eq = strchr(part, '=');

		if (!eq) {
			if (i)
				return -1;
			snprintf(n->hostname, sizeof(n->hostname), "%s", part);
			continue;
		}
		*eq++ = '\0';
		if (!strcmp(part, "shard-id")) {
			if (!valid_name(eq, strlen(eq)))
				return -1;
			memcpy(n->shard_id, eq, CLUSTER_NAMELEN + 1);
		} else if (!strcmp(part, "nodename")) {
			snprintf(cluster_nb(n)->human_nodename,
				 sizeof(cluster_nb(n)->human_nodename), "%s", eq);
		} else if (!strcmp(part, "tcp-port")) {
			n->port = (uint16_t)atoi(eq);
		} else if (!strcmp(part, "tls-port")) {
			n->pport = (uint16_t)atoi(eq);
		} else {
			return -1;
		}
	}
	return 0;
}

static int parse_flags(struct cluster_node *n, char *s)
{
	char *save = NULL;
	uint32_t flags = 0;

	for (char *f = strtok_r(s, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
		size_t i;

		if (!strcasecmp(f, "noflags"))
			continue;
		for (i = 0; i < sizeof(flag_names) / sizeof(flag_names[0]); i++)
			if (!strcasecmp(f, flag_names[i].name))
				break;
		if (i == sizeof(flag_names) / sizeof(flag_names[0]))
			return -1;
		flags |= flag_names[i].flag;
	}
	if (flags & CLUSTER_NODE_FAIL)
		cluster_nb(n)->fail_time = mono_ms();
	atomic_store(&n->flags, flags);
	return 0;
}

static int parse_slots(struct cluster_node *n, char **argv, int argc)
{
	for (int j = 8; j < argc; j++) {
		char *p = argv[j], *dash;
		long start, stop;

		if (p[0] == '[') {
			long slot = strtol(p + 1, &dash, 10);
			char dir;
			struct cluster_node *other;

			if (*dash != '-' || slot < 0 || slot >= CLUSTER_SLOTS)
				return -1;
			dir = dash[1];
			p = dash + 3;
			if (strlen(p) != CLUSTER_NAMELEN + 1 || p[CLUSTER_NAMELEN] != ']')
				return -1;
			p[CLUSTER_NAMELEN] = '\0';
			if (!valid_name(p, CLUSTER_NAMELEN))
				return -1;
			other = node_get(p);
			if (!other)
				return -1;
			if (dir == '>')
				cluster_slot_set_migrating((uint16_t)slot, other);
			else
				cluster_slot_set_importing((uint16_t)slot, other);
			continue;
		}
		start = strtol(p, &dash, 10);
		stop = *dash == '-' ? strtol(dash + 1, NULL, 10) : start;
		if (start < 0 || start >= CLUSTER_SLOTS || stop < 0 || stop >= CLUSTER_SLOTS)
			return -1;
		for (long s = start; s <= stop; s++)
			cluster_slot_set_owner((uint16_t)s, n);
	}
	return 0;
}

/* One line of nodes.conf: 0, or -1 for a format error. */
static int load_line(char *line, struct cluster_node **me)
{
	char *argv[CLUSTER_SLOTS + 16], *save = NULL;
	int argc = 0;
	struct cluster_node *n;

	for (char *tok = strtok_r(line, " \t\r\n", &save);
	     tok && argc < (int)(sizeof(argv) / sizeof(argv[0]));
	     tok = strtok_r(NULL, " \t\r\n", &save))
		argv[argc++] = tok;
	if (!argc)
		return 0;
	if (!strcasecmp(argv[0], "vars")) {
		if (!(argc % 2))
			return -1;
		for (int j = 1; j < argc; j += 2) {
			if (!strcasecmp(argv[j], "currentEpoch"))
				cluster_ctl.current_epoch = strtoull(argv[j + 1], NULL, 10);
			else if (!strcasecmp(argv[j], "lastVoteEpoch"))
				cluster_ctl.last_vote_epoch = strtoull(argv[j + 1], NULL, 10);
			else
				log_notice("Skipping unknown cluster config variable '%s'",
					   argv[j]);
		}
		return 0;
	}
	if (argc < 8 || !valid_name(argv[0], strlen(argv[0])))
		return -1;
	n = node_get(argv[0]);
	if (!n || parse_address(n, argv[1]) < 0 || parse_flags(n, argv[2]) < 0)
		return -1;
	if (atomic_load(&n->flags) & CLUSTER_NODE_MYSELF) {
		if (*me)
			return -1;
		*me = n;
	}
	if (argv[3][0] != '-') {
		if (!valid_name(argv[3], strlen(argv[3])))
			return -1;
		n->replicaof = node_get(argv[3]);
		if (!n->replicaof)
			return -1;
		memcpy(n->shard_id, n->replicaof->shard_id, sizeof(n->shard_id));
	}
	if (atoi(argv[4]))
		cluster_nb(n)->ping_sent = now_ms();
	if (atoi(argv[5]))
		cluster_nb(n)->pong_received = now_ms();
	n->config_epoch = n->replicaof ? 0 : strtoull(argv[6], NULL, 10);
	return parse_slots(n, argv, argc);
}

/* Replaces the node cluster_init made with the file's myself. */
static int load(FILE *f)
{
	size_t cap = 1024 + CLUSTER_SLOTS * 128;
	char *line = xmalloc(cap);
	struct cluster_node *me = NULL, *fresh = cluster_myself();
	int ret = 0;

	/* The fresh node must not shadow the file's: unflag it while loading. */
	atomic_fetch_and(&fresh->flags, ~(uint32_t)CLUSTER_NODE_MYSELF);
	while (fgets(line, (int)cap, f)) {
		if (line[0] == '\n' || line[0] == '\0')
			continue;
		if (load_line(line, &me) < 0) {
			log_warning("Unrecoverable error: corrupted cluster config file \"%s\".",
				    line);
			ret = -1;
			break;
		}
	}
	xfree(line);
	if (!ret &&
	    (!me || !(atomic_load(&me->flags) & (CLUSTER_NODE_MASTER | CLUSTER_NODE_SLAVE)) ||
	     ((atomic_load(&me->flags) & CLUSTER_NODE_SLAVE) && !me->replicaof))) {
		log_warning("Unrecoverable error: corrupted cluster config file \"%s\".", "");
		ret = -1;
	}
	if (ret < 0)
		return -1;
	cluster_set_myself(me);
	cluster_ctl_node_delete(fresh);
	for (struct cluster_node *n = cluster_nodes_first(); n; n = n->next)
		if (n->config_epoch > cluster_ctl.current_epoch)
			cluster_ctl.current_epoch = n->config_epoch;
	log_notice("Node configuration loaded, I'm %.40s", me->name);
	return 0;
}

int cluster_config_start(void)
{
	struct stat st;
	FILE *f;
	int ret = 0;

	if (lock_config() < 0)
		return -1;
	f = fopen(config.cluster_config_file, "r");
	if (!f && errno != ENOENT) {
		log_warning("Loading the cluster node config from %s: %s",
			    config.cluster_config_file, strerror(errno));
		return -1;
	}
	cluster_lock();
	if (f && fstat(fileno(f), &st) == 0 && st.st_size > 0) {
		ret = load(f);
	} else {
		log_notice("No cluster configuration found, I'm %.40s", cluster_myself()->name);
		ret = 0;
	}
	if (f)
		fclose(f);
	cluster_update_myself_announced();
	if (!ret && cluster_config_save(true) < 0) {
		log_warning("Fatal: can't update cluster config file.");
		ret = -1;
	}
	cluster_update_state();
	cluster_unlock();
	return ret;
}
