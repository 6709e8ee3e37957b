/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loader: the kernel side's lifecycle through its libbpf skeleton: open, set
 * the load-time knobs, size the maps, load, attach to interfaces through BPF
 * links (which die with the process: nothing is pinned), detach, destroy.
 *
 * Called from the main thread at start and exit, and from the worker running
 * FASTPATH ATTACH/DETACH under fastpath.c's lock.
 */
#ifndef XKV_LOADER_H
#define XKV_LOADER_H

#include <stdbool.h>
#include <stdint.h>

struct xkv_xdp;

struct loader {
	struct xkv_xdp *skel;
	void *slab; /* kv_slots mapped into this process */
	uint32_t nslots;
	size_t slab_bytes;
	uint64_t hash_seed; /* the program's xkv_hash_seed, for kv_index keys */
	int index_fd, stats_fd, allow_fd, local_fd;
	/* One link per attached interface. */
	struct {
		int ifindex;
		int link_fd;
		char name[16];
		bool native;
	} links[16];
	int nlinks;
};

enum attach_mode { ATTACH_AUTO, ATTACH_NATIVE, ATTACH_GENERIC };

/* Loads the program for UDP port `port` with `nslots` cache slots, checking
 * slot ownership if cluster_mode. 0 or -errno, with a message in why. */
int loader_load(struct loader *l, uint16_t port, uint32_t nslots, bool cluster_mode, char *why,
		size_t len);
/* Attaches to one interface by name; never replaces a program already there.
 * 0 or -errno, with a message in why. */
int loader_attach(struct loader *l, const char *ifname, enum attach_mode mode, char *why,
		  size_t len);
void loader_detach_all(struct loader *l);
void loader_destroy(struct loader *l);

#endif
