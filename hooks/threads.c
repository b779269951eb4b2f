/* SPDX-License-Identifier: MIT */
/* threads.c: the registry of recording threads: each thread's state, in
 * memory of our own and reused after the thread exits, its index in the
 * log, and the THREAD records that name it. */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "hooks-int.h"
#include "unwind.h"
#include "log.h"
#include "stamp.h"

__thread struct mms_thread *mms__tls_thread;
__thread int mms__tls_busy;
__thread struct mms_tls_cxx mms__tls_cxx;
static __thread uint32_t tls_index; /* thread index + 1, 0 = none yet */
/* The thread's last stamp when its exit destructor ran: a thread that
 * allocates again afterwards (in a later TLS destructor) resumes from it,
 * so its new segment does not start before its old records end. */
static __thread uint64_t tls_last_stamp;

static uint32_t next_thread_index;
static pthread_key_t thread_key;
uint32_t mms__live_threads;

/* The states of exited threads, for the next threads to take. Thread
 * creation and exit are not the hot path. */
static pthread_mutex_t free_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mms_thread *free_threads;
/* The threads that have not exited, under free_lock too. */
static struct mms_thread *live_threads;

static void thread_key_destructor(void *arg)
{
	(void)arg;
	mms__thread_exit();
}

static void write_thread_records(struct mms_thread *t)
{
	uint8_t buf[64 + 16], *p = buf;
	char name[17] = "";

	uint8_t val[24], *v = val;

	p = mms_put_u(p, t->index);
	p = mms_put_u(p, (uint64_t)t->tid);
	mms__write_meta(t, MMS_TAG_THREAD, buf, (size_t)(p - buf));
	/* Where this thread's hook guard is: nonzero while it is in a hook
	 * (between an event's stamp and its record), so that a reader that
	 * follows the log while the program runs (its parent, the launcher)
	 * knows the thread will write nothing stamped before now when it
	 * reads it as 0 (doc/log-format.md, META "tls_busy"). */
	v = mms_put_u(v, t->index);
	v = mms_put_u(v, (uint64_t)(uintptr_t)&mms__tls_busy);
	p = mms_put_s(buf, "tls_busy", 8);
	p = mms_put_s(p, val, (size_t)(v - val));
	mms__write_meta(t, MMS_TAG_META, buf, (size_t)(p - buf));
	p = buf;
	if (prctl(PR_GET_NAME, name) == 0 && name[0]) {
		uint32_t id = mms__intern_string(t, name);
		p = buf;
		p = mms_put_u(p, t->index);
		p = mms_put_u(p, id);
		mms__write_meta(t, MMS_TAG_THREAD_NAME, buf, (size_t)(p - buf));
	}
}

struct mms_thread *mms__thread_register(void)
{
	size_t size = sizeof(struct mms_thread) + (MMS_MAX_DEPTH + 1) * (sizeof(uintptr_t) + sizeof(uint32_t)) +
		      MMS_FRAMES_ROOM * sizeof(uintptr_t) + sizeof(uintptr_t) + MMS_MAX_STRING + 1;
	struct mms_thread *t;
	int busy = mms__tls_busy;

	if (!mms__active || !mms__recording)
		return NULL;
	mms__tls_busy = 2;
	pthread_mutex_lock(&free_lock);
	t = free_threads;
	if (t)
		free_threads = t->next_free;
	pthread_mutex_unlock(&free_lock);
	if (!t) {
		t = mms__map_anon(size);
		if (!t) {
			mms__tls_busy = busy;
			return NULL;
		}
		t->ips = (uintptr_t *)(t + 1);
		t->ids = (uint32_t *)(t->ips + MMS_MAX_DEPTH + 1);
		/* After the ids, aligned for its words. */
		t->frames = (uintptr_t *)(((uintptr_t)(t->ids + MMS_MAX_DEPTH + 1) + sizeof(uintptr_t) - 1) &
					  ~(uintptr_t)(sizeof(uintptr_t) - 1));
		t->name_room = (char *)(t->frames + MMS_FRAMES_ROOM);
	}
	/* A thread that allocates after its exit destructor ran (in a later
	 * TLS destructor) comes back here: it keeps its index. */
	if (!tls_index) {
		tls_index = __atomic_fetch_add(&next_thread_index, 1, __ATOMIC_RELAXED) + 1;
		/* The second thread that records: stamps read the TSC from
		 * its first event on, on every thread (stamp.h). */
		if (tls_index > 1)
			mms__stamp_many();
	}
	t->index = tls_index - 1;
	__atomic_fetch_add(&mms__live_threads, 1, __ATOMIC_RELAXED);
	t->tid = gettid();
	t->chunk = NULL;
	t->cur = t->end = NULL;
	t->prev_stamp = tls_last_stamp;
	t->prev_addr = 0;
	t->nframes = 0;
	t->stack_id = 0;
	t->last_stack = 0;
	t->stack_lo = t->stack_hi = 0; /* found again at the first capture */
	t->bounds_lo = t->bounds_hi = 0;
	if (mms__config.reach)
		mms__stack_note(t);
	pthread_mutex_lock(&free_lock);
	t->live_next = live_threads;
	t->live_pprev = &live_threads;
	if (live_threads)
		live_threads->live_pprev = &t->live_next;
	live_threads = t;
	pthread_mutex_unlock(&free_lock);
	mms__tls_thread = t;
	pthread_setspecific(thread_key, t);
	write_thread_records(t);
	mms__tls_busy = busy;
	return t;
}

void mms__thread_exit(void)
{
	struct mms_thread *t = mms__tls_thread;

	mms__pystack_thread_exit();
	if (!t)
		return;
	mms__tls_thread = NULL;
	__atomic_fetch_sub(&mms__live_threads, 1, __ATOMIC_RELAXED);
	tls_last_stamp = t->prev_stamp;
	mms__chunk_leave(t);
	pthread_mutex_lock(&free_lock);
	*t->live_pprev = t->live_next;
	if (t->live_next)
		t->live_next->live_pprev = t->live_pprev;
	t->next_free = free_threads;
	free_threads = t;
	pthread_mutex_unlock(&free_lock);
}

int mms__threads_each_live(const struct mms_thread *self, void (*fn)(const struct mms_thread *t, void *ctx), void *ctx)
{
	if (pthread_mutex_trylock(&free_lock))
		return -1;
	for (const struct mms_thread *t = live_threads; t; t = t->live_next)
		if (t != self)
			fn(t, ctx);
	pthread_mutex_unlock(&free_lock);
	return 0;
}

int mms__threads_init(void)
{
	return pthread_key_create(&thread_key, thread_key_destructor);
}

void mms__threads_after_fork_child(void)
{
	pthread_mutex_init(&free_lock, NULL);
	free_threads = NULL;
	live_threads = NULL; /* this thread's state registers again */
	mms__live_threads = 0;
	next_thread_index = 0;
	tls_index = 0;
	tls_last_stamp = 0;
	if (mms__tls_thread) {
		/* Only this thread survives; its state is ours to reuse. */
		mms__tls_thread->chunk = NULL;
		mms__tls_thread->cur = mms__tls_thread->end = NULL;
		mms__tls_thread = NULL;
	}
}
