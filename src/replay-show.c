/* SPDX-License-Identifier: MIT */
/* replay-show.c: prints events, blocks, stacks, positions and step reports
 * of a replay as text or JSON (see replay-show.h). */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "logwords.h"
#include "replay-show.h"

#define MAX_FRAMES 16 /* inlined frames per address */

void show_init(struct show *s, const char *path, mms_log_t *log, mms_replay_t *r)
{
	memset(s, 0, sizeof(*s));
	s->out = stdout;
	s->path = path;
	s->log = log;
	s->r = r;
	s->depth = 12;
	s->top = 10;
}

void show_fini(struct show *s)
{
	mms_symbolizer_close(s->sym);
	s->sym = NULL;
}

const char *show_mem_name(unsigned mem)
{
	const char *name = mms_mem_kind_name(mem);

	return name ? name : "UNKNOWN";
}

/* The function behind a memory event: malloc, realloc, munmap, ... */
const char *show_alloc_fn_name(unsigned fn)
{
	const char *name = mms_alloc_func_name(fn);

	return name ? name : "alloc";
}

const char *show_dev_fn_name(unsigned kind, unsigned sub)
{
	static const char *const allocs[MMS_DEVICE_SUB_COUNT] = {
		[MMS_DEVICE_MEMORY] = "cuMemAlloc",         [MMS_DEVICE_ASYNC] = "cuMemAllocAsync",
		[MMS_DEVICE_MANAGED] = "cuMemAllocManaged", [MMS_DEVICE_PINNED] = "cuMemHostAlloc",
		[MMS_DEVICE_ARRAY] = "cuArrayCreate",       [MMS_DEVICE_VMM] = "cuMemMap",
	};
	static const char *const frees[MMS_DEVICE_SUB_COUNT] = {
		[MMS_DEVICE_MEMORY] = "cuMemFree",     [MMS_DEVICE_ASYNC] = "cuMemFreeAsync",
		[MMS_DEVICE_MANAGED] = "cuMemFree",    [MMS_DEVICE_PINNED] = "cuMemFreeHost",
		[MMS_DEVICE_ARRAY] = "cuArrayDestroy", [MMS_DEVICE_VMM] = "cuMemUnmap",
	};
	const char *const *names = kind == MMS_EV_FREE ? frees : allocs;

	/* A refused VMM allocation is cuMemCreate's (a mapping is not refused
	 * for want of memory). */
	if (kind == MMS_EV_ALLOC_FAIL && sub == MMS_DEVICE_VMM)
		return "cuMemCreate";
	return sub < MMS_DEVICE_SUB_COUNT && names[sub] ? names[sub] : names[MMS_DEVICE_MEMORY];
}

const char *show_refused_fn_name(unsigned mem, unsigned fn)
{
	return mem == MMS_MEM_DEVICE ? show_dev_fn_name(MMS_EV_ALLOC_FAIL, fn) : show_alloc_fn_name(fn);
}

const char *show_fn_name(const mms_event_t *ev)
{
	if (ev->mem == MMS_MEM_DEVICE)
		return show_dev_fn_name(ev->kind, ev->sub);
	if (ev->mem == MMS_MEM_MMAP && ev->sub == MMS_MAP_PROTECT)
		return "mprotect";
	if (ev->mem == MMS_MEM_MMAP) /* a FREE of RESERVE: an mmap with PROT_NONE */
		return ev->kind == MMS_EV_MALLOC || ev->sub == MMS_MAP_RESERVE ? "mmap" : "munmap";
	if (ev->mem == MMS_MEM_POOL)
		return ev->kind == MMS_EV_MALLOC ? "pool_alloc" : "pool_free";
	if (ev->kind == MMS_EV_MALLOC)
		return show_alloc_fn_name(ev->sub);
	return show_free_fn_name(ev->sub);
}

const char *show_free_fn_name(unsigned fn)
{
	const char *name = mms_free_func_name(fn);

	return name ? name : "free";
}

static const char *sub_name(const mms_event_t *ev)
{
	switch (ev->kind) {
	case MMS_EV_SYSTEM:
		return ev->sub == MMS_SYS_FORK          ? "FORK"
		       : ev->sub == MMS_SYS_SWEEP_BEGIN ? "SWEEP_BEGIN"
		       : ev->sub == MMS_SYS_SWEEP_END   ? "SWEEP_END"
		       : ev->sub != MMS_SYS_INIT        ? "FINI"
							: "INIT";
	case MMS_EV_MALLOC:
	case MMS_EV_FREE:
		return show_fn_name(ev);
	case MMS_EV_ACCESS:
		return ev->sub == MMS_ACC_READ ? "READ" : ev->sub == MMS_ACC_WRITE ? "WRITE" : "UNKNOWN";
	case MMS_EV_OP_LAUNCH:
		return ev->sub != MMS_OP_START ? "end" : "begin";
	case MMS_EV_MSTX:
		return ev->sub == MMS_MSTX_RANGE_START ? "range_start"
		       : ev->sub == MMS_MSTX_RANGE_END ? "range_end"
						       : "mark";
	case MMS_EV_OWNER:
		return ev->sub == MMS_OWNER_TAG ? "tag" : ev->sub != MMS_OWNER_PUSH ? "pop" : "push";
	case MMS_EV_COLLECT:
		if (ev->flags) /* the --steps filter's */
			return ev->sub != MMS_COLLECT_STOP ? "start (--steps)" : "stop (--steps)";
		return ev->sub != MMS_COLLECT_STOP ? "start" : "stop";
	case MMS_EV_ALLOC_FAIL:
		return show_refused_fn_name(ev->mem, ev->sub);
	case MMS_EV_STEP:
		/* An inferred step (format 13); "" the program's mark. */
		return ev->sub == MMS_STEP_OPTIMIZER ? "optimizer" : "";
	default:
		return "";
	}
}

