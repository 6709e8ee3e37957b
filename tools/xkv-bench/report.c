// SPDX-License-Identifier: BSD-3-Clause
/*
 * Human and JSON reports (report.h).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "clock.h"
#include "report.h"
#include "schedule.h"

const double report_pcts[REPORT_NPCT] = { 50.0, 90.0, 99.0, 99.9 };
static const char *const pct_names[REPORT_NPCT] = { "p50", "p90", "p99", "p99.9" };

static double ms(uint64_t ns)
{
	return (double)ns / (double)NSEC_PER_MSEC;
}

static double us(uint64_t ns)
{
	return (double)ns / (double)NSEC_PER_USEC;
}

static double secs(uint64_t ns)
{
	return (double)ns / (double)NSEC_PER_SEC;
}

/* The time the achieved rate is over: the window, or longer if replies came later. */
static uint64_t span(const struct bench_result *r)
{
	return r->elapsed_ns > r->window_ns ? r->elapsed_ns : r->window_ns;
}

/* Of the replies, how many the kernel answered, in percent. */
static double kernel_pct(const struct bench_result *r)
{
	return r->requests ? 100.0 * (double)r->kernel / (double)r->requests : 0.0;
}

void report_progress(FILE *f, const struct bench_step *step, uint64_t elapsed_ns, uint64_t requests,
		     double rate, uint64_t errors)
{
	fprintf(f, "\r\033[K[%6.1f s] %s", secs(elapsed_ns), step->label);
	if (step->rate)
		fprintf(f, " %" PRIu64 "/s", step->rate);
	fprintf(f, ": %" PRIu64 " requests, %.0f req/s, %" PRIu64 " errors", requests, rate,
		errors);
	fflush(f);
}

void report_progress_clear(FILE *f)
{
	fputs("\r\033[K", f);
	fflush(f);
}

static void describe_limit(FILE *f, const struct bench_opts *o)
{
	if (o->requests && o->test_time > 0)
		fprintf(f, "%" PRIu64 " requests or %g s", o->requests, o->test_time);
	else if (o->requests)
		fprintf(f, "%" PRIu64 " requests", o->requests);
	else
		fprintf(f, "%g s", o->test_time);
}

void report_header(FILE *f, const struct report_run *run)
{
	const struct bench_opts *o = run->o;
	const struct workload *w = run->w;

	fprintf(f, "xkv-bench %s:%u over %s, %s loop%s, %u threads x %u connections, pipeline %u, ",
		o->host, o->port, o->transport->name,
		strcmp(run->mode, "closed") ? "open" : "closed",
		strcmp(run->mode, "sweep") ? "" : " sweep", o->threads, o->conns, o->pipeline);
	describe_limit(f, o);
	fprintf(f, "%s\n", strcmp(run->mode, "sweep") ? "" : " per step");
	fprintf(f, "workload  %s, %" PRIu64 " keys \"%s<n>\" %s", w->desc, w->nkeys, w->prefix,
		key_pattern_name(w->pattern));
	if (w->pattern == KEY_ZIPF)
		fprintf(f, " s=%g", w->zipf.s);
	fprintf(f, ", %zu-byte values, RESP%u", o->load.data_size, o->resp);
	if (o->transport->datagram)
		fprintf(f, ", requests padded to %u bytes", o->topts.udp_pad);
	fputc('\n', f);
}

static void errors_line(FILE *f, const struct bench_result *res)
{
	if (!bench_failed(res)) {
		fprintf(f, "  errors     none\n");
		return;
	}
	fprintf(f,
		"  errors     %" PRIu64 " error replies, %" PRIu64 " lost requests, %" PRIu64
		" broken connections\n",
		res->errors, res->lost, res->conn_errors);
	if (res->first_error[0])
		fprintf(f, "  first      %s\n", res->first_error);
}

void report_step(FILE *f, const char *title, const struct bench_result *res)
{
	const struct hist *h = &res->hist;

	fprintf(f, "%s%s\n", title, res->interrupted ? " (interrupted)" : "");
	fprintf(f, "  requests   %" PRIu64 " in %.2f s, %.0f req/s\n", res->requests,
		secs(span(res)), res->achieved);
	if (res->rate) {
		fprintf(f, "  rate       target %" PRIu64 " req/s, achieved %.0f (%.1f%%): %s\n",
			res->rate, res->achieved, 100.0 * res->achieved / (double)res->rate,
			res->sustained ? "sustained" : "NOT sustained");
		if (res->unsent)
			fprintf(f, "  unsent     %" PRIu64 " requests of the timetable\n",
				res->unsent);
	}
	fprintf(f, "  latency    avg %.3f", ms((uint64_t)hist_mean(h)));
	for (unsigned i = 0; i < REPORT_NPCT; i++)
		fprintf(f, "  %s %.3f", pct_names[i], ms(hist_percentile(h, report_pcts[i])));
	fprintf(f, "  max %.3f ms\n", ms(h->total ? h->max : 0));
	if (res->datagram)
		fprintf(f, "  kernel answered: %" PRIu64 " (%.1f%%)\n", res->kernel,
			kernel_pct(res));
	errors_line(f, res);
}

void report_sweep_header(FILE *f)
{
	fprintf(f, "%10s %10s %10s %10s %8s  %s\n", "rate", "achieved", "p50 ms", "p99 ms",
		"errors", "result");
	fflush(f);
}

