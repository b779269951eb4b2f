/* SPDX-License-Identifier: MIT */
/* an-inefficient.c: prints the inefficient analysis: counts per type, then
 * each block found (type, size, address, operator of its allocation, the
 * operator indices that made it inefficient, and its allocation stack). */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "replay-show.h"

/* The options of both command lines as the library takes them. */
void an_inefficient_options(const struct an_opts *o, mms_inefficient_options_t *io)
{
	memset(io, 0, sizeof(*io));
	io->idle_threshold = o->idle_threshold;
	io->min_size = o->min_size;
	io->keep = o->top;
}

static const char *mem_name(const mms_block_t *b)
{
	if (b->mem == MMS_MEM_POOL && b->pool && *b->pool)
		return b->pool;
	return show_mem_name(b->mem);
}

/* "operator 3 'fill'" for the allocation's own launch, "operator 3" else. */
static void alloc_where(FILE *f, const mms_inefficient_block_t *ib)
{
	fprintf(f, "allocated in operator %" PRIu64, ib->malloc_op);
	if (ib->block.op && ib->block.op_launch)
		fprintf(f, " '%s'", ib->block.op);
	if (ib->block.step)
		fprintf(f, ", step %" PRIu64, ib->block.step);
}

static void why_text(FILE *f, unsigned type, const mms_inefficient_block_t *ib)
{
	switch (type) {
	case MMS_INEFF_EARLY_ALLOCATION:
		fprintf(f,
			"allocated in operator %" PRIu64 " < operator %" PRIu64
			" freed memory < first used in operator %" PRIu64,
			ib->malloc_op, ib->early_free_op, ib->first_access_op);
		break;
	case MMS_INEFF_LATE_DEALLOCATION:
		fprintf(f,
			"last used in operator %" PRIu64 " < operator %" PRIu64
			" allocated memory < freed in operator %" PRIu64,
			ib->late_access_op, ib->late_malloc_op, ib->free_op);
		break;
	default:
		fprintf(f, "used in operator %" PRIu64 ", then not until operator %" PRIu64 " (%" PRIu64 " apart)",
			ib->idle_from_op, ib->idle_to_op, ib->idle_to_op - ib->idle_from_op);
		break;
	}
}

static void print_text(struct an_ctx *c, struct show *s, const mms_inefficient_t *res)
{
	FILE *f = c->out;
	unsigned t;
	size_t i;

	/* Without operator launches each memory event is an operator step. */
	fprintf(f,
		"inefficient: %" PRIu64 " block%s over %" PRIu64 " %s and %" PRIu64 " accesses (idle threshold %" PRIu64
		", min size %" PRIu64 ")\n",
		res->flagged, res->flagged == 1 ? "" : "s", res->ops,
		res->launches ? "operator steps" : "memory events (no operator launches)", res->accesses,
		res->idle_threshold, res->min_size);
	for (t = 0; t < MMS_INEFF_TYPES; t++)
		fprintf(f, "  %-20s %8" PRIu64 " block%s %12" PRIu64 " bytes\n", mms_inefficient_type_name(1u << t),
			res->count[t], res->count[t] == 1 ? " " : "s", res->bytes[t]);
	if (!res->accesses)
		fputs("  (the log has no accesses: record with --events=alloc,free,launch,access and call "
		      "msmemscope_access())\n",
		      f);
	else if (!res->launches)
		fputs("  (the log has no operator launches: each memory event counted as an operator step of its "
		      "own, as msMemScope counts them, so the idle threshold is in memory events here; mark "
		      "operators with msmemscope_op_begin() and msmemscope_op_end())\n",
		      f);
	if (res->n < res->flagged)
		fprintf(f, "the %zu largest (--top):\n", res->n);
	for (i = 0; i < res->n; i++) {
		const mms_inefficient_block_t *ib = &res->blocks[i];

		fputc('\n', f);
		for (t = 0; t < MMS_INEFF_TYPES; t++) {
			if (!(ib->types & 1u << t))
				continue;
			fprintf(f, "%s: ", mms_inefficient_type_name(1u << t));
			why_text(f, 1u << t, ib);
			fputc('\n', f);
		}
		fprintf(f, "  %" PRIu64 " bytes at 0x%" PRIx64 " (%s, allocation %" PRIu64 "), ", ib->block.size,
			ib->block.addr, mem_name(&ib->block), ib->block.alloc_id);
		alloc_where(f, ib);
		if (ib->block.owner)
			fprintf(f, ", owner %s", ib->block.owner);
		if (ib->free_op)
			fprintf(f, ", freed in operator %" PRIu64 "\n", ib->free_op);
		else
			fputs(", live at the end\n", f);
		show_stack(s, ib->block.stack, "    ");
	}
}

