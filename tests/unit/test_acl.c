// SPDX-License-Identifier: GPL-2.0-only
/*
 * The ACL rule parser and matchers (acl.h) and SHA-256 (sha256.h). The
 * expected descriptions and errors were checked against Redis 8.8's ACL
 * SETUSER / ACL LIST.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "acl.h"
#include "commands.h"
#include "sha256.h"

#include "kselftest_harness.h"

static int set(struct acl_user *u, const char *op)
{
	return acl_user_set(u, op, strlen(op), false);
}

static const char *describe(const struct acl_user *u)
{
	static char buf[1024];

	acl_user_describe(u, buf, sizeof(buf));
	return buf;
}

TEST(sha256_known_vectors)
{
	char hex[ACL_HASH_LEN + 1];
	char million[1000];

	sha256_hex("", 0, hex);
	ASSERT_STREQ("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", hex);
	sha256_hex("abc", 3, hex);
	ASSERT_STREQ("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", hex);
	/* 56 bytes: the padding needs a second block. */
	sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, hex);
	ASSERT_STREQ("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", hex);
	memset(million, 'a', sizeof(million));
	sha256_hex(million, sizeof(million), hex);
	ASSERT_STREQ("41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3", hex);
}

TEST(new_user_and_passwords)
{
	struct acl_user *u = acl_user_new("bob", 3, false);

	ASSERT_STREQ("off sanitize-payload resetchannels -@all", describe(u));
	ASSERT_FALSE(acl_user_check_password(u, "x", 1));
	ASSERT_EQ(0, set(u, "on"));
	ASSERT_EQ(0, set(u, ">foo"));
	ASSERT_EQ(0, set(u, ">foo")); /* not added twice */
	ASSERT_EQ(1, u->npass);
	ASSERT_TRUE(acl_user_check_password(u, "foo", 3));
	ASSERT_FALSE(acl_user_check_password(u, "bar", 3));
	ASSERT_STREQ("on sanitize-payload "
		     "#2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae "
		     "resetchannels -@all",
		     describe(u));
	ASSERT_EQ(-ENODEV, set(u, "<bar"));
	ASSERT_EQ(-EBADMSG, set(u, "#abc"));
	ASSERT_EQ(-EBADMSG,
		  set(u, "#2C26B46B68FFC68FF99B453C1D30413413422D706483BFA0F98A5E886266E7AE"));
	ASSERT_EQ(0, set(u, "!2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"));
	ASSERT_EQ(0, u->npass);
	ASSERT_EQ(0, set(u, "nopass"));
	ASSERT_TRUE(acl_user_check_password(u, "anything", 8));
	ASSERT_EQ(0, set(u, ">x")); /* a password clears nopass */
	ASSERT_FALSE(acl_user_check_password(u, "anything", 8));
	ASSERT_EQ(0, set(u, "resetpass"));
	ASSERT_FALSE(acl_user_check_password(u, "x", 1));
	ASSERT_STREQ("Syntax error", acl_strerror(-EINVAL));
	acl_user_free(u);
}

TEST(key_patterns_and_permissions)
{
	struct acl_user *u = acl_user_new("k", 1, false);

	ASSERT_FALSE(acl_user_key_allowed(u, "a", 1, ACL_PERM_READ));
	ASSERT_EQ(0, set(u, "~obj:*"));
	ASSERT_EQ(0, set(u, "%R~read*"));
	ASSERT_EQ(0, set(u, "%w~write*"));
	ASSERT_EQ(0, set(u, "%RW~both"));
	ASSERT_EQ(-EINVAL, set(u, "%RR~x"));
	ASSERT_EQ(-EINVAL, set(u, "%~x"));
	ASSERT_EQ(-EINVAL, set(u, "%X~x"));
	ASSERT_EQ(-EINVAL, set(u, "~a b"));
	ASSERT_STREQ("off sanitize-payload ~obj:* %R~read* %W~write* ~both resetchannels -@all",
		     describe(u));
	ASSERT_TRUE(acl_user_key_allowed(u, "obj:1", 5, ACL_PERM_ALL));
	ASSERT_TRUE(acl_user_key_allowed(u, "read1", 5, ACL_PERM_READ));
	ASSERT_FALSE(acl_user_key_allowed(u, "read1", 5, ACL_PERM_WRITE));
	ASSERT_TRUE(acl_user_key_allowed(u, "write1", 6, ACL_PERM_WRITE));
	ASSERT_FALSE(acl_user_key_allowed(u, "write1", 6, ACL_PERM_ALL));
	ASSERT_EQ(0, set(u, "%W~read*")); /* widens the same pattern */
	ASSERT_TRUE(acl_user_key_allowed(u, "read1", 5, ACL_PERM_ALL));
	ASSERT_EQ(0, set(u, "allkeys"));
	ASSERT_EQ(-EEXIST, set(u, "~more"));
	ASSERT_TRUE(acl_user_key_allowed(u, "zzz", 3, ACL_PERM_ALL));
	ASSERT_EQ(0, set(u, "resetkeys"));
	ASSERT_FALSE(acl_user_key_allowed(u, "obj:1", 5, ACL_PERM_READ));
	acl_user_free(u);
}

