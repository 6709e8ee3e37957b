/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * script: what the Lua scripting module (cmd/script.c) shows outside its
 * commands.
 */
#ifndef XKV_SCRIPT_H
#define XKV_SCRIPT_H

/* For INFO memory: the interpreter's bytes, the cached scripts' bytes and
 * their number. */
void script_memory(long long *vm, long long *scripts, unsigned long *n);

#endif
