// SPDX-License-Identifier: BSD-3-Clause
/*
 * xkvd: start-up and shutdown. `xkvd [config-file] [--directive value ...]`,
 * the same command line as redis-server.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "access.h"
#include "acl_users.h"
#include "aof.h"
#include "blocking.h"
#include "commands.h"
#include "cluster.h"
#include "cluster_ctl.h"
#include "config.h"
#include "fastpath.h"
#include "log.h"
#include "mem.h"
#include "multi.h"
#include "notify.h"
#include "proplog.h"
#include "pubsub.h"
#include "repl.h"
#include "rdbfile.h"
#include "store.h"
#include "tracking.h"
#include "util.h"
#include "worker.h"

#define XKV_VERSION "0.1.0"

static void usage(void)
{
	fprintf(stderr, "Usage: xkvd [/path/to/xkv.conf] [--directive value ...]\n"
			"       xkvd --version\n"
			"       xkvd --config-doc   (the directives, as docs/configuration.md)\n"
			"Directives use Redis's names (port, bind, requirepass, ...) plus\n"
			"threads N and io-engine auto|io_uring|epoll.\n");
}

static void make_run_id(void)
{
	static const char hex[] = "0123456789abcdef";
	FILE *f = fopen("/dev/urandom", "r");
	unsigned char raw[20] = { 0 };

	if (!f || fread(raw, 1, sizeof(raw), f) != sizeof(raw))
		for (size_t i = 0; i < sizeof(raw); i++)
			raw[i] = (unsigned char)(now_us() >> (i % 8));
	if (f)
		fclose(f);
	for (size_t i = 0; i < sizeof(raw); i++) {
		server.run_id[2 * i] = hex[raw[i] >> 4];
		server.run_id[2 * i + 1] = hex[raw[i] & 15];
	}
}

static int write_pidfile(void)
{
	FILE *f;

	if (!config.pidfile[0])
		return 0;
	f = fopen(config.pidfile, "w");
	if (!f) {
		log_warning("Failed to write PID file %s: %s", config.pidfile, strerror(errno));
		return -1;
	}
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	const char *file = NULL;
	int first_opt = 1, ret;

	if (argc > 1 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-v"))) {
		printf("xkvd v=%s malloc=%s\n", XKV_VERSION, mem_allocator());
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--config-doc")) {
		config_init();
		config_doc(stdout);
		config_free();
		return 0;
	}
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage();
		return 0;
	}
	if (argc > 1 && strncmp(argv[1], "--", 2) != 0) {
		file = argv[1];
		first_opt = 2;
	}
	config_init();
	if (config_load(file, argc - first_opt, argv + first_opt) < 0)
		return 1;
	if (log_open(config.logfile) < 0) {
		fprintf(stderr, "Can't open the log file: %s\n", strerror(errno));
		return 1;
	}
	log_set_level((int)config.loglevel);
	if (readlink("/proc/self/exe", server.executable, sizeof(server.executable) - 1) < 0)
		server.executable[0] = '\0';
	server.start_ms = now_ms();
	make_run_id();
	log_notice("xkv %s starting, pid=%d, malloc=%s", XKV_VERSION, (int)getpid(),
		   mem_allocator());
	if (!file)
		log_warning("No config file specified, using the default config.");

	commands_init();
	acl_users_init();
	/* The UDP rule follows the default user's ACL (access.h). */
	acl_on_default_change(access_update);
	store_init((int)config.databases);
	/* The store's change hooks, in the order they run (store.h). */
	multi_init();
	store_hook_set(STORE_HOOK_WATCH, multi_on_change);
	store_hook_set(STORE_HOOK_BLOCKING, blocking_on_change);
	store_hook_set(STORE_HOOK_FASTPATH, fastpath_on_change);
	store_hook_set(STORE_HOOK_NOTIFY, notify_on_change);
	store_hook_set(STORE_HOOK_TRACKING, tracking_on_change);
	if (proplog_start_from_env() < 0 || repl_init() < 0 || cluster_init() < 0)
		return 1;
	if (cluster_enabled()) {
		cluster_lock();
		cluster_add_slot_listener(pubsub_slot_changed);
		cluster_unlock();
	}
	/* What an empty server holds (INFO's used_memory_startup), before the
	 * data is loaded. */
	mem_mark_startup();
	/* Before any worker runs: the keys are there for the first command
	 * (from the AOF with appendonly yes, else from the RDB file). */
	if (aof_start_up() < 0)
		return 1;
	if (repl_replica_start_up() < 0)
		return 1;
	if (write_pidfile() < 0)
		return 1;
	access_update();
	/* nodes.conf and the bus, once the data is loaded. */
	if (cluster_bus_start() < 0)
		return 1;
	fastpath_start();
	ret = server_run();
	cluster_bus_stop();
	rdbfile_shutdown();
	aof_stop();
	fastpath_stop();
	if (config.pidfile[0])
		unlink(config.pidfile);
	proplog_stop();
	log_notice("xkv is now ready to exit, bye bye...");
	store_destroy();
	config_free();
	return ret < 0 ? 1 : 0;
}
