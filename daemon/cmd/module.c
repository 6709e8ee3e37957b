// SPDX-License-Identifier: BSD-3-Clause
/*
 * MODULE LIST / LOAD / LOADEX / UNLOAD / HELP. xkvd has no module API: the
 * list is empty, a load fails as a failed load does in Redis (its reply, and
 * the reason in the log), and no name can be unloaded. LOAD, LOADEX and
 * UNLOAD are refused first unless enable-module-command allows them (the
 * dispatcher's check, as Redis's CMD_PROTECTED).
 */
#include "commands.h"
#include "config.h"
#include "log.h"

bool module_allowed(const struct client *c, const struct command *cmd)
{
	if (cmd->fn != cmd_module_load && cmd->fn != cmd_module_loadex &&
	    cmd->fn != cmd_module_unload)
		return true;
	return protected_allowed(__atomic_load_n(&config.enable_module_command, __ATOMIC_RELAXED),
				 c);
}

void cmd_module_list(struct client *c)
{
	reply_array(c, 0);
}

static void load_failed(struct client *c)
{
	log_warning("Module %s failed to load: this server does not load modules", c->argv[2].p);
	reply_error(c, "Error loading the extension. Please check the server logs.");
}

void cmd_module_load(struct client *c)
{
	load_failed(c);
}

void cmd_module_loadex(struct client *c)
{
	load_failed(c);
}

void cmd_module_unload(struct client *c)
{
	log_warning("Error unloading module %s: no such module with that name", c->argv[2].p);
	reply_error(c, "Error unloading module: no such module with that name");
}

void cmd_module_help(struct client *c)
{
	static const char *const help[] = {
		"MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"LIST",
		"    Return a list of loaded modules.",
		"LOAD <path> [<arg> ...]",
		"    Load a module library from <path>, passing to it any optional arguments.",
		"LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
		"    Load a module library from <path>, while passing it module configurations and "
		"optional arguments.",
		"UNLOAD <name>",
		"    Unload a module.",
		"HELP",
		"    Print this help.",
		NULL,
	};

	reply_help(c, help);
}
