/* SPDX-License-Identifier: MIT */
/* mklog.c: writes the small synthetic logs that cli.test replays with
 * msmemscope-replay: ok.mms, cut.mms, damaged.mms and full.mms (recorded
 * with stacks, whose recorder's tables of stack frames and names filled
 * up) in the current directory. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "logbuild.h"

/* Two threads: 3 mallocs (one a realloc), 2 frees, one mmap, one step. */
static struct lb *base(void)
{
	struct lb *b = lb_new(4096);

	lb_chunk(b);
	lb_segment(b, 0, 10);
	lb_thread(b, 10, 0, 100);
	lb_meta(b, 10, "exe", "/usr/bin/prog");
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_INIT, 11);
	lb_alloc(b, 12, MMS_ALLOC_MALLOC, 0x1000, 100, 0);
	lb_free(b, 13, MMS_FREE_REALLOC, 0x1000);
	lb_alloc(b, 14, MMS_ALLOC_REALLOC, 0x2000, 300, 0);
	lb_event0(b, MMS_TAG_STEP, 15);
	lb_mmap(b, 16, 0x100000, 0x2000);
	lb_chunk(b);
	lb_segment(b, 1, 12);
	lb_thread(b, 12, 1, 101);
	lb_alloc(b, 13, MMS_ALLOC_CALLOC, 0x3000, 24, 0);
	lb_free(b, 17, MMS_FREE_FREE, 0x3000);
	return b;
}

int main(void)
{
	static const uint8_t bad[] = { 0xbe };
	struct lb *b = base();

	lb_use(b, 0);
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FINI, 20);
	if (lb_write(b, "ok.mms", SIZE_MAX))
		goto fail;
	lb_destroy(b);

	b = base();
	lb_header(b)->flags = MMS_FLAG_CUT;
	lb_header(b)->cut_errno = ENOSPC;
	if (lb_write(b, "cut.mms", SIZE_MAX))
		goto fail;
	lb_destroy(b);

	b = base();
	lb_raw(b, bad, sizeof(bad));
	if (lb_write(b, "damaged.mms", SIZE_MAX))
		goto fail;
	lb_destroy(b);

	b = base();
	lb_use(b, 0);
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FINI, 20);
	lb_header(b)->flags = MMS_FLAG_STACKS_FULL | MMS_FLAG_STRINGS_FULL;
	lb_header(b)->call_stack_depth = 8;
	if (lb_write(b, "full.mms", SIZE_MAX))
		goto fail;
	lb_destroy(b);
	return 0;
fail:
	perror("mklog");
	return 1;
}
