// SPDX-License-Identifier: BSD-3-Clause
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include <linux/types.h>
#include <openssl/evp.h>

#include "access.h"
#include "acl_users.h"
#include "config.h"
#include "fastpath.h"
#include "log.h"
#include "xkv_abi.h"

/* The rule in force; written by access_update() only (under update_lock). */
static struct {
	bool required;	/* requirepass is set */
	uint64_t token; /* what it requires; 0 matches nothing */
} rule;

int access_derive_token(const char *password, size_t len, uint64_t *token)
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
	memcpy(token, md, sizeof(*token));
	return 0;
}

void access_update(void)
{
	static pthread_mutex_t update_lock = PTHREAD_MUTEX_INITIALIZER;
	const char *pass;
	uint64_t token = 0;
	bool required, loopback_only;

	pthread_mutex_lock(&update_lock);
	pass = __atomic_load_n(&config.requirepass, __ATOMIC_ACQUIRE);
	/* As over TCP: a password is needed when the default user has one (from
	 * requirepass or ACL SETUSER) or is off. The token is fastpath-token,
	 * else requirepass's; a password set only by ACL leaves none (0 never
	 * passes): UDP then says NOAUTH and the client asks over TCP. */
	required = pass[0] != '\0' || __atomic_load_n(&acl_default_needs_auth, __ATOMIC_ACQUIRE);
	if (required && config.fastpath_token) {
		token = (uint64_t)config.fastpath_token;
	} else if (required && pass[0] && access_derive_token(pass, strlen(pass), &token) < 0) {
		/* No token can match: UDP says NOAUTH, TCP still works. */
		log_warning("cannot derive the UDP token from requirepass: UDP GETs get NOAUTH");
		token = 0;
	}
	loopback_only = !required && __atomic_load_n(&config.protected_mode, __ATOMIC_RELAXED);
	/* The token before the flag that makes it count: a reader that sees
	 * required sees this token or a later one, and 0 never passes. */
	__atomic_store_n(&rule.token, required ? token : 0, __ATOMIC_RELEASE);
	__atomic_store_n(&rule.required, required, __ATOMIC_RELEASE);
	/* The daemon's protected mode is worker_protected_refuses(), which
	 * reads the configuration itself. */
	fastpath_set_access(required, required ? token : 0, loopback_only,
			    acl_default_udp() != ACL_UDP_OPEN);
	pthread_mutex_unlock(&update_lock);
}

bool access_udp_token_ok(uint64_t token)
{
	if (!__atomic_load_n(&rule.required, __ATOMIC_ACQUIRE))
		return true;
	return token && token == __atomic_load_n(&rule.token, __ATOMIC_ACQUIRE);
}
