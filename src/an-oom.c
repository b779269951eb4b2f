/* SPDX-License-Identifier: MIT */
/* an-oom.c: prints the oom analysis (replay/analyses/oom.c): each
 * allocation the allocator refused, with its stack and where it was made,
 * and what was live then: the blocks allocated last and the largest. */
#include "config.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "replay-show.h"

/* "step 2, in matmul (launch 7)" or less; empty when neither. */
static void where_words(char *buf, size_t len, uint64_t step, const char *op, uint64_t launch)
{
	int n = 0;

	buf[0] = '\0';
	if (step)
		n = snprintf(buf, len, ", step %" PRIu64, step);
	if (op && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ", in %s (launch %" PRIu64 ")", op, launch);
}

static void print_block(struct show *s, const mms_block_t *b)
{
	char h[32], w[192];

	where_words(w, sizeof(w), b->step, b->op, b->op_launch);
	fprintf(s->out, "    %s at 0x%" PRIx64 " (%s), allocation %" PRIu64 " at event %" PRIu64 "%s%s%s%s\n",
		human_bytes(b->size, h, sizeof(h)), b->addr, show_mem_name(b->mem), b->alloc_id, b->alloc_event, w,
		b->owner ? ", owner " : "", b->owner ? b->owner : "", b->inherited ? " (inherited)" : "");
	if (b->stack)
		show_stack(s, b->stack, "        ");
}

static void print_text(struct an_ctx *c, struct show *s, const mms_oom_t *o)
{
	FILE *f = c->out;
	char h[32], w[192];
	size_t i, j;
	mms_log_info_t info;

	if (!o->failures) {
		fputs("No allocation was refused (out of memory) in this log.\n", f);
		return;
	}
	fprintf(f, "====== OOM: %" PRIu64 " allocation%s refused ======\n", o->failures, o->failures == 1 ? "" : "s");
	for (i = 0; i < o->n; i++) {
		const mms_oom_failure_t *x = &o->list[i];
		char t[96];
		const char *name = NULL;
		uint64_t tid = 0;

		mms_log_thread(c->log, x->thread, &tid, &name);
		if (name && *name)
			snprintf(t, sizeof(t), "thread %u '%s'", x->thread, name);
		else
			snprintf(t, sizeof(t), "thread %u", x->thread);
		where_words(w, sizeof(w), x->step, x->op, x->op_launch);
		fprintf(f, "event %" PRIu64 ", %s%s: %s of ", x->event, t, w, show_refused_fn_name(x->mem, x->fn));
		if (x->size == UINT64_MAX)
			fputs("more bytes than an address space holds", f);
		else
			fprintf(f, "%" PRIu64 " bytes (%s)", x->size, human_bytes(x->size, h, sizeof(h)));
		if (x->align)
			fprintf(f, " aligned to %" PRIu64, x->align);
		if (x->mem == MMS_MEM_DEVICE && x->fn != MMS_DEVICE_PINNED)
			fprintf(f, " on cuda:%u", x->device);
		fputs(x->mem == MMS_MEM_DEVICE ? " refused by the CUDA driver (out of memory)\n" : " refused\n", f);
		if (x->stack)
			show_stack(s, x->stack, "      ");
		fprintf(f, "  live then%s: %" PRIu64 " block%s, %s\n",
			x->mem != MMS_MEM_DEVICE     ? ""
			: x->fn == MMS_DEVICE_PINNED ? " (pinned host memory)"
						     : " (CUDA memory on that device)",
			x->live_blocks, x->live_blocks == 1 ? "" : "s", human_bytes(x->live_bytes, h, sizeof(h)));
		if (x->nrecent) {
			fprintf(f, "  the %zu allocated last, newest first:\n", x->nrecent);
			for (j = 0; j < x->nrecent; j++)
				print_block(s, &x->recent[j]);
		}
		if (x->nlargest) {
			fprintf(f, "  the %zu largest:\n", x->nlargest);
			for (j = 0; j < x->nlargest; j++)
				print_block(s, &x->largest[j]);
		}
	}
	if (o->failures > o->n)
		fprintf(f, "... and %" PRIu64 " more refused allocations (the first %zu are shown)\n", o->failures - o->n,
			o->n);
	mms_log_get_info(c->log, &info);
	if (!info.call_stack_depth)
		fputs("(recorded without stacks: record with --call-stack=c:N to see where each was asked for)\n", f);
}

static void print_blocks_json(struct show *s, const char *key, const mms_block_t *v, size_t n)
{
	fprintf(s->out, ",\"%s\":[", key);
	for (size_t j = 0; j < n; j++) {
		if (j)
			fputc(',', s->out);
		show_block(s, &v[j]);
	}
	fputc(']', s->out);
}

static void print_json(struct an_ctx *c, struct show *s, const mms_oom_t *o)
{
	FILE *f = c->out;
	size_t i;

	fprintf(f, "{\"analysis\":\"oom\",\"events\":%" PRIu64 ",\"failures\":%" PRIu64 ",\"list\":[", o->events,
		o->failures);
	for (i = 0; i < o->n; i++) {
		const mms_oom_failure_t *x = &o->list[i];

		fprintf(f,
			"%s{\"event\":%" PRIu64 ",\"time_ns\":%" PRIu64
			",\"thread\":%u,\"fn\":\"%s\",\"memory\":\"%s\","
			"\"device\":%u,\"size\":%" PRIu64 ",\"align\":%" PRIu64 ",\"step\":%" PRIu64 ",\"op\":",
			i ? "," : "", x->event, x->time_ns, x->thread, show_refused_fn_name(x->mem, x->fn),
			x->mem == MMS_MEM_DEVICE ? "DEVICE" : "HOST", x->device, x->size, x->align, x->step);
		if (x->op)
			json_put_string(f, x->op, strlen(x->op));
		else
			fputs("null", f);
		fprintf(f, ",\"op_launch\":%" PRIu64 ",\"live_blocks\":%" PRIu64 ",\"live_bytes\":%" PRIu64 ",\"stack\":",
			x->op_launch, x->live_blocks, x->live_bytes);
		show_stack(s, x->stack, "");
		print_blocks_json(s, "recent", x->recent, x->nrecent);
		print_blocks_json(s, "largest", x->largest, x->nlargest);
		fputc('}', f);
	}
	fputs("]}\n", f);
}

int an_oom_add(struct an_ctx *c)
{
	mms_oom_options_t oo = { .k = c->o->oom_k };
	int rc = mms_oom_add(c->pass, &oo, &c->oom);

	c->subscribed += !rc;
	if (rc)
		warn("%s: oom: %s", c->path, mms_strerror(rc));
	return rc ? CLI_EXIT_FAILURE : 0;
}

int an_oom_print(struct an_ctx *c)
{
	const mms_oom_t *o = c->oom;
	struct show s;

	if (o->status) {
		warn("%s: oom: %s", c->path, mms_strerror(o->status));
		return CLI_EXIT_FAILURE;
	}
	if (o->stop_rc)
		warn("oom: %s: the replay stopped early (%s); the report covers the events before it", c->path,
		     mms_strerror(o->stop_rc));
	an_show_init(c, &s);
	if (s.json)
		print_json(c, &s, o);
	else
		print_text(c, &s, o);
	an_show_fini(&s);
	fflush(c->out);
	return 0;
}
