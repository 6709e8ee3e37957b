// SPDX-License-Identifier: BSD-3-Clause
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <linux/types.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>

#include <bpf/bpf.h>

#include "config.h"
#include "fastpath_local.h"
#include "log.h"
#include "mem.h"
#include "xkv_abi.h"

/* What the bind addresses cover. */
struct binds {
	bool any4, any6;
	int n;
	uint8_t addr[16][16]; /* exact addresses, IPv4 mapped into ::ffff:0:0/96 */
};

static void map_v4(uint8_t out[16], const void *in4)
{
	memset(out, 0, 16);
	out[10] = out[11] = 0xff;
	memcpy(out + 12, in4, 4);
}

/* The bind list as udp_open() reads it: "*" is 0.0.0.0, a leading '-' marks
 * an optional address. */
static void parse_binds(struct binds *b)
{
	char *copy = xstrndup(config.bind, strlen(config.bind)), *save = NULL;

	memset(b, 0, sizeof(*b));
	for (char *a = strtok_r(copy, " ", &save); a; a = strtok_r(NULL, " ", &save)) {
		struct in6_addr a6;
		struct in_addr a4;

		if (a[0] == '-')
			a++;
		if (!strcmp(a, "*") || !strcmp(a, "0.0.0.0")) {
			b->any4 = true;
		} else if (!strcmp(a, "::")) {
			b->any6 = true;
		} else if (b->n < 16 && inet_pton(AF_INET, a, &a4) == 1) {
			map_v4(b->addr[b->n++], &a4);
		} else if (b->n < 16 && inet_pton(AF_INET6, a, &a6) == 1) {
			memcpy(b->addr[b->n++], &a6, 16);
		}
	}
	xfree(copy);
}

static bool bound(const struct binds *b, const uint8_t addr[16], bool v6)
{
	if (v6 ? b->any6 : b->any4)
		return true;
	for (int i = 0; i < b->n; i++)
		if (!memcmp(b->addr[i], addr, 16))
			return true;
	return false;
}

static int index_of(const int *ifindexes, int n, int ifindex)
{
	for (int i = 0; i < n; i++)
		if (ifindexes[i] == ifindex)
			return i;
	return -1;
}

/* An IPv4 address's label may be "eth0:1": its device is eth0. */
static int ifindex_of(const char *label)
{
	char name[IF_NAMESIZE];
	size_t len = strcspn(label, ":");

	if (len >= sizeof(name))
		return -1;
	memcpy(name, label, len);
	name[len] = '\0';
	return (int)if_nametoindex(name);
}

/* Adds one address to l, once; false if l is full. */
static bool add_addr(struct xkv_local *l, const uint8_t addr[16], bool v6)
{
	if (!v6) {
		uint32_t a;

		memcpy(&a, addr + 12, 4);
		for (int i = 0; i < l->n4; i++)
			if (l->addr4[i] == a)
				return true;
		if (l->n4 == XKV_LOCAL_ADDRS)
			return false;
		l->addr4[l->n4++] = a;
		return true;
	}
	for (int i = 0; i < l->n6; i++)
		if (!memcmp(l->addr6[i], addr, 16))
			return true;
	if (l->n6 == XKV_LOCAL_ADDRS)
		return false;
	memcpy(l->addr6[l->n6++], addr, 16);
	return true;
}

int fastpath_local_refresh(int map_fd, const int *ifindexes, int n)
{
	static pthread_mutex_t refresh_lock = PTHREAD_MUTEX_INITIALIZER;
	/* The entries written last time, to empty those no longer attached. */
	static int written[64];
	static int nwritten;
	struct xkv_local *ifs = xcalloc((size_t)(n ? n : 1), sizeof(*ifs));
	bool *has_mac = xcalloc((size_t)(n ? n : 1), sizeof(*has_mac));
	const struct xkv_local none = { 0 };
	struct ifaddrs *all = NULL;
	bool full = false;
	struct binds b;
	int ret = 0;

	pthread_mutex_lock(&refresh_lock);
	if (n && getifaddrs(&all) < 0) {
		ret = -errno;
		goto out;
	}
	parse_binds(&b);
	/* First the interfaces: their MAC and kind (the AF_PACKET entries). */
	for (struct ifaddrs *a = all; a; a = a->ifa_next) {
		const struct sockaddr_ll *ll = (const void *)a->ifa_addr;
		int i;

		if (!ll || ll->sll_family != AF_PACKET || ll->sll_halen != 6)
			continue;
		i = index_of(ifindexes, n, ll->sll_ifindex);
		if (i < 0)
			continue;
		memcpy(ifs[i].mac, ll->sll_addr, 6);
		ifs[i].loopback = (a->ifa_flags & IFF_LOOPBACK) != 0;
		/* A group address is never a frame's own destination. */
		has_mac[i] = !(ll->sll_addr[0] & 1);
	}
	/* Then their addresses that a bind address covers. */
	for (struct ifaddrs *a = all; a; a = a->ifa_next) {
		uint8_t addr[16];
		bool v6;
		int i;

		if (!a->ifa_addr ||
		    (a->ifa_addr->sa_family != AF_INET && a->ifa_addr->sa_family != AF_INET6))
			continue;
		i = index_of(ifindexes, n, ifindex_of(a->ifa_name));
		if (i < 0 || !has_mac[i])
			continue;
		v6 = a->ifa_addr->sa_family == AF_INET6;
		if (v6)
			memcpy(addr, &((const struct sockaddr_in6 *)a->ifa_addr)->sin6_addr, 16);
		else
			map_v4(addr, &((const struct sockaddr_in *)a->ifa_addr)->sin_addr);
		if (bound(&b, addr, v6) && !add_addr(&ifs[i], addr, v6))
			full = true;
	}
	if (full)
		log_verbose("fastpath: an interface has more than %d addresses of a family; the "
			    "kernel answers the first %d",
			    XKV_LOCAL_ADDRS, XKV_LOCAL_ADDRS);
	/*
	 * An array element is rewritten in place, so a packet read during the
	 * rewrite may see part of the old entry and part of the new one: only
	 * entries that changed are written, and a mix can only match what the
	 * old or the new entry would (a torn MAC matches no frame).
	 */
	for (int i = 0; i < n; i++) {
		uint32_t key = (uint32_t)ifindexes[i];
		struct xkv_local cur;

		if (key >= XKV_MAX_IFINDEX)
			continue; /* fastpath_attach() said so */
		if (bpf_map_lookup_elem(map_fd, &key, &cur) == 0 &&
		    !memcmp(&cur, &ifs[i], sizeof(cur)))
			continue;
		if (bpf_map_update_elem(map_fd, &key, &ifs[i], BPF_ANY) < 0) {
			ret = -errno;
			log_warning("fastpath: cannot fill kv_local: %s", strerror(errno));
		}
	}
	/* Last, empty what is no longer attached. */
	for (int j = 0; j < nwritten; j++) {
		uint32_t key = (uint32_t)written[j];

		if (index_of(ifindexes, n, written[j]) < 0)
			bpf_map_update_elem(map_fd, &key, &none, BPF_ANY);
	}
	nwritten = 0;
	for (int i = 0; i < n && nwritten < (int)(sizeof(written) / sizeof(written[0])); i++)
		if (ifindexes[i] < XKV_MAX_IFINDEX)
			written[nwritten++] = ifindexes[i];
out:
	pthread_mutex_unlock(&refresh_lock);
	if (all)
		freeifaddrs(all);
	xfree(has_mac);
	xfree(ifs);
	return ret;
}
