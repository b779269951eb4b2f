/* SPDX-License-Identifier: MIT */
/* logwords.c: how a log ends, in the words every report of both programs
 * uses, so that no report calls leaked what a cut log only stopped
 * showing. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "logwords.h"

const char *log_cut_why(const mms_log_info_t *in, char *buf, size_t cap)
{
	if (in->cut_what)
		snprintf(buf, cap, "%s", in->cut_what);
	else
		snprintf(buf, cap, "recording stopped early (%s)",
			 in->cut_errno ? strerror(in->cut_errno) : "no reason recorded");
	return buf;
}

int log_ends_at_exit(const mms_log_info_t *in)
{
	return in->complete && !in->cut && !in->damaged;
}

int log_stops_early(const mms_log_info_t *in)
{
	return in->cut || (in->damaged && in->stopped);
}

const char *log_end_label(const mms_log_info_t *in)
{
	if (log_stops_early(in))
		return in->cut ? "the cut" : "the damage";
	if (log_ends_at_exit(in))
		return "exit";
	return in->exec_away && !in->damaged ? "exec" : "log end";
}

const char *log_live_when(const mms_log_info_t *in, char *buf, size_t cap)
{
	if (in->cut)
		snprintf(buf, cap, "when recording stopped at event %" PRIu64 " (the log is cut; not leaks)", in->events);
	else if (in->damaged && in->stopped)
		snprintf(buf, cap, "at event %" PRIu64 ", where the damage stops the replay (not leaks)", in->events);
	else if (log_ends_at_exit(in))
		snprintf(buf, cap, "at exit");
	else if (in->exec_away && !in->damaged)
		snprintf(buf, cap, "at exec");
	else
		snprintf(buf, cap, "at log end");
	return buf;
}

void log_json_end(FILE *f, const mms_log_info_t *in)
{
	if (in->cut)
		fprintf(f, "\"cut_at_byte\":%" PRIu64 ",", in->cut_offset);
	else
		fputs("\"cut_at_byte\":null,", f);
	if (in->stopped)
		fprintf(f, "\"stopped_at_event\":%" PRIu64, in->events);
	else
		fputs("\"stopped_at_event\":null", f);
}

void log_warn_damage(const char *name, const mms_log_info_t *in, void (*say)(const char *line))
{
	char why[192], *line;

	if (in->cut) {
		line = xasprintf("%s: the log is cut at byte %" PRIu64 ": %s; the replay stops at event %" PRIu64
				 ", where records may be missing",
				 name, in->cut_offset, log_cut_why(in, why, sizeof(why)), in->events);
		say(line);
		free(line);
	}
	if (in->damaged) {
		char stop[96];

		if (in->stopped)
			snprintf(stop, sizeof(stop), "the replay stops at event %" PRIu64 ", where records may be missing",
				 in->events);
		else
			snprintf(stop, sizeof(stop), "the replay reads on past it");
		line = xasprintf("%s: damaged at byte %" PRIu64 ": %s (%" PRIu64 " place%s); %s", name, in->damage_offset,
				 in->damage ? in->damage : mms_strerror(in->damage_error), in->damage_count,
				 in->damage_count == 1 ? "" : "s", stop);
		say(line);
		free(line);
	}
	if (in->bad_stacks) {
		line = xasprintf("%s: allocation stacks could not be read %" PRIu64 " time%s: their records in the log "
				 "are damaged; they are shown without frames",
				 name, in->bad_stacks, in->bad_stacks == 1 ? "" : "s");
		say(line);
		free(line);
	}
	if (in->lost_events) {
		line = xasprintf("%s: %" PRIu64 " events were not recorded (signals that arrived inside a hook)", name,
				 in->lost_events);
		say(line);
		free(line);
	}
}
