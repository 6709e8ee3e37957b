// SPDX-License-Identifier: BSD-3-Clause
/*
 * The open-loop timetable (schedule.h). Slot times are computed from the
 * slot number each time, never by adding an interval, so that rounding never
 * accumulates into drift over a long step.
 */
#include "clock.h"
#include "schedule.h"

void schedule_init(struct schedule *s, uint64_t start, uint64_t rate, unsigned index,
		   unsigned nconns, uint64_t end, uint64_t limit)
{
	s->start = start;
	s->rate = rate;
	s->slot = index;
	s->stride = nconns;
	s->end = end;
	s->limit = limit;
}

uint64_t schedule_slot_time(const struct schedule *s, uint64_t j)
{
	/* j * 1e9 overflows 64 bits after 584 years of slots at 1/s, or
	 * 18 s at 1e9/s: 128 bits cannot. */
	return s->start + (uint64_t)((unsigned __int128)j * NSEC_PER_SEC / s->rate);
}

uint64_t schedule_next(const struct schedule *s)
{
	uint64_t t;

	if (s->slot >= s->limit)
		return SCHEDULE_NONE;
	t = schedule_slot_time(s, s->slot);
	return t < s->end ? t : SCHEDULE_NONE;
}

bool schedule_take(struct schedule *s, uint64_t now, uint64_t *when)
{
	uint64_t t = schedule_next(s);

	if (t == SCHEDULE_NONE || t > now)
		return false;
	*when = t;
	s->slot += s->stride;
	return true;
}

uint64_t schedule_left(const struct schedule *s)
{
	uint64_t last; /* one past the last global slot */

	if (schedule_next(s) == SCHEDULE_NONE)
		return 0;
	last = s->limit;
	if (s->end != SCHEDULE_NONE) {
		/* The first slot j with start + j * 1e9 / rate >= end. */
		unsigned __int128 span = s->end - s->start;
		uint64_t j = (uint64_t)((span * s->rate + NSEC_PER_SEC - 1) / NSEC_PER_SEC);

		while (j && schedule_slot_time(s, j - 1) >= s->end)
			j--;
		while (schedule_slot_time(s, j) < s->end)
			j++;
		if (j < last)
			last = j;
	}
	return (last - s->slot + s->stride - 1) / s->stride;
}

double schedule_achieved_rate(uint64_t completed, uint64_t window_ns, uint64_t elapsed_ns)
{
	uint64_t span = elapsed_ns > window_ns ? elapsed_ns : window_ns;

	if (!span)
		return 0.0;
	return (double)completed * (double)NSEC_PER_SEC / (double)span;
}

bool schedule_sustained(uint64_t target, double achieved)
{
	return achieved * 100.0 >= (double)target * SCHEDULE_SUSTAINED_PCT;
}
