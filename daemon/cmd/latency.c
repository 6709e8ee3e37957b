// SPDX-License-Identifier: BSD-3-Clause
/* LATENCY DOCTOR / GRAPH / LATEST / HISTORY / RESET / HISTOGRAM / HELP (latency.c). */
#include "commands.h"
#include "latency.h"

void cmd_latency_doctor(struct client *c)
{
	latency_reply_doctor(c);
}

void cmd_latency_graph(struct client *c)
{
	latency_reply_graph(c, c->argv[2].p, c->argv[2].len);
}

void cmd_latency_latest(struct client *c)
{
	latency_reply_latest(c);
}

void cmd_latency_history(struct client *c)
{
	latency_reply_history(c, c->argv[2].p, c->argv[2].len);
}

void cmd_latency_reset(struct client *c)
{
	reply_int(c, latency_reset(c->argv + 2, c->argc - 2));
}

void cmd_latency_histogram(struct client *c)
{
	latency_reply_histogram(c, c->argv + 2, c->argc - 2);
}

void cmd_latency_help(struct client *c)
{
	static const char *const help[] = {
		"LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"DOCTOR",
		"    Return a human readable latency analysis report.",
		"GRAPH <event>",
		"    Return an ASCII latency graph for the <event> class.",
		"HISTORY <event>",
		"    Return time-latency samples for the <event> class.",
		"LATEST",
		"    Return the latest latency samples for all events.",
		"RESET [<event> ...]",
		"    Reset latency data of one or more <event> classes.",
		"    (default: reset all data for all event classes)",
		"HISTOGRAM [COMMAND ...]",
		"    Return a cumulative distribution of latencies in the format of a histogram "
		"for the specified command names.",
		"    If no commands are specified then all histograms are replied.",
		"HELP",
		"    Prints this help.",
		NULL,
	};

	reply_help(c, help);
}
