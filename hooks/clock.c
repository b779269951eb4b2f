/* SPDX-License-Identifier: MIT */
/* clock.c: chooses how events are stamped: the invariant TSC when the CPU
 * reports one, else one global atomic counter. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "hooks-int.h"

int mms__clock_tsc;
uint64_t mms__counter = 1;

/* True when /proc/cpuinfo lists both constant_tsc and nonstop_tsc: the TSC
 * ticks at one rate in every power state, so stamps from different cores
 * compare. Read once at start-up, never on the hot path. */
static int cpu_has_invariant_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	char line[4096];
	int constant = 0, nonstop = 0;
	FILE *f = fopen("/proc/cpuinfo", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "flags", 5))
			continue;
		constant = strstr(line, " constant_tsc") != NULL;
		nonstop = strstr(line, " nonstop_tsc") != NULL;
		break;
	}
	fclose(f);
	return constant && nonstop;
#else
	return 0;
#endif
}

void mms__clock_init(int force_counter)
{
	mms__clock_tsc = !force_counter && cpu_has_invariant_tsc();
}

uint64_t mms__realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