/* "t2" or "t2 'worker'" for a thread index. */
static const char *thread_label(struct show *s, uint32_t thread, char *buf, size_t len)
{
	const char *name = NULL;
	uint64_t tid = 0;

	mms_log_thread(s->log, thread, &tid, &name);
	if (name && *name)
		snprintf(buf, len, "t%u '%s'", thread, name);
	else
		snprintf(buf, len, "t%u", thread);
	return buf;
}

static void json_str(struct show *s, const char *v)
{
	if (!v)
		fputs("null", s->out);
	else
		json_put_string(s->out, v, strlen(v));
}

/* ,"KEY":index,"KEY_tid":tid,"KEY_name":name|null */
static void json_thread(struct show *s, const char *key, uint32_t thread)
{
	const char *name = NULL;
	uint64_t tid = 0;

	mms_log_thread(s->log, thread, &tid, &name);
	fprintf(s->out, ",\"%s\":%u,\"%s_tid\":%" PRIu64 ",\"%s_name\":", key, thread, key, tid, key);
	json_str(s, name && *name ? name : NULL);
}

/* "1 block", "3 blocks". */
static const char *plural(uint64_t n, const char *noun, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIu64 " %s%s", n, noun, n == 1 ? "" : "s");
	return buf;
}

static mms_symbolizer_t *symbolizer(struct show *s)
{
	if (!s->sym && !s->sym_failed && mms_symbolizer_open(s->log, &s->sym))
		s->sym_failed = 1;
	return s->sym;
}

/* --- stacks ------------------------------------------------------------------- */

void show_stack(struct show *s, uint32_t stack, const char *indent)
{
	uint64_t ips[256];
	mms_frame_t fr[256 + MAX_FRAMES];
	char buf[1024];
	int n, i, k, m, num = -1;
	const char *sep = "";

	n = stack ? mms_log_stack(s->log, stack, ips, sizeof(ips) / sizeof(*ips)) : 0;
	if (n > (int)(sizeof(ips) / sizeof(*ips)))
		n = (int)(sizeof(ips) / sizeof(*ips));
	if (s->json)
		fputc('[', s->out);
	if (n == MMS_ECORRUPT && !s->json) {
		fprintf(s->out, "%s(stack damaged: its records in the log do not resolve)\n", indent);
	} else if (n <= 0 && !s->json) {
		mms_log_info_t info;

		mms_log_get_info(s->log, &info);
		fprintf(s->out, "%s(no stack recorded%s)\n", indent,
			!info.call_stack_depth ? "; record with --call-stack=c:N to get them"
			: info.stacks_full     ? ": the recorder's table of stack frames was full"
					       : "");
	}
	/* Python frames stand where the interpreter's eval loop ran them
	 * (MMS_STACK_MIXED, unless s->view asks for one kind); without a
	 * symbolizer, the addresses as they are. */
	m = n > 0 && symbolizer(s) ? mms_stack_frames(s->sym, ips, (size_t)n, s->view, fr, 256 + MAX_FRAMES) : -1;
	if (m == 0 && n > 0 && !s->json)
		fprintf(s->out, "%s(no %s frames in this stack)\n", indent,
			s->view == MMS_STACK_PYTHON ? "Python" : "C");
	if (m < 0) {
		m = n > 0 ? n : 0;
		memset(fr, 0, (size_t)m * sizeof(fr[0]));
		for (i = 0; i < m; i++)
			fr[i].ip = ips[i];
	}
	for (k = 0; k < m; k++) {
		/* An address numbers its first frame; the functions inlined
		 * there come first, each inlined into the next. */
		int first = k == 0 || !fr[k - 1].inlined;

		if (first)
			num++;
		if (first && s->depth && num >= (int)s->depth && !s->json) {
			int more = 0;
			for (i = k; i < m; i++)
				more += i == k || !fr[i - 1].inlined;
			fprintf(s->out, "%s... %d more frame%s\n", indent, more, more == 1 ? "" : "s");
			break;
		}
		if (s->json) {
			fprintf(s->out, "%s{\"ip\":\"0x%" PRIx64 "\",\"function\":", sep, fr[k].ip);
			json_str(s, fr[k].function);
			fputs(",\"file\":", s->out);
			json_str(s, fr[k].file);
			fprintf(s->out, ",\"line\":%u,\"module\":", fr[k].line);
			json_str(s, fr[k].module);
			fprintf(s->out, ",\"module_offset\":\"0x%" PRIx64 "\",\"inlined\":%s,\"python\":%s}",
				fr[k].module_offset, fr[k].inlined ? "true" : "false", fr[k].python ? "true" : "false");
			sep = ",";
			continue;
		}
		mms_frame_format(&fr[k], buf, sizeof(buf));
		if (first)
			fprintf(s->out, "%s#%-2d %s%s\n", indent, num, buf, fr[k].inlined ? " [inlined]" : "");
		else
			fprintf(s->out, "%s    %s%s\n", indent, buf, fr[k].inlined ? " [inlined]" : "");
	}
	if (s->json)
		fputc(']', s->out);
}

