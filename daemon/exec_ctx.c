// SPDX-License-Identifier: BSD-3-Clause
/* The per-call execution context (exec_ctx.h). */
#include "exec_ctx.h"
#include "log.h"
#include "util.h"

__thread struct exec_ctx *exec_ctx_top;

void exec_ctx_push(struct exec_ctx *x, struct client *c, const struct command *cmd, int db,
		   unsigned flags, int64_t start_us)
{
	struct exec_ctx *outer = exec_ctx_top;

	x->outer = outer;
	x->client = c;
	x->cmd = cmd;
	x->db = db;
	x->unit = (flags & EXEC_IN_EXEC) && outer ? outer->unit : x;
	x->dirty = x->rewritten = x->verbatim = false;
	x->given = -1;
	x->keys_changed = 0;
	x->last_changed = NULL;
	x->ops = NULL;
	if (outer) {
		x->flags = flags | (outer->flags & ~EXEC_NO_TOUCH);
		x->time_ms = outer->time_ms;
		x->mono_ms = outer->mono_ms;
	} else {
		x->flags = flags;
		x->mono_ms = (start_us ? start_us : mono_us()) / 1000;
		x->time_ms = now_ms();
	}
	exec_ctx_top = x;
}

void exec_ctx_pop(struct exec_ctx *x)
{
	xkv_assert(exec_ctx_top == x);
	exec_ctx_top = x->outer;
}
