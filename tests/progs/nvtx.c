/* SPDX-License-Identifier: MIT */
/* nvtx.c: a program annotated with NVTX only (the nvtx3 headers, no GPU and
 * no msmemscope call), doing known things to memory in known ranges, so
 * that nvtx.sh can check what the recorder makes of each NVTX call.
 *
 * Usage: nvtx            steps marked by nvtxRangeStartA("step start")
 *        nvtx pushsteps  steps marked by nvtxRangePushA("step start")
 *
 * Set-up: the main thread names itself "nvtx-main" (nvtxNameOsThreadA),
 * marks "setup", creates the domains "io" (nvtxDomainCreateA) and "net"
 * (nvtxDomainCreateW), registers "read" in io and L"wide-reg" in the
 * default domain, and names a category (ignored).
 *
 * Then 3 steps, each with these launches, in order (7 a step):
 *   outer      malloc(100), kept (one block a step, never freed), and
 *     inner    nested in outer: malloc(200), freed
 *   größe      nvtxRangePushW: malloc(300), freed
 *   io::write  nvtxDomainRangePushEx in io, ASCII message: malloc(16), freed
 *   io::read   the same with the registered string: malloc(32), freed
 *   wide-reg   nvtxRangePushEx, registered wide string: no memory
 *   async      nvtxRangeStartA/End on this thread: malloc(400), freed
 * and the marks "tick" (nvtxMarkA) and "tock" (nvtxMarkW).
 *
 * After the steps, in no step:
 *   io::a, net::b   pushed in io then net, popped in io first: the launch
 *                   io::a ends with net::b (malloc(10), freed, between the
 *                   two pops, counts in both)
 *   handoff         started here, ended by another thread, started
 *                   before and told the id through a pipe (it marks
 *                   "ended elsewhere" first); this thread then mallocs
 *                   and frees 50 bytes, and marks "after": its next NVTX
 *                   call, where the launch ends
 *   x, y            start x, start y, end x, end y: x ends with y
 *
 * Output: "nvtx push=P pop=Q gap=G range=R": what nvtxRangePushA and
 * nvtxRangePop returned (-2, NVTX_NO_PUSH_POP_TRACKING, with and without a
 * tool that does not count levels); the bytes between a block allocated
 * before the first NVTX call (which loads the injection library) and the
 * first block kept after it, the same under the recorder as without it;
 * and whether range ids were 0 (unset: no tool) or not (set). */
#include <pthread.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <wchar.h>

#include <nvtx3/nvToolsExt.h>

#include "progs.h"

#define STEPS 3

static nvtxDomainHandle_t io, net;
static nvtxStringHandle_t reg_read, reg_wide;

static void *xmalloc(size_t n)
{
	void *p = malloc(n);

	if (!p)
		prog_die("nvtx: malloc failed");
	return p;
}

static void churn(size_t n)
{
	free(xmalloc(n));
}

static nvtxEventAttributes_t attr_ascii(const char *s)
{
	nvtxEventAttributes_t a = { 0 };

	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = s;
	return a;
}

static nvtxEventAttributes_t attr_registered(nvtxStringHandle_t h)
{
	nvtxEventAttributes_t a = { 0 };

	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.colorType = NVTX_COLOR_ARGB;
	a.color = 0xff00ff00;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = h;
	return a;
}

/* One step's launches and marks; returns the block it keeps. */
static void *step_body(int *push_ret, int *pop_ret)
{
	nvtxEventAttributes_t a;
	nvtxRangeId_t r;
	void *kept;

	*push_ret = nvtxRangePushA("outer");
	kept = xmalloc(100);
	nvtxRangePushA("inner");
	churn(200);
	nvtxRangePop();
	*pop_ret = nvtxRangePop();

	nvtxRangePushW(L"gr\u00f6\u00dfe");
	churn(300);
	nvtxRangePop();

	a = attr_ascii("write");
	nvtxDomainRangePushEx(io, &a);
	churn(16);
	nvtxDomainRangePop(io);

	a = attr_registered(reg_read);
	nvtxDomainRangePushEx(io, &a);
	churn(32);
	nvtxDomainRangePop(io);

	a = attr_registered(reg_wide);
	nvtxRangePushEx(&a);
	nvtxRangePop();

	r = nvtxRangeStartA("async");
	churn(400);
	nvtxRangeEnd(r);

	nvtxMarkA("tick");
	nvtxMarkW(L"tock");
	return kept;
}

/* Ends the range whose id comes through the pipe fd. */
static void *ender(void *arg)
{
	nvtxRangeId_t id;

	if (read(*(int *)arg, &id, sizeof(id)) != (ssize_t)sizeof(id))
		prog_die("nvtx: no range id came");
	nvtxMarkA("ended elsewhere");
	nvtxRangeEnd(id);
	return NULL;
}

int main(int argc, char **argv)
{
	int push_steps = argc == 2 && !strcmp(argv[1], "pushsteps");
	void *kept[STEPS];
	int push_ret = 0, pop_ret = 0;
	nvtxRangeId_t handoff, x, y, any = 0;
	char *before;
	pthread_t t;
	int fds[2];

	if (argc > 2 || (argc == 2 && !push_steps))
		prog_die("usage: nvtx [pushsteps]");
	before = xmalloc(24);
	nvtxInitialize(NULL);
	nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "nvtx-main");
	nvtxNameCategoryA(1, "ignored");
	nvtxMarkA("setup");
	io = nvtxDomainCreateA("io");
	net = nvtxDomainCreateW(L"net");
	reg_read = nvtxDomainRegisterStringA(io, "read");
	reg_wide = nvtxDomainRegisterStringW(NULL, L"wide-reg");

	for (int s = 0; s < STEPS; s++) {
		nvtxRangeId_t step = 0;

		if (push_steps)
			nvtxRangePushA("step start");
		else
			any |= step = nvtxRangeStartA("step start");
		kept[s] = step_body(&push_ret, &pop_ret);
		if (push_steps)
			nvtxRangePop();
		else
			nvtxRangeEnd(step);
	}

	{
		nvtxEventAttributes_t a = attr_ascii("a"), b = attr_ascii("b");

		nvtxDomainRangePushEx(io, &a);
		nvtxDomainRangePushEx(net, &b);
		nvtxDomainRangePop(io);
		churn(10);
		nvtxDomainRangePop(net);
	}

	/* The thread is there before the range starts, so that what
	 * pthread_create allocates is not in the range. */
	if (pipe(fds) || pthread_create(&t, NULL, ender, &fds[0]))
		prog_die("nvtx: cannot start the ending thread");
	any |= handoff = nvtxRangeStartA("handoff");
	if (write(fds[1], &handoff, sizeof(handoff)) != (ssize_t)sizeof(handoff) || pthread_join(t, NULL))
		prog_die("nvtx: the ending thread failed");
	churn(50);
	nvtxMarkA("after");

	any |= x = nvtxRangeStartA("x");
	any |= y = nvtxRangeStartA("y");
	nvtxRangeEnd(x);
	nvtxRangeEnd(y);

	prog_say(1, "nvtx push=%d pop=%d gap=%td range=%s\n", push_ret, pop_ret, (char *)kept[0] - before,
		 any ? "set" : "unset");
	free(before);
	return 0;
}