/* --- events ------------------------------------------------------------------- */

static void event_text(struct show *s, const mms_event_t *ev, const mms_block_t *b, int has_block)
{
	char t[96], h[32];

	fprintf(s->out, "#%-8" PRIu64 " %-10s %-13s %-14s", ev->id, thread_label(s, ev->thread, t, sizeof(t)),
		cli_event_kind_name(ev->kind), sub_name(ev));
	switch (ev->kind) {
	case MMS_EV_MALLOC:
	case MMS_EV_FREE:
		if (ev->kind == MMS_EV_FREE && !ev->addr && ev->mem == MMS_MEM_HOST) {
			fputs(" NULL", s->out);
			break;
		}
		fprintf(s->out, " 0x%" PRIx64, ev->addr);
		if (has_block)
			fprintf(s->out, " %s, allocation %" PRIu64 "%s", human_bytes(b->size, h, sizeof(h)), b->alloc_id,
				b->inherited ? " (inherited)" : "");
		else if (ev->mem == MMS_MEM_MMAP && ev->sub == MMS_MAP_RESERVE)
			fprintf(s->out, " %s reserved with PROT_NONE (address space, not memory)",
				human_bytes(ev->size, h, sizeof(h)));
		else if (ev->mem == MMS_MEM_MMAP && ev->sub == MMS_MAP_PROTECT)
			fprintf(s->out, " %s, no memory opened or closed", human_bytes(ev->size, h, sizeof(h)));
		else if (ev->kind == MMS_EV_FREE)
			fputs(" (no live block there)", s->out);
		if (ev->mem == MMS_MEM_POOL)
			fprintf(s->out, " pool '%s' total %" PRIu64 " used %" PRIu64, ev->name ? ev->name : "", ev->total,
				ev->used);
		if (has_block && b->op)
			fprintf(s->out, " in %s#%" PRIu64, b->op, b->op_launch);
		if (ev->kind == MMS_EV_MALLOC && mms_runtime_what(ev->runtime))
			fprintf(s->out, " (kept by the runtime: %s)", mms_runtime_what(ev->runtime));
		break;
	case MMS_EV_ALLOC_FAIL:
		if (ev->size == UINT64_MAX)
			fputs(" refused: more bytes than an address space holds", s->out);
		else
			fprintf(s->out, " refused: %" PRIu64 " bytes (%s)", ev->size, human_bytes(ev->size, h, sizeof(h)));
		if (ev->flags)
			fprintf(s->out, ", aligned to %" PRIu64, ev->flags);
		if (ev->mem == MMS_MEM_DEVICE)
			fprintf(s->out, " on cuda:%u (out of device memory)", ev->device);
		break;
	case MMS_EV_ACCESS:
	case MMS_EV_WATCH:
		fprintf(s->out, " 0x%" PRIx64 " %" PRIu64 " bytes", ev->addr, ev->size);
		if (ev->name)
			fprintf(s->out, " '%s'", ev->name);
		if (ev->kind == MMS_EV_WATCH && ev->sub != MMS_WATCH_API)
			fprintf(s->out, " out %" PRIu64 " %s launch %" PRIu64 ": %016" PRIx64, ev->used,
				ev->sub == MMS_WATCH_SUM_AFTER ? "after" : "before", ev->total, ev->flags);
		if (has_block)
			fprintf(s->out, " (allocation %" PRIu64 ")", b->alloc_id);
		break;
	case MMS_EV_OWNER:
		if (ev->sub == MMS_OWNER_TAG) {
			fprintf(s->out, " 0x%" PRIx64 " '%s'", ev->addr, ev->name ? ev->name : "");
			if (has_block)
				fprintf(s->out, " (allocation %" PRIu64 ")", b->alloc_id);
			else
				fputs(" (no live block)", s->out);
			break;
		}
		/* fall through */
	case MMS_EV_MSTX:
		if (ev->kind == MMS_EV_MSTX && ev->sub != MMS_MSTX_MARK)
			fprintf(s->out, " id %" PRIu64, ev->range_id);
		/* fall through */
	default:
		if (ev->name)
			fprintf(s->out, " '%s'", ev->name);
		break;
	}
	fputc('\n', s->out);
}