TEST(channels_and_selectors)
{
	struct acl_user *u = acl_user_new("c", 1, false);

	ASSERT_EQ(0, set(u, "&news.*"));
	ASSERT_TRUE(acl_user_channel_allowed(u, "news.it", 7, false));
	ASSERT_FALSE(acl_user_channel_allowed(u, "news.*x", 7, true));
	ASSERT_TRUE(acl_user_channel_allowed(u, "news.*", 6, true));
	ASSERT_EQ(0, set(u, "&*"));
	ASSERT_EQ(-EISDIR, set(u, "&x"));
	ASSERT_EQ(0, set(u, "resetchannels"));
	ASSERT_FALSE(acl_user_channel_allowed(u, "news.it", 7, false));

	ASSERT_EQ(0, set(u, "(~sel* &ch)"));
	ASSERT_EQ(-EINVAL, set(u, "(~ok %Q~bad)"));
	ASSERT_EQ(2, u->nsel);
	ASSERT_TRUE(acl_user_key_allowed(u, "sel1", 4, ACL_PERM_ALL));
	ASSERT_TRUE(acl_user_channel_allowed(u, "ch", 2, false));
	ASSERT_STREQ("off sanitize-payload resetchannels -@all (~sel* resetchannels &ch -@all)",
		     describe(u));
	ASSERT_EQ(0, set(u, "clearselectors"));
	ASSERT_FALSE(acl_user_key_allowed(u, "sel1", 4, ACL_PERM_READ));

	ASSERT_EQ(0, set(u, "on"));
	ASSERT_EQ(0, set(u, ">p"));
	ASSERT_EQ(0, acl_user_set(u, "reset", 5, true));
	ASSERT_STREQ("off sanitize-payload &* -@all", describe(u));
	acl_user_free(u);
}

static int check(const struct acl_user *u, int argc, const char **words, int *pos)
{
	struct arg argv[8];

	for (int i = 0; i < argc; i++)
		argv[i] = (struct arg){ (char *)words[i], strlen(words[i]) };
	return acl_user_check_command(u, command_lookup_argv(argc, argv), argc, argv, pos);
}

