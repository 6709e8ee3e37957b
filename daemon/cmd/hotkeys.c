// SPDX-License-Identifier: BSD-3-Clause
/* HOTKEYS START / STOP / GET / RESET / HELP (Redis 8.6+), over hotkeys.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster.h"
#include "commands.h"
#include "hotkeys.h"
#include "mem.h"
#include "util.h"

/* An integer argument in [min, max], else msg (Redis's
 * getRangeLongFromObjectOrReply with a message). */
static bool arg_range(struct client *c, int i, long long min, long long max, const char *msg,
		      long long *v)
{
	if (!str_to_ll(c->argv[i].p, c->argv[i].len, v) || *v < min || *v > max) {
		reply_error(c, msg);
		return false;
	}
	return true;
}

static bool is(const struct client *c, int i, const char *word)
{
	return c->argv[i].len == strlen(word) && !strncasecmp(c->argv[i].p, word, c->argv[i].len);
}

static int by_slot(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

/* SLOTS count slot...: the slots, checked, sorted; false once it replied. */
static bool parse_slots(struct client *c, int j, struct hotkeys_params *p, uint16_t **out)
{
	long long n, v;
	uint16_t *slots;

	if (!arg_range(c, j + 1, 1, CLUSTER_SLOTS, "SLOTS count must be between 1 and 16384", &n))
		return false;
	if (j + 1 + n >= c->argc) {
		reply_error(c, "not enough slot numbers provided");
		return false;
	}
	slots = xmalloc((size_t)n * sizeof(*slots));
	for (int i = 0; i < n; i++) {
		if (!str_to_ll(c->argv[j + 2 + i].p, c->argv[j + 2 + i].len, &v) || v < 0 ||
		    v >= CLUSTER_SLOTS) {
			reply_error(c, "Invalid or out of range slot");
			goto fail;
		}
		if (!cluster_owns_slot((uint16_t)v)) {
			reply_errorf(c, "slot %lld not handled by this node", v);
			goto fail;
		}
		for (int k = 0; k < i; k++)
			if (slots[k] == v) {
				reply_error(c, "duplicate slot number");
				goto fail;
			}
		slots[i] = (uint16_t)v;
	}
	qsort(slots, (size_t)n, sizeof(*slots), by_slot);
	p->slots = slots;
	p->nslots = (int)n;
	*out = slots;
	return true;
fail:
	xfree(slots);
	return false;
}

void cmd_hotkeys_start(struct client *c)
{
	struct hotkeys_params p = { .count = 10, .sample = 1 };
	uint16_t *slots = NULL;
	long long n, v;
	int j = 4, parsed = 0;

	/* The session check comes first, as in Redis. */
	if (hotkeys_active()) {
		reply_error(c, "hotkey tracking session already in progress");
		return;
	}
	if (c->argc < 4 || !is(c, 2, "METRICS")) {
		reply_error(c, "METRICS parameter is required");
		return;
	}
	if (!arg_range(c, 3, 1, 2, "METRICS count must be > 0 and <= 2", &n))
		return;
	/* n words name the metrics; unknown ones count but track nothing. */
	for (; j < c->argc && parsed < n; j++, parsed++) {
		unsigned m = is(c, j, "CPU") ? HOTKEYS_CPU : is(c, j, "NET") ? HOTKEYS_NET : 0;

		if (m & p.metrics) {
			reply_errorf(c, "METRICS %s defined more than once!",
				     m == HOTKEYS_CPU ? "CPU" : "NET");
			return;
		}
		p.metrics |= m;
	}
	if (parsed != n) {
		reply_error(c, "METRICS count does not match number of metric types provided");
		return;
	}
	if (!p.metrics) {
		reply_error(c, "METRICS no valid metrics passed. Supported: CPU|NET");
		return;
	}
	while (j < c->argc) {
		bool more = j + 1 < c->argc;

		if (more && is(c, j, "COUNT")) {
			if (!arg_range(c, j + 1, 1, 64, "COUNT must be between 1 and 64", &v))
				goto out;
			p.count = (int)v;
			j += 2;
		} else if (more && is(c, j, "DURATION")) {
			if (!arg_range(c, j + 1, 1, 1000000,
				       "DURATION must be between 1 and 1000000", &v))
				goto out;
			p.duration_ms = v * 1000;
			j += 2;
		} else if (more && is(c, j, "SAMPLE")) {
			if (!arg_range(c, j + 1, 1, 2147483647, "SAMPLE ratio must be positive",
				       &v))
				goto out;
			p.sample = (int)v;
			j += 2;
		} else if (more && is(c, j, "SLOTS")) {
			if (!cluster_enabled()) {
				reply_error(c,
					    "SLOTS parameter cannot be used in non-cluster mode");
				goto out;
			}
			if (slots) {
				reply_error(c, "SLOTS parameter already specified");
				goto out;
			}
			if (!parse_slots(c, j, &p, &slots))
				goto out;
			j += 2 + p.nslots;
		} else {
			reply_error(c, ERR_SYNTAX);
			goto out;
		}
	}
	if (hotkeys_start(&p) == -EBUSY)
		reply_error(c, "hotkey tracking session already in progress");
	else
		reply_ok(c);
out:
	xfree(slots);
}

void cmd_hotkeys_stop(struct client *c)
{
	if (hotkeys_stop() < 0)
		reply_null(c);
	else
		reply_ok(c);
}

void cmd_hotkeys_reset(struct client *c)
{
	if (hotkeys_reset() < 0)
		reply_error(c, "hotkey tracking session in progress, stop tracking first");
	else
		reply_ok(c);
}

static void field_int(struct client *c, const char *name, long long v)
{
	reply_bulk_cstr(c, name);
	reply_int(c, v);
}

/* Slot ranges as arrays: [slot] alone, [first, last] for a run. */
static void reply_slot_ranges(struct client *c, const uint8_t *slots)
{
	long n = 0;

	for (int pass = 0; pass < 2; pass++) {
		if (pass)
			reply_array(c, n);
		for (int s = 0; s < CLUSTER_SLOTS; s++) {
			int e = s;

			if (slots ? !slots[s] : !cluster_owns_slot((uint16_t)s))
				continue;
			while (e + 1 < CLUSTER_SLOTS &&
			       (slots ? slots[e + 1] : cluster_owns_slot((uint16_t)(e + 1))))
				e++;
			if (pass) {
				reply_array(c, s == e ? 1 : 2);
				reply_int(c, s);
				if (s != e)
					reply_int(c, e);
			} else {
				n++;
			}
			s = e;
		}
	}
}

static void reply_top(struct client *c, const char *name, const struct topk_entry *e, int n)
{
	reply_bulk_cstr(c, name);
	reply_array(c, 2L * n);
	for (int i = 0; i < n; i++) {
		reply_bulk(c, e[i].key, e[i].len);
		reply_int(c, (long long)e[i].count);
	}
}

/* An array of one map (so a cluster client can merge the nodes' maps), with
 * Redis 8.8's fields in its order; the conditional ones only when they
 * apply. */
void cmd_hotkeys_get(struct client *c)
{
	struct hotkeys_report r;
	bool slots = false, sampling;
	long len = 7;

	if (hotkeys_snapshot(&r) < 0) {
		reply_null(c);
		return;
	}
	slots = r.slots != NULL;
	sampling = r.sample > 1;
	len += 2 * (sampling && slots) + 2 * slots;
	len += (r.metrics & HOTKEYS_CPU) ? 3 : 0;
	len += (r.metrics & HOTKEYS_NET) ? 2 : 0;
	reply_array(c, 1);
	reply_map(c, len);
	field_int(c, "tracking-active", r.active);
	field_int(c, "sample-ratio", r.sample);
	reply_bulk_cstr(c, "selected-slots");
	if (!cluster_enabled()) {
		reply_array(c, 1);
		reply_array(c, 2);
		reply_int(c, 0);
		reply_int(c, CLUSTER_SLOTS - 1);
	} else {
		reply_slot_ranges(c, r.slots);
	}
	if (sampling && slots)
		field_int(c, "sampled-commands-selected-slots-us", (long long)r.us_sampled);
	if (slots)
		field_int(c, "all-commands-selected-slots-us", (long long)r.us_selected);
	field_int(c, "all-commands-all-slots-us", (long long)r.us_all);
	if (sampling && slots)
		field_int(c, "net-bytes-sampled-commands-selected-slots",
			  (long long)r.bytes_sampled);
	if (slots)
		field_int(c, "net-bytes-all-commands-selected-slots", (long long)r.bytes_selected);
	field_int(c, "net-bytes-all-commands-all-slots", (long long)r.bytes_all);
	field_int(c, "collection-start-time-unix-ms", r.start_ms);
	field_int(c, "collection-duration-ms", r.duration_ms);
	if (r.metrics & HOTKEYS_CPU) {
		field_int(c, "total-cpu-time-user-ms", r.cpu_user_ms);
		field_int(c, "total-cpu-time-sys-ms", r.cpu_sys_ms);
	}
	if (r.metrics & HOTKEYS_NET)
		field_int(c, "total-net-bytes", (long long)r.net_total);
	if (r.metrics & HOTKEYS_CPU)
		reply_top(c, "by-cpu-time-us", r.cpu, r.ncpu);
	if (r.metrics & HOTKEYS_NET)
		reply_top(c, "by-net-bytes", r.net, r.nnet);
	hotkeys_report_free(&r);
}

void cmd_hotkeys_help(struct client *c)
{
	static const char *const help[] = {
		"HOTKEYS <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"START <METRICS count [CPU] [NET]> [COUNT k] [DURATION duration] [SAMPLE ratio] "
		"[SLOTS count slot...]",
		"    Starts hotkeys tracking with specified metrics.",
		"    * METRICS count [CPU] [NET]",
		"        Specify count of metrics and choose amongst:",
		"        - CPU: Track hotkeys by CPU time percentage",
		"        - NET: Track hotkeys by network bytes percentage",
		"    * COUNT k",
		"        Specifies the value of K for the top-K hotkeys tracking. Default: 10",
		"    * DURATION duration",
		"        Specifies tracking duration in seconds. 0 means tracking will continue "
		"until manually stopped. Default: 0",
		"    * SAMPLE ratio",
		"        Keys are tracked with probability 1/ratio. Default: 1 (tracks every key)",
		"    * SLOTS count slot...",
		"        Specify which slots to track keys from. Only available in cluster mode. "
		"Default: empty (track all slots)",
		"STOP",
		"    Stop hotkeys tracking. Results are still available via GET",
		"GET",
		"    Get results from hotkeys tracking.",
		"RESET",
		"    Reset memory used for hotkeys tracking. Tracking must have been stopped.",
		"    Results will no longer be available after this command.",
		"HELP",
		"    Print this help.",
		NULL,
	};

	reply_help(c, help);
}