static void block_json(struct show *s, const mms_block_t *b)
{
	fprintf(s->out,
		"{\"addr\":\"0x%" PRIx64 "\",\"size\":%" PRIu64 ",\"kind\":\"%s\",\"allocation_id\":%" PRIu64
		",\"alloc_event\":%" PRIu64,
		b->addr, b->size, show_mem_name(b->mem), b->alloc_id, b->alloc_event);
	if (b->inherited)
		fprintf(s->out, ",\"inherited\":true,\"origin_pid\":%" PRIu64 ",\"origin_event\":%" PRIu64,
			b->origin_pid, b->origin_event);
	json_thread(s, "thread", b->thread);
	fprintf(s->out, ",\"step\":%" PRIu64 ",\"op\":", b->step);
	json_str(s, b->op);
	fprintf(s->out, ",\"op_launch\":%" PRIu64 ",\"kernel_launches\":%" PRIu64 ",\"owner\":", b->op_launch,
		b->kernel_launches);
	json_str(s, b->owner);
	fputs(",\"pool\":", s->out);
	json_str(s, b->pool);
	if (b->free_event != UINT64_MAX) {
		fprintf(s->out, ",\"free_event\":%" PRIu64, b->free_event);
		json_thread(s, "free_thread", b->free_thread);
	} else {
		fputs(",\"free_event\":null", s->out);
	}
	fputs(",\"stack\":", s->out);
	show_stack(s, b->stack, "");
	if (b->free_event != UINT64_MAX && b->free_stack) {
		fputs(",\"free_stack\":", s->out);
		show_stack(s, b->free_stack, "");
	}
	fputc('}', s->out);
}

/* One event as JSON; stacks (a refused allocation's) only when full. */
static void event_json(struct show *s, const mms_event_t *ev, const mms_block_t *b, int has_block, int full)
{
	fprintf(s->out, "{\"id\":%" PRIu64 ",\"time_ns\":%" PRIu64, ev->id, ev->time_ns);
	json_thread(s, "thread", ev->thread);
	fprintf(s->out, ",\"kind\":\"%s\",\"sub\":\"%s\"", cli_event_kind_name(ev->kind), sub_name(ev));
	if (ev->kind == MMS_EV_MALLOC || ev->kind == MMS_EV_FREE)
		fprintf(s->out, ",\"mem\":\"%s\"", show_mem_name(ev->mem));
	if (ev->kind == MMS_EV_MALLOC && mms_runtime_name(ev->runtime))
		fprintf(s->out, ",\"runtime\":\"%s\"", mms_runtime_name(ev->runtime));
	if (ev->addr || ev->kind == MMS_EV_MALLOC || ev->kind == MMS_EV_FREE)
		fprintf(s->out, ",\"addr\":\"0x%" PRIx64 "\"", ev->addr);
	if (ev->size)
		fprintf(s->out, ",\"size\":%" PRIu64, ev->size);
	if (ev->kind == MMS_EV_ALLOC_FAIL) {
		fprintf(s->out, ",\"align\":%" PRIu64, ev->flags);
		if (ev->mem == MMS_MEM_DEVICE)
			fprintf(s->out, ",\"mem\":\"DEVICE\",\"device\":%u", ev->device);
		if (full) {
			fputs(",\"stack\":", s->out);
			show_stack(s, ev->stack, "");
		}
	}
	if (ev->name) {
		fputs(",\"name\":", s->out);
		json_str(s, ev->name);
	}
	if (ev->kind == MMS_EV_MSTX && ev->sub != MMS_MSTX_MARK)
		fprintf(s->out, ",\"range_id\":%" PRIu64, ev->range_id);
	if (ev->mem == MMS_MEM_POOL)
		fprintf(s->out, ",\"total\":%" PRIu64 ",\"used\":%" PRIu64, ev->total, ev->used);
	if (has_block) {
		fputs(",\"block\":", s->out);
		block_json(s, b);
	}
	fputc('}', s->out);
}

void show_event_line(struct show *s, const mms_event_t *ev)
{
	mms_block_t b;
	int has = mms_replay_event_block(s->r, &b);
	unsigned depth = s->depth;

	if (s->json) {
		/* One line per event: no stacks, or they would swamp it. */
		s->depth = 0;
		event_json(s, ev, &b, 0, 0);
		s->depth = depth;
		return;
	}
	event_text(s, ev, &b, has);
}

/* Whether a freed block's free stack is to be shown: there is one, or
 * the log (version 5 on) would have kept one (stacks off: the stack
 * printer says so). Logs before version 5 keep none for frees. */
static int has_free_stack(const struct show *s, uint32_t stack)
{
	mms_log_info_t info;

	mms_log_get_info(s->log, &info);
	return stack || info.version >= 5;
}

/* The stack of a free: a log recorded with stacks and
 * --keep-stacktraces=alloc (free_stack=0) says its frees keep none,
 * rather than "no stack recorded". */
static void show_free_stack(struct show *s, uint32_t stack, const char *indent)
{
	mms_config_t c;

	if (!stack && !s->json && !mms_log_config(s->log, &c) && !c.free_stack && (c.call_stack || c.python_stack)) {
		fprintf(s->out, "%s(none kept: recorded with --keep-stacktraces=alloc, allocations' stacks only)\n",
			indent);
		return;
	}
	show_stack(s, stack, indent);
}

/* Where an inherited block came from (the line ends with its owner). */
/* "  allocated at event #N in step S, operator OP": the step only when
 * there is one (step 0 is outside every "step start" range). */