void report_sweep_row(FILE *f, const struct bench_result *r)
{
	fprintf(f, "%10" PRIu64 " %10.0f %10.3f %10.3f %8" PRIu64 "  ", r->rate, r->achieved,
		ms(hist_percentile(&r->hist, 50.0)), ms(hist_percentile(&r->hist, 99.0)),
		r->errors + r->lost + r->conn_errors);
	if (r->sustained)
		fprintf(f, "sustained");
	else
		fprintf(f, "not sustained (%.1f%% achieved)",
			100.0 * r->achieved / (double)r->rate);
	fprintf(f, "%s\n", r->interrupted ? ", interrupted" : "");
	fflush(f);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_step(FILE *f, const struct bench_result *r, const char *indent)
{
	const struct hist *h = &r->hist;

	fprintf(f, "{\n%s  \"rate\": ", indent);
	if (r->rate)
		fprintf(f, "%" PRIu64, r->rate);
	else
		fputs("null", f);
	fprintf(f, ",\n%s  \"achieved\": %.1f,\n%s  \"sustained\": %s,\n", indent, r->achieved,
		indent, r->rate ? (r->sustained ? "true" : "false") : "null");
	fprintf(f, "%s  \"seconds\": %.6f,\n%s  \"requests\": %" PRIu64 ",\n", indent,
		secs(span(r)), indent, r->requests);
	fprintf(f, "%s  \"errors\": %" PRIu64 ",\n%s  \"lost\": %" PRIu64 ",\n", indent, r->errors,
		indent, r->lost);
	fprintf(f, "%s  \"conn_errors\": %" PRIu64 ",\n%s  \"unsent\": %" PRIu64 ",\n", indent,
		r->conn_errors, indent, r->unsent);
	fprintf(f, "%s  \"bytes_out\": %" PRIu64 ",\n%s  \"bytes_in\": %" PRIu64 ",\n", indent,
		r->bytes_out, indent, r->bytes_in);
	if (r->datagram) {
		fprintf(f, "%s  \"kernel_answered\": %" PRIu64 ",\n", indent, r->kernel);
		fprintf(f, "%s  \"kernel_answered_pct\": %.2f,\n", indent, kernel_pct(r));
	}
	fprintf(f, "%s  \"interrupted\": %s,\n", indent, r->interrupted ? "true" : "false");
	fprintf(f, "%s  \"first_error\": ", indent);
	if (r->first_error[0])
		json_str(f, r->first_error);
	else
		fputs("null", f);
	fprintf(f, ",\n%s  \"latency_us\": {\"min\": %.3f, \"avg\": %.3f", indent,
		us(h->total ? h->min : 0), hist_mean(h) / (double)NSEC_PER_USEC);
	for (unsigned i = 0; i < REPORT_NPCT; i++)
		fprintf(f, ", \"%s\": %.3f", pct_names[i], us(hist_percentile(h, report_pcts[i])));
	fprintf(f, ", \"max\": %.3f}\n%s}", us(h->total ? h->max : 0), indent);
}

void report_json(FILE *f, const struct report_run *run)
{
	const struct bench_opts *o = run->o;
	const struct workload *w = run->w;
	uint64_t failures = 0;

	fprintf(f, "{\n  \"tool\": \"xkv-bench\",\n  \"mode\": \"%s\",\n  \"host\": ", run->mode);
	json_str(f, o->host);
	fprintf(f, ",\n  \"port\": %u,\n  \"transport\": \"%s\",\n", o->port, o->transport->name);
	fprintf(f, "  \"config\": {\"threads\": %u, \"connections\": %u, \"pipeline\": %u, ",
		o->threads, o->conns, o->pipeline);
	fprintf(f, "\"requests\": %" PRIu64 ", \"test_time\": %g, \"resp\": %u,\n", o->requests,
		o->test_time, o->resp);
	fprintf(f, "    \"command\": ");
	json_str(f, w->desc);
	fprintf(f, ", \"keys\": %" PRIu64 ", \"key_prefix\": ", w->nkeys);
	json_str(f, w->prefix);
	fprintf(f, ", \"key_pattern\": \"%s\", \"zipf_s\": %g, \"data_size\": %zu",
		key_pattern_name(w->pattern), o->load.zipf_s, o->load.data_size);
	if (o->transport->datagram)
		fprintf(f, ", \"udp_pad\": %u", o->topts.udp_pad);
	fprintf(f, "},\n");
	fprintf(f, "  \"prefill\": ");
	if (run->prefill) {
		json_step(f, run->prefill, "  ");
		failures += run->prefill->errors + run->prefill->lost + run->prefill->conn_errors;
	} else {
		fputs("null", f);
	}
	fprintf(f, ",\n  \"steps\": [");
	for (unsigned i = 0; i < run->nsteps; i++) {
		const struct bench_result *r = &run->steps[i];

		fprintf(f, "%s\n    ", i ? "," : "");
		json_step(f, r, "    ");
		failures += r->errors + r->lost + r->conn_errors;
	}
	fprintf(f, "\n  ],\n  \"failures\": %" PRIu64 ",\n  \"ok\": %s\n}\n", failures,
		failures ? "false" : "true");
}
