/* SPDX-License-Identifier: MIT */
/* symcheck.c: prints the symbolized allocation stacks of a log's MALLOC
 * events of the given sizes, one frame field a line, for
 * tests/progs/symbolize.sh to compare with the program's source.
 *
 * Usage: symcheck LOG SIZE...
 * Prints "SIZE K FIELD VALUE" for frame K (inlined frames counted) of the
 * first allocation of each SIZE: fields ip, fn, file, line, inlined,
 * module, off and text (mms_frame_format()); "-" for a NULL string. Then
 * "SIZE - frames N". Exits 1 on an error of the library, with a message. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "msmemscope-replay.h"

#define MAX_IPS 64
#define MAX_FRAMES 16

static const char *str(const char *s)
{
	return s ? s : "-";
}

static int print_stack(mms_symbolizer_t *sym, const mms_log_t *log, uint64_t size, uint32_t stack)
{
	uint64_t ips[MAX_IPS];
	mms_frame_t f[MAX_FRAMES];
	char text[1024];
	int depth, n, k = 0;

	depth = mms_log_stack(log, stack, ips, MAX_IPS);
	if (depth < 0)
		return depth;
	for (int i = 0; i < depth && i < MAX_IPS; i++) {
		n = mms_symbolize(sym, ips[i], f, MAX_FRAMES);
		if (n < 0)
			return n;
		for (int j = 0; j < n; j++, k++) {
			mms_frame_format(&f[j], text, sizeof(text));
			printf("%" PRIu64 " %d ip 0x%" PRIx64 "\n", size, k, f[j].ip);
			printf("%" PRIu64 " %d fn %s\n", size, k, str(f[j].function));
			printf("%" PRIu64 " %d file %s\n", size, k, str(f[j].file));
			printf("%" PRIu64 " %d line %" PRIu32 "\n", size, k, f[j].line);
			printf("%" PRIu64 " %d inlined %d\n", size, k, f[j].inlined);
			printf("%" PRIu64 " %d module %s\n", size, k, str(f[j].module));
			printf("%" PRIu64 " %d off 0x%" PRIx64 "\n", size, k, f[j].module_offset);
			printf("%" PRIu64 " %d text %s\n", size, k, text);
		}
	}
	printf("%" PRIu64 " - frames %d\n", size, k);
	return 0;
}

int main(int argc, char **argv)
{
	mms_symbolizer_t *sym;
	mms_log_t *log;
	mms_iter_t *it;
	mms_event_t ev;
	int rc, seen[16] = { 0 };

	if (argc < 3 || argc > 18) {
		fprintf(stderr, "usage: symcheck LOG SIZE...\n");
		return 2;
	}
	rc = mms_log_open(argv[1], &log);
	if (rc) {
		fprintf(stderr, "symcheck: %s: %s\n", argv[1], mms_strerror(rc));
		return 1;
	}
	rc = mms_symbolizer_open(log, &sym);
	if (rc)
		goto fail;
	rc = mms_iter_open(log, &it);
	if (rc)
		goto fail_sym;
	while ((rc = mms_iter_next(it, &ev)) == 1) {
		if (ev.kind != MMS_EV_MALLOC)
			continue;
		for (int i = 2; i < argc; i++) {
			if (seen[i - 2] || ev.size != strtoull(argv[i], NULL, 10))
				continue;
			seen[i - 2] = 1;
			rc = print_stack(sym, log, ev.size, ev.stack);
			if (rc)
				goto fail_it;
		}
	}
fail_it:
	mms_iter_close(it);
fail_sym:
	mms_symbolizer_close(sym);
fail:
	mms_log_close(log);
	if (rc) {
		fprintf(stderr, "symcheck: %s: %s\n", argv[1], mms_strerror(rc));
		return 1;
	}
	return 0;
}