static void show_alloc_where(struct show *s, uint64_t event, uint64_t step, const char *op)
{
	fprintf(s->out, "  allocated at event #%" PRIu64, event);
	if (step)
		fprintf(s->out, " in step %" PRIu64, step);
	if (op)
		fprintf(s->out, "%s operator %s", step ? "," : " in", op);
}

static void show_inherited(struct show *s, const mms_block_t *b)
{
	fprintf(s->out, "  inherited from the parent: allocated by pid %" PRIu64 " at its event #%" PRIu64,
		b->origin_pid, b->origin_event);
}

void show_event(struct show *s, const mms_event_t *ev)
{
	mms_block_t b;
	int has = mms_replay_event_block(s->r, &b);

	if (s->json) {
		event_json(s, ev, &b, has, 1);
		return;
	}
	event_text(s, ev, &b, has);
	if (ev->kind == MMS_EV_ALLOC_FAIL) {
		/* No block: the stack of the call that was refused. */
		fputs("  asked for by:\n", s->out);
		show_stack(s, ev->stack, "    ");
	}
	if (has && (ev->kind == MMS_EV_MALLOC || ev->kind == MMS_EV_FREE)) {
		if (b.inherited)
			show_inherited(s, &b);
		else
			show_alloc_where(s, b.alloc_event, b.step, b.op);
		if (b.owner)
			fprintf(s->out, ", owner %s", b.owner);
		fputs(", by:\n", s->out);
		show_stack(s, b.stack, "    ");
		if (ev->kind == MMS_EV_FREE && has_free_stack(s, ev->stack)) {
			fputs("  freed by:\n", s->out);
			show_free_stack(s, ev->stack, "    ");
		}
	}
}

/* --- state ------------------------------------------------------------------- */

void show_where(struct show *s)
{
	mms_where_t w;
	char a[32], b[32], t[96];
	unsigned k;

	mms_replay_where(s->r, &w);
	if (s->json) {
		fprintf(s->out, "{\"position\":%" PRIu64 ",\"events\":%" PRIu64 ",\"step\":%" PRIu64
			",\"in_step\":%s,\"steps\":%" PRIu64 ",\"op\":",
			w.position, w.events, w.step, w.in_step ? "true" : "false", mms_replay_steps(s->r));
		json_str(s, w.op);
		fprintf(s->out, ",\"op_launch\":%" PRIu64 ",\"op_launches\":%" PRIu64 ",\"kernel_launches\":%" PRIu64
			",\"live_bytes\":%" PRIu64 ",\"peak_bytes\":%" PRIu64 ",\"kinds\":{",
			w.op_launch, w.op_launches, w.kernel_launches, w.live_bytes, w.peak_bytes);
		for (k = 0; k < MMS_MEM_KIND_COUNT; k++)
			fprintf(s->out,
				"%s\"%s\":{\"live_blocks\":%" PRIu64 ",\"live_bytes\":%" PRIu64 ",\"allocs\":%" PRIu64
				",\"frees\":%" PRIu64 ",\"peak_bytes\":%" PRIu64 "}",
				k ? "," : "", an_mem_names[k], w.mem[k].live_blocks, w.mem[k].live_bytes,
				w.mem[k].allocs, w.mem[k].frees, w.mem[k].peak_bytes);
		fputs("}}", s->out);
		return;
	}
	fprintf(s->out, "position %" PRIu64 " of %" PRIu64 " events", w.position, w.events);
	if (w.position)
		fprintf(s->out, " (after event #%" PRIu64 ")", w.position - 1);
	/* After the last step's end nothing happened in the step begun
	 * there (the log's steps do not count it): after the last step. */
	if (mms_replay_steps(s->r) && w.step > mms_replay_steps(s->r))
		fprintf(s->out, ", after step %" PRIu64 " of %" PRIu64, mms_replay_steps(s->r), mms_replay_steps(s->r));
	else if (mms_replay_steps(s->r))
		fprintf(s->out, ", %s %" PRIu64 " of %" PRIu64, w.in_step ? "step" : "after step", w.step,
			mms_replay_steps(s->r));
	if (w.op)
		fprintf(s->out, ", in operator %s (launch %" PRIu64 ") on %s", w.op, w.op_launch,
			thread_label(s, w.thread, t, sizeof(t)));
	fputc('\n', s->out);
	fprintf(s->out, "live: %s, %s", plural(w.mem[0].live_blocks + w.mem[1].live_blocks + w.mem[2].live_blocks, "block", t, sizeof(t)),
		human_bytes(w.live_bytes, a, sizeof(a)));
	for (k = 0; k < MMS_MEM_KIND_COUNT; k++)
		if (w.mem[k].allocs)
			fprintf(s->out, "%s%s %" PRIu64 " blocks %s", k ? "; " : " (", show_mem_name(k),
				w.mem[k].live_blocks, human_bytes(w.mem[k].live_bytes, b, sizeof(b)));
	if (w.mem[0].allocs || w.mem[1].allocs || w.mem[2].allocs)
		fputc(')', s->out);
	fprintf(s->out, "; peak so far %s\n", human_bytes(w.peak_bytes, a, sizeof(a)));
}

