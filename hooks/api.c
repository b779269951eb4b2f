/* SPDX-License-Identifier: MIT */
/* api.c: the real instrumentation API (msmemscope.h and the mstx names),
 * which interposes on the no-op stubs of -lmsmemscope. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "hooks-int.h"
#include "log.h"
#include "stamp.h"
#include "msmemscope.h"

/* Step number as the hooks see it, for --steps: 1 + msmemscope_step()
 * calls, or the ordinal of the current "step start" range; while the
 * program has marked neither, 1 + the steps inferred from its optimizer
 * (msmemscope__optimizer_step), as a replay numbers them. */
static uint32_t cur_step = 1;
static uint32_t marked_steps;  /* msmemscope_step() calls */
static int in_step_range;      /* ranges mode: inside a "step start" range */
static int step_by_ranges;
static uint64_t step_range_id;
static uint64_t next_range_id = 1;
static int ranges_seen;        /* an MSTX range began: inferred steps no longer count */
static int collect_on = 1;     /* msmemscope_start/stop in deferred mode */
static int steps_on = 1;       /* the --steps filter: the step now is one of them */

void mms__steps_update(void)
{
	int on = 1;

	if (mms__config.nsteps) {
		on = 0;
		if (!step_by_ranges || in_step_range)
			for (uint32_t i = 0; i < mms__config.nsteps; i++)
				on |= mms__config.steps[i] == cur_step;
	}
	steps_on = on;
	mms__collecting = collect_on && steps_on;
}

int mms__api_init(void)
{
	collect_on = !mms__config.deferred;
	mms__steps_update();
	return 0;
}

/* Structure events are recorded whenever the log is open, collected or
 * not, so a replay always knows the step and operator it is in. */
struct mms_thread *mms__api_enter(void)
{
	struct mms_thread *t;

	if (mms__tls_busy || !mms__recording_now())
		return NULL;
	mms__tls_busy = 1;
	t = mms__thread();
	if (!t)
		mms__tls_busy = 0;
	return t;
}

void mms__api_leave(void)
{
	mms__tls_busy = 0;
}

/* Writes a record of `tag` with up to three varint fields. */
static void rec_simple(struct mms_thread *t, uint8_t tag, int n, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t stamp = mms__stamp_obtain();
	uint8_t *p = mms__rec_begin(t, 1 + 4 * 10);

	if (!p)
		return;
	p = mms__rec_head(t, p, tag, stamp);
	if (n > 0)
		p = mms_put_u(p, a);
	if (n > 1)
		p = mms_put_u(p, b);
	if (n > 2)
		p = mms_put_u(p, c);
	mms__rec_commit(t, p);
}

/* Applies the --steps filter at a step's edge (t: the thread at the
 * edge) and, where the filter turned on or off, writes a COLLECT record
 * saying so (format 17), whether msmemscope_stop() has collection off
 * too or not: a replay then knows which steps were recorded, and that a
 * block live at the end may have been freed in one that was not.
 * Collection is on where both the program's and the filter's last
 * record say on. */
static void steps_edge(struct mms_thread *t)
{
	int was = steps_on;

	mms__steps_update();
	if (mms__config.nsteps && steps_on != was)
		rec_simple(t, MMS_TAG_COLLECT, 1, MMS_COLLECT_BY_STEPS | (uint64_t)steps_on, 0, 0);
}

void mms__api_collect_note(struct mms_thread *t)
{
	if (mms__config.deferred)
		rec_simple(t, MMS_TAG_COLLECT, 1, (uint64_t)collect_on, 0, 0);
	if (mms__config.nsteps)
		rec_simple(t, MMS_TAG_COLLECT, 1, MMS_COLLECT_BY_STEPS | (uint64_t)steps_on, 0, 0);
}

/* An event of a name, then n - 1 (0 or 1) more fields: extra. */
static void named_event(uint8_t tag, const char *name, int n, uint64_t extra)
{
	struct mms_thread *t = mms__api_enter();

	if (!t)
		return;
	rec_simple(t, tag, n, mms__intern_string(t, name), extra, 0);
	mms__api_leave();
}

/* The calling thread, for an event recorded inside the guard: NULL when
 * nothing is recorded. */
static struct mms_thread *api_thread(void)
{
	return mms__recording_now() ? mms__thread() : NULL;
}

/* Takes the reentrancy guard for a call that runs the gdb and watch checks
 * whether or not it records: 0 when the thread is already inside the
 * recorder (a signal handler's call), which then does nothing. */
