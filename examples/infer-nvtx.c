/* SPDX-License-Identifier: MIT */
/* infer-nvtx.c: the bundled example, examples/infer.c, with its steps and
 * operator launches marked by NVTX instead of msmemscope's API, as they are
 * in a program annotated for Nsight Systems: each operator is a pushed
 * range (nvtxRangePushA/nvtxRangePop), each step a range named "step start"
 * (nvtxRangeStartA/nvtxRangeEnd). The owners, the pool and the watch stay
 * msmemscope's: NVTX has no words for them. Under msmemscope both builds
 * give the same steps, launches, leaks and watch report
 * (tests/progs/nvtxinfer.sh); infer.c itself is compiled unchanged. */
#include <nvtx3/nvToolsExt.h>

#include "msmemscope.h"

/* msmemscope_step() ends a step and begins the next, step 1 beginning with
 * the program and the last ending with it: the first "step start" range
 * starts before main and the last ends after it. */
static nvtxRangeId_t step_range;

__attribute__((constructor)) static void steps_begin(void)
{
	step_range = nvtxRangeStartA("step start");
}

static void step_next(void)
{
	nvtxRangeEnd(step_range);
	step_range = nvtxRangeStartA("step start");
}

__attribute__((destructor)) static void steps_end(void)
{
	nvtxRangeEnd(step_range);
}

#define msmemscope_op_begin(name) nvtxRangePushA(name)
#define msmemscope_op_end() nvtxRangePop()
#define msmemscope_step() step_next()

#include "infer.c"