void show_block(struct show *s, const mms_block_t *b)
{
	mms_where_t w;
	char h[32], t[96];

	if (s->json) {
		block_json(s, b);
		return;
	}
	mms_replay_where(s->r, &w);
	fprintf(s->out, "%s block 0x%" PRIx64 ", %" PRIu64 " bytes", b->free_event == UINT64_MAX ? "live" : "freed",
		b->addr, b->size);
	if (b->size >= 1024)
		fprintf(s->out, " (%s)", human_bytes(b->size, h, sizeof(h)));
	fprintf(s->out, ", %s, allocation %" PRIu64 "\n", show_mem_name(b->mem), b->alloc_id);
	if (b->inherited)
		show_inherited(s, b);
	else {
		fprintf(s->out, "  allocated at event #%" PRIu64 " (%" PRIu64 " events ago) by %s",
			b->alloc_event, w.position - b->alloc_event, thread_label(s, b->thread, t, sizeof(t)));
		/* Step 0 is no step (outside every "step start" range). */
		if (b->step)
			fprintf(s->out, " in step %" PRIu64, b->step);
	}
	if (b->op)
		fprintf(s->out, ", operator %s (launch %" PRIu64 ")", b->op, b->op_launch);
	if (b->owner)
		fprintf(s->out, ", owner %s", b->owner);
	if (b->pool)
		fprintf(s->out, ", pool '%s'", b->pool);
	fputs(":\n", s->out);
	show_stack(s, b->stack, "    ");
	if (b->free_event != UINT64_MAX) {
		fprintf(s->out, "  freed at event #%" PRIu64 " by %s", b->free_event,
			thread_label(s, b->free_thread, t, sizeof(t)));
		if (has_free_stack(s, b->free_stack)) {
			fputs(":\n", s->out);
			show_free_stack(s, b->free_stack, "    ");
		} else {
			fputc('\n', s->out);
		}
	}
}

static int stack_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* How many stacks n groups come from (a stack's blocks of different
 * verdicts or runtimes group apart). */
static size_t distinct_stacks(const mms_stack_group_t *g, size_t n)
{
	uint32_t *ids;
	size_t i, k = 0;

	if (n < 2)
		return n;
	ids = xcalloc(n, sizeof(*ids));
	for (i = 0; i < n; i++)
		ids[i] = g[i].stack;
	qsort(ids, n, sizeof(*ids), stack_cmp);
	for (i = 0; i < n; i++)
		k += !i || ids[i] != ids[i - 1];
	free(ids);
	return k;
}

void show_groups(struct show *s, const char *title, const mms_stack_group_t *g, size_t n)
{
	uint64_t blocks = 0, bytes = 0;
	char h[32], e[32];
	size_t i, stacks, shown = s->top && n > s->top ? s->top : n;

	for (i = 0; i < n; i++) {
		blocks += g[i].blocks;
		bytes += g[i].bytes;
	}
	if (s->json) {
		fprintf(s->out, "{\"blocks\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"groups\":[", blocks, bytes);
		for (i = 0; i < shown; i++) {
			fprintf(s->out, "%s{\"blocks\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"largest\":{\"addr\":\"0x%" PRIx64
				"\",\"size\":%" PRIu64 ",\"step\":%" PRIu64 ",\"op\":",
				i ? "," : "", g[i].blocks, g[i].bytes, g[i].addr, g[i].size, g[i].step);
			json_str(s, g[i].op);
			fputc('}', s->out);
			if (g[i].mem == MMS_MEM_DEVICE)
				fprintf(s->out, ",\"memory\":\"DEVICE\",\"device\":%" PRIu32, g[i].device);
			if (g[i].reach)
				fprintf(s->out, ",\"reach\":\"%s\"", mms_reach_name(g[i].reach));
			if (g[i].indirect_blocks)
				fprintf(s->out, ",\"indirect\":{\"blocks\":%" PRIu64 ",\"bytes\":%" PRIu64 "}",
					g[i].indirect_blocks, g[i].indirect_bytes);
			fputs(",\"stack\":", s->out);
			show_stack(s, g[i].stack, "");
			fputc('}', s->out);
		}
		fprintf(s->out, "],\"groups_total\":%zu}", n);
		return;
	}
	fprintf(s->out, "%s: %" PRIu64 " block%s, %s", title, blocks, blocks == 1 ? "" : "s",
		human_bytes(bytes, h, sizeof(h)));
	stacks = distinct_stacks(g, n);
	if (stacks > 1)
		fprintf(s->out, " from %zu stacks", stacks);
	fputs(n ? "\n" : " (none)\n", s->out);
	for (i = 0; i < shown; i++) {
		fprintf(s->out, "  %s in %" PRIu64 " block%s", human_bytes(g[i].bytes, h, sizeof(h)), g[i].blocks,
			g[i].blocks == 1 ? "" : "s");
		if (g[i].mem == MMS_MEM_DEVICE)
			fprintf(s->out, " of CUDA memory on cuda:%" PRIu32, g[i].device);
		fprintf(s->out, " (largest 0x%" PRIx64 ", %s", g[i].addr, human_bytes(g[i].size, e, sizeof(e)));
		/* Step 0 is no step: a log without steps, or a block allocated
		 * between two "step start" ranges. */
		if (g[i].step)
			fprintf(s->out, ", step %" PRIu64, g[i].step);
		fprintf(s->out, "%s%s%s)", g[i].op ? ", operator " : "", g[i].op ? g[i].op : "",
			g[i].reach == MMS_REACH_INDIRECT     ? ", indirectly leaked"
			: g[i].reach == MMS_REACH_POSSIBLE   ? ", possibly leaked"
			: g[i].reach == MMS_REACH_UNRECORDED ? ", allocated before recording stopped"
							     : "");
		/* What goes with them: freeing these frees that too. */
		if (g[i].indirect_blocks)
			fprintf(s->out, "; lost with %s: %s in %" PRIu64 " block%s, indirectly leaked",
				g[i].blocks == 1 ? "it" : "them", human_bytes(g[i].indirect_bytes, e, sizeof(e)),
				g[i].indirect_blocks, g[i].indirect_blocks == 1 ? "" : "s");
		fputc('\n', s->out);
		show_stack(s, g[i].stack, "      ");
	}
	if (shown < n)
		fprintf(s->out, "  ... %zu more stack%s (--top 0 lists all)\n", n - shown, n - shown == 1 ? "" : "s");
}