static void json_u64(FILE *f, const char *key, uint64_t v)
{
	fprintf(f, ",\"%s\":%" PRIu64, key, v);
}

static void print_json(struct an_ctx *c, struct show *s, const mms_inefficient_t *res)
{
	FILE *f = c->out;
	const char *sep = "";
	unsigned t;
	size_t i;

	fputs("{\"analysis\":\"inefficient\"", f);
	json_u64(f, "idle_threshold", res->idle_threshold);
	json_u64(f, "min_size", res->min_size);
	json_u64(f, "ops", res->ops);
	json_u64(f, "launches", res->launches);
	json_u64(f, "accesses", res->accesses);
	json_u64(f, "flagged", res->flagged);
	fputs(",\"counts\":{", f);
	for (t = 0; t < MMS_INEFF_TYPES; t++)
		fprintf(f, "%s\"%s\":%" PRIu64, t ? "," : "", mms_inefficient_type_name(1u << t), res->count[t]);
	fputs("},\"bytes\":{", f);
	for (t = 0; t < MMS_INEFF_TYPES; t++)
		fprintf(f, "%s\"%s\":%" PRIu64, t ? "," : "", mms_inefficient_type_name(1u << t), res->bytes[t]);
	fputs("},\"blocks\":[", f);
	for (i = 0; i < res->n; i++, sep = ",") {
		const mms_inefficient_block_t *ib = &res->blocks[i];
		const char *tsep = "";

		fprintf(f, "%s{\"types\":[", sep);
		for (t = 0; t < MMS_INEFF_TYPES; t++) {
			if (!(ib->types & 1u << t))
				continue;
			fprintf(f, "%s\"%s\"", tsep, mms_inefficient_type_name(1u << t));
			tsep = ",";
		}
		fprintf(f, "],\"addr\":\"0x%" PRIx64 "\"", ib->block.addr);
		json_u64(f, "size", ib->block.size);
		fputs(",\"kind\":", f);
		json_put_string(f, mem_name(&ib->block), strlen(mem_name(&ib->block)));
		json_u64(f, "alloc_id", ib->block.alloc_id);
		json_u64(f, "step", ib->block.step);
		json_u64(f, "malloc_op", ib->malloc_op);
		fputs(",\"op\":", f);
		if (ib->block.op && ib->block.op_launch)
			json_put_string(f, ib->block.op, strlen(ib->block.op));
		else
			fputs("null", f);
		fputs(",\"owner\":", f);
		if (ib->block.owner)
			json_put_string(f, ib->block.owner, strlen(ib->block.owner));
		else
			fputs("null", f);
		json_u64(f, "first_access_op", ib->first_access_op);
		json_u64(f, "free_op", ib->free_op);
		json_u64(f, "early_free_op", ib->early_free_op);
		json_u64(f, "late_access_op", ib->late_access_op);
		json_u64(f, "late_malloc_op", ib->late_malloc_op);
		json_u64(f, "idle_from_op", ib->idle_from_op);
		json_u64(f, "idle_to_op", ib->idle_to_op);
		fputs(",\"stack\":", f);
		show_stack(s, ib->block.stack, "");
		fputc('}', f);
	}
	fputs("]}\n", f);
}

int an_inefficient_add(struct an_ctx *c)
{
	mms_inefficient_options_t io;
	int rc;

	an_inefficient_options(c->o, &io);
	/* The dump tags the blocks it finds: all of them. */
	io.tags = c->o->tag_inefficient;
	rc = mms_inefficient_add(c->pass, &io, &c->inefficient);
	c->subscribed += !rc;
	if (rc) {
		warn("inefficient: %s: cannot replay: %s", c->path, mms_strerror(rc));
		return CLI_EXIT_FAILURE;
	}
	return 0;
}

int an_inefficient_print(struct an_ctx *c)
{
	mms_inefficient_t *res = c->inefficient;
	struct show s;

	if (res->status) {
		warn("inefficient: %s: cannot replay: %s", c->path, mms_strerror(res->status));
		return CLI_EXIT_FAILURE;
	}
	an_show_init(c, &s);
	if (c->o->json)
		print_json(c, &s, res);
	else
		print_text(c, &s, res);
	an_show_fini(&s);
	return 0;
}
