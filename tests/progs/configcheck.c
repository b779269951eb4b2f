/* SPDX-License-Identifier: MIT */
/* configcheck.c: prints the recording configuration a log keeps, as the
 * library reads it back (mms_log_config, mms_config_format), for
 * tests/progs/config.sh.
 *
 * Usage: configcheck LOG
 * Prints "config=TEXT unknown=N bad=N", and on a second line what the
 * log's header says the recorder did: "clock=counter|tsc depth=N".
 * Exits 1 when the log cannot be opened, 2 when it keeps no
 * configuration. */
#include <stdio.h>

#include "msmemscope-replay.h"

int main(int argc, char **argv)
{
	char text[1024];
	mms_log_info_t info;
	mms_config_t cfg;
	mms_log_t *log;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: configcheck LOG\n");
		return 1;
	}
	rc = mms_log_open(argv[1], &log);
	if (rc) {
		fprintf(stderr, "configcheck: %s: %s\n", argv[1], mms_strerror(rc));
		return 1;
	}
	rc = mms_log_config(log, &cfg);
	mms_config_format(&cfg, text, sizeof text);
	printf("config=%s unknown=%u bad=%u\n", text, cfg.unknown, cfg.bad);
	mms_log_get_info(log, &info);
	printf("clock=%s depth=%u\n", info.clock == 2 ? "counter" : "tsc", info.call_stack_depth);
	mms_log_close(log);
	return rc ? 2 : 0;
}