/* Descriptions and errors as Redis 8.8's ACL SETUSER and ACL LIST gave them. */
TEST(command_rules)
{
	struct acl_user *u;

	commands_init();
	u = acl_user_new("t", 1, false);
	ASSERT_EQ(0, set(u, "-@all"));
	ASSERT_EQ(0, set(u, "+@all"));
	ASSERT_EQ(0, set(u, "-@dangerous"));
	ASSERT_EQ(0, set(u, "+select|0"));
	ASSERT_EQ(0, set(u, "+debug|digest"));
	ASSERT_EQ(0, set(u, "-config"));
	ASSERT_EQ(0, set(u, "+config|get"));
	ASSERT_EQ(0, set(u, "+client"));
	ASSERT_EQ(0, set(u, "-client|kill"));
	ASSERT_EQ(0, set(u, "-@slow"));
	ASSERT_EQ(0, set(u, "+@SLOW"));
	ASSERT_STREQ("off sanitize-payload resetchannels +@all -@dangerous +select|0 +debug|digest "
		     "-config +config|get +client -client|kill +@slow",
		     describe(u));
	ASSERT_EQ(-ECHILD, set(u, "+config|get|x"));
	ASSERT_EQ(-EINVAL, set(u, "+get|"));
	ASSERT_EQ(-ENOENT, set(u, "-get|x"));
	ASSERT_EQ(-ENOENT, set(u, "+nosuch"));
	ASSERT_EQ(-ENOENT, set(u, "+@nosuch"));
	ASSERT_STREQ("Allowing first-arg of a subcommand is not supported", acl_strerror(-ECHILD));
	acl_user_free(u);

	u = acl_user_new("t2", 2, false);
	ASSERT_EQ(0, set(u, "+CONFIG|GET"));
	ASSERT_EQ(0, set(u, "+select|1"));
	ASSERT_EQ(0, set(u, "+select|1"));
	ASSERT_EQ(0, set(u, "+SELECT|2"));
	ASSERT_STREQ("off sanitize-payload resetchannels -@all +config|get +select|1 +select|2",
		     describe(u));
	ASSERT_EQ(0, set(u, "-select"));
	ASSERT_STREQ("off sanitize-payload resetchannels -@all +config|get -select", describe(u));
	acl_user_free(u);

	u = acl_user_new("t3", 2, false);
	ASSERT_EQ(0, set(u, "-config"));
	ASSERT_EQ(0, set(u, "+config|get"));
	ASSERT_EQ(0, set(u, "+config"));
	ASSERT_EQ(0, set(u, "-config|set"));
	ASSERT_EQ(0, set(u, "+CONFIG|GET"));
	ASSERT_STREQ("off sanitize-payload resetchannels -@all +config -config|set +config|get",
		     describe(u));
	acl_user_free(u);
}

TEST(command_checks)
{
	struct acl_user *u;
	int pos;

	commands_init();
	u = acl_user_new("c", 1, false);
	ASSERT_EQ(0, set(u, "+get"));
	ASSERT_EQ(0, set(u, "+set"));
	ASSERT_EQ(0, set(u, "%R~r*"));
	ASSERT_EQ(0, set(u, "+select|0"));
	ASSERT_EQ(0, set(u, "+publish"));
	ASSERT_EQ(0, set(u, "&news"));
	ASSERT_EQ(ACL_OK, check(u, 2, (const char *[]){ "get", "r1" }, &pos));
	ASSERT_EQ(ACL_DENIED_KEY, check(u, 3, (const char *[]){ "set", "r1", "v" }, &pos));
	ASSERT_EQ(1, pos);
	ASSERT_EQ(ACL_DENIED_CMD, check(u, 2, (const char *[]){ "del", "r1" }, &pos));
	ASSERT_EQ(0, pos);
	ASSERT_EQ(ACL_OK, check(u, 2, (const char *[]){ "select", "0" }, &pos));
	ASSERT_EQ(ACL_DENIED_CMD, check(u, 2, (const char *[]){ "select", "1" }, &pos));
	ASSERT_EQ(ACL_OK, check(u, 3, (const char *[]){ "publish", "news", "x" }, &pos));
	ASSERT_EQ(ACL_DENIED_CHANNEL,
		  check(u, 3, (const char *[]){ "publish", "other", "x" }, &pos));
	ASSERT_EQ(1, pos);
	/* AUTH is no_auth: never refused by the command bit. */
	ASSERT_EQ(ACL_OK, check(u, 2, (const char *[]){ "auth", "x" }, &pos));
	/* A second selector that writes w*. */
	ASSERT_EQ(0, set(u, "(+set ~w*)"));
	ASSERT_EQ(ACL_OK, check(u, 3, (const char *[]){ "set", "w1", "v" }, &pos));
	ASSERT_EQ(ACL_DENIED_KEY, check(u, 3, (const char *[]){ "set", "x", "v" }, &pos));
	ASSERT_FALSE(u->all);
	ASSERT_EQ(0, set(u, "reset"));
	ASSERT_EQ(0, set(u, "allkeys"));
	ASSERT_EQ(0, set(u, "allchannels"));
	ASSERT_EQ(0, set(u, "allcommands"));
	ASSERT_TRUE(u->all);
	ASSERT_STREQ("off sanitize-payload ~* &* +@all", describe(u));
	acl_user_free(u);
}

TEST_HARNESS_MAIN
