/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * schedule: the open-loop timetable.
 *
 * An open-loop step sends `rate` requests per second in total, spread over
 * every connection of every thread. The timetable is one global sequence of
 * slots, slot j due at start + j / rate seconds, dealt round robin: connection
 * `index` of `nconns` owns the slots index, index + nconns, ... So the load
 * on the server is evenly spaced whatever the number of connections, and no
 * thread needs to talk to another to keep it.
 *
 * A request's latency is measured from its slot's time, not from when it was
 * actually written. When the client falls behind (the server is slow, the
 * connection's window of requests in flight is full, the thread stalled), the
 * overdue slots are handed out back to back as soon as sending is possible,
 * and the time they waited is part of their latency: a slow server cannot
 * hide its queue by slowing the client down ("coordinated omission").
 *
 * Nothing here reads the clock: callers pass `now`, so tests use a fake one.
 * A struct schedule belongs to the thread that owns its connection.
 */
#ifndef XKV_BENCH_SCHEDULE_H
#define XKV_BENCH_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

/* No more slots. */
#define SCHEDULE_NONE UINT64_MAX
/* A step is sustained if it achieved at least this percentage of its rate. */
#define SCHEDULE_SUSTAINED_PCT 97

struct schedule {
	uint64_t start;	 /* ns: time of global slot 0 */
	uint64_t rate;	 /* requests per second over all connections */
	uint64_t slot;	 /* this connection's next global slot */
	uint64_t stride; /* connections sharing the timetable */
	uint64_t end;	 /* ns: no slot is due at or after this time */
	uint64_t limit;	 /* global slots in the timetable */
};

/*
 * Connection `index` of `nconns` on a timetable of `rate` req/s from `start`.
 * Slots stop before `end` (SCHEDULE_NONE: no end) and after `limit` slots in
 * total (SCHEDULE_NONE: no limit). rate and nconns must not be 0.
 */
void schedule_init(struct schedule *s, uint64_t start, uint64_t rate, unsigned index,
		   unsigned nconns, uint64_t end, uint64_t limit);
/* When global slot j is due. */
uint64_t schedule_slot_time(const struct schedule *s, uint64_t j);
/* When this connection's next slot is due, or SCHEDULE_NONE. */
uint64_t schedule_next(const struct schedule *s);
/*
 * Takes the next slot if it is due at `now`: true and its time in *when.
 * Called in a loop after a stall, it returns every overdue slot in order.
 */
bool schedule_take(struct schedule *s, uint64_t now, uint64_t *when);
/* Slots this connection has not taken yet (for the "unsent" count). */
uint64_t schedule_left(const struct schedule *s);

/*
 * Requests per second achieved by a step: `completed` replies over the
 * longer of its sending window and the time from its start to its last
 * reply. A server that keeps up ends close to the window; one that falls
 * behind stretches the elapsed time or leaves requests unanswered.
 * window_ns is 0 for a closed-loop step.
 */
double schedule_achieved_rate(uint64_t completed, uint64_t window_ns, uint64_t elapsed_ns);
/* Whether `achieved` is at least SCHEDULE_SUSTAINED_PCT% of `target`. */
bool schedule_sustained(uint64_t target, double achieved);

#endif /* XKV_BENCH_SCHEDULE_H */
