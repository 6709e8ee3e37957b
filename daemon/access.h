/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * access: who the server answers over UDP, the rule the daemon's UDP socket
 * and the kernel fast path both follow (docs/udp-protocol.md). With
 * requirepass set, a datagram must carry the server's token: fastpath-token
 * when it is set, else one derived from the password (XKV_TOKEN_CONTEXT in
 * shared/xkv_abi.h); 0 never passes. With protected mode and no password,
 * only 127.0.0.1 and ::1 are answered. A datagram is the default user's
 * (the token stands for its password): when that user's ACL is anything
 * less than every command on every key, the kernel answers nothing and the
 * daemon checks each request (acl_users.h, acl_default_udp).
 *
 * Threads: access_update() runs on the main thread at start and on the
 * worker running a CONFIG SET of requirepass, fastpath-token or
 * protected-mode, and after any change of the default user (ACL SETUSER,
 * ACL LOAD), before that command is answered; it publishes the rule
 * with release stores, and readers on any worker load it with acquire.
 */
#ifndef XKV_ACCESS_H
#define XKV_ACCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Recomputes the rule from the configuration and hands it to the kernel
 * (fastpath_set_access). */
void access_update(void);
/* Does a UDP header's token field (8 raw bytes, as a host-order word) prove
 * the password, or is none required? */
bool access_udp_token_ok(uint64_t token);
/* The token derived from a password: the first 8 bytes of
 * SHA-256(XKV_TOKEN_CONTEXT password) in *token's memory. 0 or -EIO. */
int access_derive_token(const char *password, size_t len, uint64_t *token);

#endif