static int api_guard(void)
{
	if (unlikely(mms__tls_busy))
		return 0;
	mms__tls_busy = 1;
	return 1;
}

/* Ends a step (who: enum mms_step_source): writes its STEP record and
 * begins the next step: the full guard check, the --steps filter, gdb's
 * step stop. From the program's first mark on, its marks count the
 * steps; an inferred step counts, and is written, only while the
 * program has marked none (no msmemscope_step(), no MSTX range): those
 * written before its first mark a replay leaves out. */
static void step_ends(unsigned who)
{
	struct mms_thread *t;
	uint32_t next;

	if (who != MMS_STEP_BY_PROGRAM &&
	    (__atomic_load_n(&marked_steps, __ATOMIC_RELAXED) || __atomic_load_n(&ranges_seen, __ATOMIC_RELAXED)))
		return;
	t = mms__api_enter();
	if (!t)
		return;
	rec_simple(t, (uint8_t)(MMS_TAG_STEP | who), 0, 0, 0, 0);
	if (who == MMS_STEP_BY_PROGRAM)
		next = 1 + __atomic_add_fetch(&marked_steps, 1, __ATOMIC_RELAXED);
	else
		next = __atomic_load_n(&cur_step, __ATOMIC_RELAXED) + 1;
	mms__guard_check_all(t);
	__atomic_store_n(&cur_step, next, __ATOMIC_RELAXED);
	steps_edge(t);
	mms__gdb_step_begins(next);
	mms__api_leave();
}

MMS_EXPORT void msmemscope_step(void)
{
	step_ends(MMS_STEP_BY_PROGRAM);
}

/* Which optimizer's steps are the inferred steps, where a program steps
 * several (a GAN's discriminator and generator, an actor and a critic):
 * one iteration of its loop is one step, ending where the iteration ends,
 * at its last optimizer's step, so that what an iteration keeps until the
 * next one reassigns it (its losses, and through them their graphs) is
 * not called a per-step leak. The first optimizer seen begins an
 * iteration; the last of one is the optimizer that stepped just before
 * the first one stepped again, found at the end of the first iteration:
 * until then the first optimizer's steps count (all of them, in a
 * program with one). One that steps again before the first does takes
 * its place (the program went on to other optimizers: a second stage of
 * training). Keys tell the optimizers apart (the package numbers them),
 * 0 for unknown: every such step counts, and so does every step once
 * more than OPT_KEYS optimizers stepped (a program that makes a new one
 * for each iteration: no key comes back). Under opt_lock; the package
 * calls with the GIL held. */
#define OPT_KEYS 4
static int opt_lock;
static uint64_t opt_first;           /* the first optimizer of an iteration, 0: none yet */
static uint64_t opt_last;            /* the last one, 0 while not known */
static uint64_t opt_prev;            /* the optimizer that stepped last */
static uint64_t opt_since[OPT_KEYS]; /* the others that stepped since opt_first did */
static unsigned opt_nsince;
static uint64_t opt_seen[OPT_KEYS];  /* the optimizers that stepped */
static unsigned opt_nseen;
static int opt_many;                 /* more of them than that: every step counts */
static __thread uint64_t opt_ending; /* noted by msmemscope__optimizer_key */

/* Whether key is among the first n of keys. */
static int key_in(const uint64_t *keys, unsigned n, uint64_t key)
{
	for (unsigned i = 0; i < n; i++)
		if (keys[i] == key)
			return 1;
	return 0;
}

static int optimizer_counts(uint64_t key)
{
	int counts;

	if (!key)
		return 1;
	mms__spin_lock(&opt_lock);
	if (!key_in(opt_seen, opt_nseen, key)) {
		if (opt_nseen < OPT_KEYS)
			opt_seen[opt_nseen++] = key;
		else
			opt_many = 1;
	}
	if (key == opt_first) {
		if (opt_prev != opt_first)
			opt_last = opt_prev;
		opt_nsince = 0;
	} else if (!opt_first || key_in(opt_since, opt_nsince, key)) {
		opt_first = key;
		opt_last = 0;
		opt_nsince = 0;
	} else if (opt_nsince < OPT_KEYS) {
		opt_since[opt_nsince++] = key;
	}
	opt_prev = key;
	counts = opt_many || key == (opt_last ? opt_last : opt_first);
	mms__spin_unlock(&opt_lock);
	return counts;
}

/* Notes the optimizer whose step is ending on this thread: its number,
 * from the package's wrapper of torch.optim.Optimizer._optimizer_step_code,
 * which torch calls at the end of each step, inside its "Optimizer.step#"
 * RecordFunction (an outer optimizer's after the inner one's). Not part
 * of msmemscope.h. */
