// SPDX-License-Identifier: BSD-3-Clause
#include <errno.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "loader.h"
#include "log.h"
#include "xkv_abi.h"
#include "xkv_xdp.skel.h"

/*
 * The verifier's reason for refusing the program: the last line of its log
 * before the statistics, so the one log line of a refusal says why (a kernel
 * older than the program, such as 6.1, fails there first). Written by
 * libbpf_log during loader_load on the main thread.
 */
static char verifier_reason[160];

static void note_verifier_reason(const char *log)
{
	const char *begin = strstr(log, "BEGIN PROG LOAD LOG"), *p, *nl;

	if (!begin)
		return;
	for (p = strchr(begin, '\n'); p && *++p; p = nl) {
		size_t n;

		nl = strchr(p, '\n');
		n = nl ? (size_t)(nl - p) : strlen(p);
		if (!n || !strncmp(p, "processed ", 10) || !strncmp(p, "verification time", 17) ||
		    !strncmp(p, "stack depth", 11) || !strncmp(p, "-- END", 6) ||
		    !strncmp(p, "libbpf:", 7))
			continue;
		if (!strncmp(p, "-- ", 3))
			break;
		snprintf(verifier_reason, sizeof(verifier_reason), "%.*s", (int)n, p);
		if (!nl)
			break;
	}
}

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[512], *whole = NULL;
	va_list ap2;

	/* libbpf's debug output is the verifier log: keep it for loglevel debug. */
	va_copy(ap2, ap);
	vsnprintf(line, sizeof(line), fmt, ap);
	if (strstr(line, "BEGIN PROG LOAD LOG") && vasprintf(&whole, fmt, ap2) >= 0) {
		note_verifier_reason(whole);
		free(whole);
	}
	va_end(ap2);
	line[strcspn(line, "\n")] = '\0';
	if (line[0])
		log_msg(level == LIBBPF_WARN ? LOG_WARNING : LOG_DEBUG, "libbpf: %s", line);
	return 0;
}

int loader_load(struct loader *l, uint16_t port, uint32_t nslots, bool cluster_mode, char *why,
		size_t len)
{
	struct xkv_xdp *skel;
	int err;

	memset(l, 0, sizeof(*l));
	libbpf_set_print(libbpf_log);
	skel = xkv_xdp__open();
	if (!skel) {
		err = -errno;
		snprintf(why, len, "cannot open the BPF object: %s", strerror(-err));
		return err;
	}
	if (skel->rodata->xkv_abi_version != XKV_ABI_VERSION) {
		snprintf(why, len, "BPF object built for ABI %u, daemon for %u",
			 skel->rodata->xkv_abi_version, XKV_ABI_VERSION);
		xkv_xdp__destroy(skel);
		return -EINVAL;
	}
	skel->rodata->xkv_port = port;
	skel->rodata->xkv_cluster_mode = cluster_mode;
	/* Unpredictable, so nobody can choose keys that collide in kv_index; a
	 * failed getrandom() leaves 0, which only makes collisions guessable. */
	if (getrandom(&l->hash_seed, sizeof(l->hash_seed), GRND_NONBLOCK) !=
	    (ssize_t)sizeof(l->hash_seed))
		l->hash_seed = 0;
	skel->rodata->xkv_hash_seed = l->hash_seed;
	bpf_map__set_max_entries(skel->maps.kv_index, nslots);
	bpf_map__set_max_entries(skel->maps.kv_slots, nslots);
	verifier_reason[0] = '\0';
	err = xkv_xdp__load(skel);
	if (err) {
		snprintf(why, len, "the kernel refused the BPF program: %s%s%s%s", strerror(-err),
			 verifier_reason[0] ? " (verifier: " : "", verifier_reason,
			 verifier_reason[0] ? ")" : "");
		xkv_xdp__destroy(skel);
		return err;
	}
	l->skel = skel;
	l->nslots = nslots;
	l->slab_bytes = (size_t)nslots * sizeof(struct xkv_slot);
	l->slab = mmap(NULL, l->slab_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		       bpf_map__fd(skel->maps.kv_slots), 0);
	if (l->slab == MAP_FAILED) {
		err = -errno;
		snprintf(why, len, "cannot map the value slab: %s", strerror(-err));
		l->slab = NULL;
		loader_destroy(l);
		return err;
	}
	l->index_fd = bpf_map__fd(skel->maps.kv_index);
	l->stats_fd = bpf_map__fd(skel->maps.kv_stats);
	l->allow_fd = bpf_map__fd(skel->maps.kv_allow);
	l->local_fd = bpf_map__fd(skel->maps.kv_local);
	return 0;
}

static int attach_link(struct loader *l, int ifindex, __u32 flags)
{
	LIBBPF_OPTS(bpf_link_create_opts, opts, .flags = flags);

	return bpf_link_create(bpf_program__fd(l->skel->progs.xdp_get_fastpath), ifindex, BPF_XDP,
			       &opts);
}

int loader_attach(struct loader *l, const char *ifname, enum attach_mode mode, char *why,
		  size_t len)
{
	int ifindex = (int)if_nametoindex(ifname), fd = -1;
	__u32 prog_id = 0;
	bool native = false;

	if (!ifindex) {
		snprintf(why, len, "no interface %s", ifname);
		return -ENODEV;
	}
	if (l->nlinks == (int)(sizeof(l->links) / sizeof(l->links[0]))) {
		snprintf(why, len, "too many interfaces");
		return -E2BIG;
	}
	/* Another XDP program (a firewall, another xkvd) owns the interface:
	 * leave it alone. */
	if (bpf_xdp_query_id(ifindex, 0, &prog_id) == 0 && prog_id) {
		snprintf(why, len, "%s already has an XDP program (id %u); not replacing it",
			 ifname, prog_id);
		return -EBUSY;
	}
	if (mode != ATTACH_GENERIC) {
		fd = attach_link(l, ifindex, XDP_FLAGS_DRV_MODE);
		native = fd >= 0;
	}
	if (fd < 0 && mode != ATTACH_NATIVE)
		fd = attach_link(l, ifindex, XDP_FLAGS_SKB_MODE);
	if (fd < 0) {
		snprintf(why, len, "cannot attach to %s: %s", ifname, strerror(errno));
		return -errno;
	}
	l->links[l->nlinks].ifindex = ifindex;
	l->links[l->nlinks].link_fd = fd;
	l->links[l->nlinks].native = native;
	snprintf(l->links[l->nlinks].name, sizeof(l->links[0].name), "%s", ifname);
	l->nlinks++;
	return 0;
}

void loader_detach_all(struct loader *l)
{
	for (int i = 0; i < l->nlinks; i++)
		close(l->links[i].link_fd);
	l->nlinks = 0;
}

void loader_destroy(struct loader *l)
{
	loader_detach_all(l);
	if (l->slab)
		munmap(l->slab, l->slab_bytes);
	l->slab = NULL;
	if (l->skel)
		xkv_xdp__destroy(l->skel);
	l->skel = NULL;
}