static const char *signed_bytes(int64_t v, char *buf, size_t len)
{
	char h[32];

	snprintf(buf, len, "%s%s", v < 0 ? "-" : "+", human_bytes(v < 0 ? (uint64_t)-v : (uint64_t)v, h, sizeof(h)));
	return buf;
}

int show_step_replay(struct show *s, uint64_t n, mms_step_report_t **out)
{
	char what[48];
	int rc;

	if (s->progress) {
		snprintf(what, sizeof(what), "replaying step %" PRIu64 " of", n);
		progress_start(s->progress, what, s->path);
	}
	rc = mms_replay_step_report(s->r, n, out);
	if (s->progress)
		progress_end(s->progress);
	return rc;
}

/* A fork child's step that ended in the parent before the fork: what
 * the child's log could say of it (its blocks at the end: those of the
 * fork) would be wrong; the parent's log has it. Returns 1 when said. */
static int show_parents_step(struct show *s, const mms_step_report_t *rep)
{
	mms_log_fork_t fk;

	if (log_step_in_parent(s->log, rep->step, &fk) != 2)
		return 0;
	fprintf(s->out,
		"  pid %" PRIu64 "'s, before it forked this process: this log holds none of it (its steps go on with "
		"the parent's numbers); in the parent's log: msmemscope-replay %s --step %" PRIu64 "\n",
		fk.parent_pid, fk.parent_log, rep->step);
	return 1;
}