MMS_EXPORT void msmemscope__optimizer_key(uint64_t key)
{
	opt_ending = key;
}

/* The package's sweep at exit (msmemscope/__init__.py): the frees this
 * thread records between its two SYSTEM records are of memory the program
 * had let go of (format.h). Not part of msmemscope.h. */
MMS_EXPORT void msmemscope__exit_sweep(uint64_t end)
{
	struct mms_thread *t = mms__api_enter();

	if (!t)
		return;
	rec_simple(t, (uint8_t)(MMS_TAG_SYSTEM | (end ? MMS_SYSTEM_SWEEP_END : MMS_SYSTEM_SWEEP_BEGIN)), 0, 0, 0, 0);
	mms__api_leave();
}

/* The end of a PyTorch optimizer step (msmemscope._torchops: the
 * outermost RecordFunction "Optimizer.step#..." of a thread ended): a
 * step the recorder infers, for a program that marks none, when it is a
 * step of the optimizer that counts (above). Not part of msmemscope.h. */
MMS_EXPORT void msmemscope__optimizer_step(void)
{
	uint64_t key = opt_ending;

	opt_ending = 0;
	if (optimizer_counts(key))
		step_ends(MMS_STEP_BY_OPTIMIZER);
}

uint32_t mms__step_now(void)
{
	return step_by_ranges && !in_step_range ? 0 : __atomic_load_n(&cur_step, __ATOMIC_RELAXED);
}

/* Operator launches are recorded when the log is open and launch events
 * are on; gdb's checks (gdbif.c) run in every case, inside the guard. */
void mms__api_op_begin(const char *name)
{
	struct mms_thread *t = (mms__config.events & MMS_EVENTS_LAUNCH) ? api_thread() : NULL;

	if (t)
		rec_simple(t, MMS_TAG_OP_BEGIN, 1, mms__intern_string(t, name), 0, 0);
	mms__gdb_op_begin(name);
	mms__watch_op_begin(t, name);
}

void mms__api_op_end(void)
{
	struct mms_thread *t = (mms__config.events & MMS_EVENTS_LAUNCH) ? api_thread() : NULL;

	/* --guard=ops: a full check before the end is recorded, so that
	 * damage it finds lies in this launch's window. */
	if (unlikely(mms__config.guard > 1))
		mms__guard_check_all(t ? t : api_thread());
	mms__watch_op_end(t);
	if (t)
		rec_simple(t, MMS_TAG_OP_END, 0, 0, 0, 0);
	mms__gdb_op_end();
}

MMS_EXPORT void msmemscope_op_begin(const char *name)
{
	if (api_guard()) {
		mms__api_op_begin(name);
		mms__api_leave();
	}
}

MMS_EXPORT void msmemscope_op_end(void)
{
	if (api_guard()) {
		mms__api_op_end();
		mms__api_leave();
	}
}

void mms__api_kernel(const char *name)
{
	if (mms__config.events & MMS_EVENTS_LAUNCH)
		named_event(MMS_TAG_KERNEL, name, 1, 0);
}

void mms__api_kernel_dev(const char *name, unsigned device)
{
	if (mms__config.events & MMS_EVENTS_LAUNCH)
		named_event(MMS_TAG_KERNEL_DEV, name, 2, device);
}

MMS_EXPORT void msmemscope_kernel_launch(const char *name)
{
	mms__api_kernel(name);
}

void mms__api_mark(const char *name)
{
	struct mms_thread *t = api_thread();

	if (t)
		rec_simple(t, MMS_TAG_MARK, 1, mms__intern_string(t, name), 0, 0);
}

MMS_EXPORT void msmemscope_mark(const char *name)
{
	if (api_guard()) {
		mms__api_mark(name);
		mms__api_leave();
	}
}

uint64_t mms__api_range_start(const char *name)
{
	uint64_t id = __atomic_fetch_add(&next_range_id, 1, __ATOMIC_RELAXED);
	struct mms_thread *t = api_thread();

	if (!t)
		return id;
	rec_simple(t, MMS_TAG_RANGE_START, 2, id, mms__intern_string(t, name), 0);
	/* A replay counts no inferred step in a log with a range: nor do
	 * the hooks from the first one on. */
	if (!__atomic_load_n(&ranges_seen, __ATOMIC_RELAXED) && !__atomic_load_n(&marked_steps, __ATOMIC_RELAXED))
		__atomic_store_n(&cur_step, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&ranges_seen, 1, __ATOMIC_RELAXED);
	if (name && !strcmp(name, "step start")) {
		/* The k-th "step start" range is step k. */
		if (step_by_ranges)
			__atomic_fetch_add(&cur_step, 1, __ATOMIC_RELAXED);
		step_by_ranges = 1;
		in_step_range = 1;
		step_range_id = id;
		mms__guard_check_all(t);
		steps_edge(t);
		mms__gdb_step_begins(__atomic_load_n(&cur_step, __ATOMIC_RELAXED));
	}
	return id;
}

