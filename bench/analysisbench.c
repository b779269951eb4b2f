/* SPDX-License-Identifier: MIT */
/* analysisbench.c: times the analyses of the replay library over one log
 * (events per CPU second of the thread that runs them, one core) and samples the process's anonymous
 * memory while each runs (the log itself is a shared read-only mapping
 * of the page cache, which does not count).
 *
 * Usage: analysisbench LOG */
#define _GNU_SOURCE /* RUSAGE_THREAD (measure.h) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "measure.h"
#include "msmemscope-replay.h"

static void die(const char *what, int rc)
{
	fprintf(stderr, "analysisbench: %s: %s\n", what, mms_strerror(rc));
	exit(1);
}

/* CPU time of the thread that ran it: the figure for one core, which
 * other work on a shared machine does not lower. */
static void report(struct measure *m, const char *name, uint64_t events)
{
	uint64_t kib = measure_end(m);

	printf("%-12s %.3f s (%.3f s CPU): %.1f million events/s per CPU second; anonymous memory at most %" PRIu64
	       " KiB over %" PRIu64 " KiB before\n",
	       name, m->wall, m->cpu, (double)events / m->cpu / 1e6, kib, m->base);
}

int main(int argc, char **argv)
{
	mms_decompose_t *d;
	mms_inefficient_options_t io = { .keep = 10 };
	mms_inefficient_t *ineff;
	mms_log_info_t info;
	struct measure m;
	mms_log_t *log;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: analysisbench LOG\n");
		return 2;
	}
	if ((rc = mms_log_open(argv[1], &log)))
		die(argv[1], rc);
	mms_log_get_info(log, &info);
	printf("log          %s: %" PRIu64 " events\n", argv[1], info.events);

	measure_start(&m);
	if ((rc = mms_decompose_run(log, NULL, &d)))
		die("decompose", rc);
	report(&m, "decompose", info.events);
	printf("             end %" PRIu64 " bytes in %" PRIu64 " blocks, %zu nodes; peak %" PRIu64 " bytes\n",
	       d->end->bytes, d->end->blocks, d->end->n, d->peak->bytes);
	mms_decompose_free(d);

	measure_start(&m);
	if ((rc = mms_inefficient_run(log, &io, &ineff)))
		die("inefficient", rc);
	report(&m, "inefficient", info.events);
	printf("             %" PRIu64 " blocks: %" PRIu64 " early_allocation, %" PRIu64 " late_deallocation, %" PRIu64
	       " temporary_idleness; %" PRIu64 " accesses (the 10 largest kept, as the CLI's --top)\n",
	       ineff->flagged, ineff->count[0], ineff->count[1], ineff->count[2], ineff->accesses);
	mms_inefficient_free(ineff);
	mms_log_close(log);
	return 0;
}
