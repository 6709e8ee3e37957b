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

static bool wanted(const struct xkv_local_key *keys, int nkeys, const struct xkv_local_key *k)
{
	for (int i = 0; i < nkeys; i++)
		if (!memcmp(&keys[i], k, sizeof(*k)))
			return true;
	return false;
}

int fastpath_local_refresh(int map_fd, const int *ifindexes, int n)
{
	static pthread_mutex_t refresh_lock = PTHREAD_MUTEX_INITIALIZER;
	struct xkv_local *ifs = xcalloc((size_t)(n ? n : 1), sizeof(*ifs));
	bool *has_mac = xcalloc((size_t)(n ? n : 1), sizeof(*has_mac));
	struct xkv_local_key *keys = xcalloc(XKV_MAX_LOCAL, sizeof(*keys)), k, next;
	struct xkv_local_key *stale = xcalloc(XKV_MAX_LOCAL, sizeof(*stale));
	int nkeys = 0, nstale = 0, ret = 0;
	struct ifaddrs *all = NULL;
	struct binds b;

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
		bool v6;
		int i;

		if (!a->ifa_addr ||
		    (a->ifa_addr->sa_family != AF_INET && a->ifa_addr->sa_family != AF_INET6))
			continue;
		i = index_of(ifindexes, n, ifindex_of(a->ifa_name));
		if (i < 0 || !has_mac[i])
			continue;
		memset(&k, 0, sizeof(k));
		k.ifindex = (uint32_t)ifindexes[i];
		v6 = a->ifa_addr->sa_family == AF_INET6;
		if (v6)
			memcpy(k.addr, &((const struct sockaddr_in6 *)a->ifa_addr)->sin6_addr, 16);
		else
			map_v4(k.addr, &((const struct sockaddr_in *)a->ifa_addr)->sin_addr);
		if (!bound(&b, k.addr, v6) || wanted(keys, nkeys, &k))
			continue;
		if (nkeys == XKV_MAX_LOCAL) {
			log_warning("fastpath: more than %d local addresses; the kernel answers "
				    "only the first",
				    XKV_MAX_LOCAL);
			break;
		}
		keys[nkeys++] = k;
		if (bpf_map_update_elem(map_fd, &k, &ifs[i], BPF_ANY) < 0) {
			ret = -errno;
			log_warning("fastpath: cannot fill kv_local: %s", strerror(errno));
		}
	}
	/* Last, what is no longer there (collected first: deleting while
	 * walking would restart the walk). */
	for (int more = bpf_map_get_next_key(map_fd, NULL, &next) == 0; more;
	     more = bpf_map_get_next_key(map_fd, &k, &next) == 0) {
		k = next;
		if (!wanted(keys, nkeys, &k) && nstale < XKV_MAX_LOCAL)
			stale[nstale++] = k;
	}
	for (int i = 0; i < nstale; i++)
		bpf_map_delete_elem(map_fd, &stale[i]);
out:
	pthread_mutex_unlock(&refresh_lock);
	if (all)
		freeifaddrs(all);
	xfree(stale);
	xfree(keys);
	xfree(has_mac);
	xfree(ifs);
	return ret;
}