void show_step_report(struct show *s, const mms_step_report_t *rep)
{
	const mms_where_t *w = &rep->at_end;
	char a[32], b[32], c[32], t[96], why[MMS_CONFIG_STEPS_MAX * 12 + 96] = "";
	size_t i, shown = s->top && rep->nlaunches > s->top ? s->top : rep->nlaunches;
	const mms_launch_t *l;
	mms_log_fork_t fk;

	log_step_unrecorded_why(s->log, rep->step, rep->recorded, why, sizeof(why));

	if (s->json) {
		fprintf(s->out,
			"{\"step\":%" PRIu64 ",\"steps\":%" PRIu64 ",\"begin\":%" PRIu64 ",\"end\":%" PRIu64
			",\"peak_bytes\":%" PRIu64 ",\"peak_event\":%" PRIu64 ",\"allocs\":%" PRIu64
			",\"frees\":%" PRIu64 ",\"bytes_allocated\":%" PRIu64 ",\"bytes_freed\":%" PRIu64
			",\"delta_bytes\":%" PRId64 ",\"recorded\":\"%s\",\"state\":",
			rep->step, mms_replay_steps(s->r), rep->begin, rep->end, rep->peak_bytes, rep->peak_event,
			rep->allocs, rep->frees, rep->bytes_allocated, rep->bytes_freed, rep->delta_bytes,
			mms_step_recorded_name(rep->recorded));
		show_where(s);
		fputs(",\"kept\":", s->out);
		show_groups(s, NULL, rep->kept, rep->nkept);
		fputs(",\"launches\":[", s->out);
		for (i = 0; i < rep->nlaunches; i++) {
			l = &rep->launches[i];
			fprintf(s->out, "%s{\"launch\":%" PRIu64 ",\"name\":", i ? "," : "", l->launch);
			json_str(s, l->name);
			json_thread(s, "thread", l->thread);
			fprintf(s->out, ",\"begin_event\":%" PRIu64 ",\"end_event\":", l->begin_event);
			if (l->end_event == UINT64_MAX)
				fputs("null", s->out);
			else
				fprintf(s->out, "%" PRIu64, l->end_event);
			fprintf(s->out, ",\"allocs\":%" PRIu64 ",\"frees\":%" PRIu64 ",\"bytes_allocated\":%" PRIu64
				",\"bytes_freed\":%" PRIu64 ",\"delta_bytes\":%" PRId64 "}",
				l->allocs, l->frees, l->bytes_allocated, l->bytes_freed, l->delta_bytes);
		}
		fputs("],\"owners\":[", s->out);
		for (i = 0; i < rep->nowners; i++) {
			fprintf(s->out, "%s{\"owner\":", i ? "," : "");
			json_str(s, rep->owners[i].owner);
			fprintf(s->out, ",\"blocks\":%" PRIu64 ",\"bytes\":%" PRIu64 "}", rep->owners[i].blocks,
				rep->owners[i].bytes);
		}
		fputs("]}", s->out);
		return;
	}
	fprintf(s->out, "%s: step %" PRIu64 " of %" PRIu64, s->path, rep->step, mms_replay_steps(s->r));
	if (rep->end > rep->begin)
		fprintf(s->out, " (events #%" PRIu64 "..#%" PRIu64 ")\n", rep->begin, rep->end - 1);
	else
		fputs(" (no event in this log)\n", s->out);
	if (show_parents_step(s, rep))
		return;
	if (rep->recorded == MMS_STEP_RECORDED_NONE)
		fprintf(s->out,
			"  not recorded (%s): its memory events are not in the log; what it allocated and "
			"freed is not below\n",
			why);
	else if (rep->recorded == MMS_STEP_RECORDED_PART)
		fprintf(s->out, "  recorded in part (%s): %s\n", why,
			log_step_in_parent(s->log, rep->step, &fk)
				? "what it allocated and freed before the fork is in the parent's log, not below"
				: "collection was off for some of it; what it allocated and freed then is not below");
	fprintf(s->out, "  at its end: %s live, %s%s\n",
		plural(w->mem[0].live_blocks + w->mem[1].live_blocks + w->mem[2].live_blocks, "block", c, sizeof(c)),
		human_bytes(w->live_bytes, a, sizeof(a)),
		rep->recorded == MMS_STEP_RECORDED_ALL ? "" : " (of the blocks the log recorded)");
	if (rep->recorded == MMS_STEP_RECORDED_NONE) {
		fputs("  peak within the step, what it allocated and freed: not known\n", s->out);
	} else {
		int part = rep->recorded == MMS_STEP_RECORDED_PART;

		fprintf(s->out, "  peak within the step: %s (at event #%" PRIu64 "%s)\n",
			human_bytes(rep->peak_bytes, a, sizeof(a)), rep->peak_event,
			part ? ", in the part recorded" : "");
		fprintf(s->out, "  allocated %s, %s; ", plural(rep->allocs, "block", c, sizeof(c)),
			human_bytes(rep->bytes_allocated, a, sizeof(a)));
		fprintf(s->out, "freed %s, %s; live bytes %s%s\n", plural(rep->frees, "block", c, sizeof(c)),
			human_bytes(rep->bytes_freed, b, sizeof(b)), signed_bytes(rep->delta_bytes, a, sizeof(a)),
			part ? " (in the part recorded)" : "");
	}
	fputc('\n', s->out);
	if (rep->recorded == MMS_STEP_RECORDED_NONE)
		fputs("Allocated in this step and still live at its end: not known (not recorded)\n", s->out);
	else
		show_groups(s,
			    rep->recorded == MMS_STEP_RECORDED_PART
				    ? "Allocated in this step (in the part recorded) and still live at its end"
				    : "Allocated in this step and still live at its end",
			    rep->kept, rep->nkept);
	fputc('\n', s->out);
	fprintf(s->out, "Operator launches: %zu\n", rep->nlaunches);
	if (rep->nlaunches)
		fprintf(s->out, "  %7s  %-20s %-14s %-17s %7s %7s %12s\n", "launch", "operator", "thread", "events",
			"allocs", "frees", "net");
	for (i = 0; i < shown; i++) {
		char ev[48];

		l = &rep->launches[i];
		if (l->end_event == UINT64_MAX)
			snprintf(ev, sizeof(ev), "#%" PRIu64 "..(open)", l->begin_event);
		else
			snprintf(ev, sizeof(ev), "#%" PRIu64 "..#%" PRIu64, l->begin_event, l->end_event);
		fprintf(s->out, "  %7" PRIu64 "  %-20s %-14s %-17s %7" PRIu64 " %7" PRIu64 " %12s\n", l->launch,
			l->name ? l->name : "?", thread_label(s, l->thread, t, sizeof(t)), ev, l->allocs, l->frees,
			signed_bytes(l->delta_bytes, c, sizeof(c)));
	}
	if (shown < rep->nlaunches)
		fprintf(s->out, "  ... %zu more launches (--top 0 lists all)\n", rep->nlaunches - shown);
	fputc('\n', s->out);
	fprintf(s->out, "Live bytes by owner at the end of the step:%s\n", rep->nowners ? "" : " (nothing live)");
	for (i = 0; i < rep->nowners; i++)
		fprintf(s->out, "  %12s in %6" PRIu64 " block%s  %s\n", human_bytes(rep->owners[i].bytes, a, sizeof(a)),
			rep->owners[i].blocks, rep->owners[i].blocks == 1 ? " " : "s",
			rep->owners[i].owner ? rep->owners[i].owner : "(no owner tag)");
}
