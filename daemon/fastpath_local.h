/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fastpath_local: fills the program's kv_local map, the destinations the
 * kernel may answer: for each attached interface, its own unicast addresses
 * that the daemon's bind addresses cover ("0.0.0.0" or "*": every IPv4
 * address, "::": every IPv6 one, else the address itself), each with the
 * interface's MAC and whether it is a loopback device. An interface without
 * a 6-byte hardware address, or an ifindex of XKV_MAX_IFINDEX or more, gets
 * no addresses: the kernel answers nothing there.
 *
 * Threads: called from fastpath.c (FASTPATH ATTACH/DETACH under its lock, and
 * worker 0's heartbeat once a second); serialized by this file's own lock.
 */
#ifndef XKV_FASTPATH_LOCAL_H
#define XKV_FASTPATH_LOCAL_H

/* Rewrites kv_local (map_fd), the array indexed by ifindex, for
 * ifindexes[0..n), and empties the entries of interfaces given last time and
 * not now. 0 or -errno. */
int fastpath_local_refresh(int map_fd, const int *ifindexes, int n);

#endif