MMS_EXPORT uint64_t msmemscope_range_start(const char *name)
{
	uint64_t id;

	if (!api_guard())
		return __atomic_fetch_add(&next_range_id, 1, __ATOMIC_RELAXED);
	id = mms__api_range_start(name);
	mms__api_leave();
	return id;
}

void mms__api_range_end(uint64_t id)
{
	struct mms_thread *t = api_thread();

	if (!t)
		return;
	rec_simple(t, MMS_TAG_RANGE_END, 1, id, 0, 0);
	if (step_by_ranges && id == step_range_id) {
		in_step_range = 0;
		steps_edge(t);
	}
}

MMS_EXPORT int msmemscope_guard_check(void)
{
	struct mms_thread *t;
	uint64_t n;

	if (!mms__guard_on || !(t = mms__api_enter()))
		return 0;
	n = mms__guard_check_all(t);
	mms__api_leave();
	return n > INT32_MAX ? INT32_MAX : (int)n;
}

MMS_EXPORT void msmemscope_range_end(uint64_t id)
{
	if (api_guard()) {
		mms__api_range_end(id);
		mms__api_leave();
	}
}

MMS_EXPORT void msmemscope_access(const void *ptr, size_t size, int mode)
{
	struct mms_thread *t;

	if (unlikely(mms__tls_watch_collect) && mode == MSMEMSCOPE_ACCESS_WRITE && !mms__tls_busy)
		mms__watch_note((uintptr_t)ptr, size); /* an output of the --watch start operator */
	if (!(mms__config.events & MMS_EVENTS_ACCESS) || !mms__collecting || !(t = mms__api_enter()))
		return;
	mms__rec_addr_event(t, (uint8_t)(MMS_TAG_ACCESS | ((unsigned)mode & 3)), mms__stamp_obtain(), (uintptr_t)ptr, 1,
			    size, 0, 0, 0);
	mms__api_leave();
}

MMS_EXPORT void msmemscope_owner_push(const char *tag)
{
	named_event(MMS_TAG_OWNER_PUSH, tag, 1, 0);
}

MMS_EXPORT void msmemscope_owner_pop(void)
{
	struct mms_thread *t = mms__api_enter();

	if (!t)
		return;
	rec_simple(t, MMS_TAG_OWNER_POP, 0, 0, 0, 0);
	mms__api_leave();
}

/* Recorded whenever the log is open, as push and pop are: a tag names a
 * block for the whole of its life, so one allocated before a --steps
 * window or a msmemscope_start() is named too. */
MMS_EXPORT void msmemscope_owner_tag(const void *ptr, const char *tag)
{
	struct mms_thread *t = mms__api_enter();

	if (!t)
		return;
	mms__rec_addr_event(t, MMS_TAG_OWNER_TAG, mms__stamp_obtain(), (uintptr_t)ptr, 1, mms__intern_string(t, tag), 0,
			    0, 0);
	mms__api_leave();
}

static void pool_event(uint8_t tag, const char *pool, const void *ptr, size_t size, size_t total, size_t used)
{
	struct mms_thread *t;
	uint32_t name, stack = 0;
	uint64_t stamp;
	uint8_t *p;

	if (!mms__collecting || !(t = mms__api_enter()))
		return;
	name = mms__intern_string(t, pool);
	if (tag == MMS_TAG_POOL_ALLOC)
		stack = mms__capture_stack(t);
	stamp = tag == MMS_TAG_POOL_ALLOC ? mms__stamp_obtain() : mms__stamp_release();
	p = mms__rec_begin(t, 1 + 7 * 10);
	if (p) {
		p = mms__rec_head(t, p, tag, stamp);
		p = mms_put_u(p, name);
		p = mms__rec_addr(t, p, (uintptr_t)ptr);
		p = mms_put_u(p, size);
		p = mms_put_u(p, total);
		p = mms_put_u(p, used);
		if (tag == MMS_TAG_POOL_ALLOC)
			p = mms_put_u(p, stack);
		mms__rec_commit(t, p);
	}
	mms__api_leave();
}

MMS_EXPORT void msmemscope_pool_alloc(const char *pool, const void *ptr, size_t size, size_t total, size_t used)
{
	pool_event(MMS_TAG_POOL_ALLOC, pool, ptr, size, total, used);
}

MMS_EXPORT void msmemscope_pool_free(const char *pool, const void *ptr, size_t size, size_t total, size_t used)
{
	pool_event(MMS_TAG_POOL_FREE, pool, ptr, size, total, used);
}

MMS_EXPORT void msmemscope_watch(const void *ptr, size_t size, const char *name)
{
	struct mms_thread *t = mms__api_enter();
	uint32_t id;

	if (!t)
		return;
	/* A range the program cannot read is not watched: the checksums at
	 * each launch would fault where the program does not. */
	if (mms__readable((uintptr_t)ptr, size) == -1) {
		mms__watch_unreadable(ptr, size, name);
		mms__api_leave();
		return;
	}
	id = mms__intern_string(t, name);
	mms__rec_addr_event(t, MMS_TAG_WATCH | MMS_WATCH_REGISTER, mms__stamp_obtain(), (uintptr_t)ptr, 2, size, id, 0,
			    0);
	mms__watch_api(ptr, size, name);
	mms__api_leave();
}

static void set_collect(int on)
{
	struct mms_thread *t = mms__api_enter();

	collect_on = on;
	mms__steps_update();
	if (!t)
		return;
	rec_simple(t, MMS_TAG_COLLECT, 1, (uint64_t)on, 0, 0);
	mms__api_leave();
}

MMS_EXPORT void msmemscope_start(void)
{
	set_collect(1);
}

MMS_EXPORT void msmemscope_stop(void)
{
	set_collect(0);
}

MMS_EXPORT int msmemscope_recording(void)
{
	return mms__recording_now() ? 1 : 0;
}

/* Not the public API: the msmemscope Python package's, around its own
 * work in the program's threads (msmemscope.torch tagging tensors), so
 * that what it allocates there is marked its own (ALLOC_RT, kind
 * MMS_RT_SELF), not the program's. Returns the scope it replaced, for
 * msmemscope__own_end(). */
static unsigned scope_begin(unsigned kind)
{
	unsigned prev = mms__tls_runtime;

	if (!prev)
		mms__tls_runtime = (uint16_t)kind;
	return prev;
}

static void scope_end(unsigned kind, unsigned prev)
{
	if (mms__tls_runtime == kind)
		mms__tls_runtime = (uint16_t)prev;
}

MMS_EXPORT unsigned msmemscope__own_begin(void)
{
	return scope_begin(MMS_RT_SELF);
}

MMS_EXPORT void msmemscope__own_end(unsigned prev)
{
	scope_end(MMS_RT_SELF, prev);
}

/* Not the public API either: the package's, around importlib's loading of
 * a module, so that what is allocated then is marked (ALLOC_RT, kind
 * MMS_RT_PYIMPORT) as the module's state should it be live at exit. */
MMS_EXPORT unsigned msmemscope__import_begin(void)
{
	return scope_begin(MMS_RT_PYIMPORT);
}

MMS_EXPORT void msmemscope__import_end(unsigned prev)
{
	scope_end(MMS_RT_PYIMPORT, prev);
}

MMS_EXPORT void mstxMarkA(const char *message, void *stream)
{
	(void)stream;
	msmemscope_mark(message);
}

MMS_EXPORT uint64_t mstxRangeStartA(const char *message, void *stream)
{
	(void)stream;
	return msmemscope_range_start(message);
}

MMS_EXPORT void mstxRangeEnd(uint64_t id)
{
	msmemscope_range_end(id);
}

void mms__api_thread_name(pid_t tid, const char *name)
{
	struct mms_thread *t = api_thread();
	uint8_t buf[24], *p = buf;

	if (!t || (tid && tid != t->tid))
		return;
	p = mms_put_u(p, t->index);
	p = mms_put_u(p, mms__intern_string(t, name));
	mms__write_meta(t, MMS_TAG_THREAD_NAME, buf, (size_t)(p - buf));
}

MMS_EXPORT int pthread_setname_np(pthread_t thread, const char *name)
{
	int r = mms__real.pthread_setname_np ? mms__real.pthread_setname_np(thread, name) : ENOSYS;

	/* Only a thread naming itself is recorded: another thread's index is
	 * not known here. */
	if (r == 0 && pthread_equal(thread, pthread_self()) && api_guard()) {
		mms__api_thread_name(0, name);
		mms__api_leave();
	}
	return r;
}
