/* SPDX-License-Identifier: MIT */
/* nvtx.c: the recorder as an NVTX injection library, so that a program
 * annotated for Nsight Systems gets operator launches, steps and marks
 * through the instrumentation API's own paths (api.c).
 *
 * The NVTX v3 headers a program compiles in load the library named by
 * NVTX_INJECTION64_PATH at the first NVTX call and call its
 * InitializeInjectionNvtx2(), which fills in their function pointers. The
 * launcher and memscope.gdb set that variable to this library, which is
 * already preloaded: dlopen() returns it. The mapping (doc/recorder.md,
 * "NVTX"):
 *
 *   nvtxRangePush / Pop      an operator launch of the thread (they nest)
 *   nvtxRangeStart / End     an MSTX range (exact, from any thread to any
 *                            thread), and an operator launch of the
 *                            starting thread, ended when the range ends on
 *                            that thread, or at that thread's next NVTX
 *                            call when another thread ended it
 *   a range "step start"     a step (push/pop or start/end), as mstx's
 *   nvtxMark                 an MSTX mark
 *   nvtxNameOsThread         the thread's name in the log, when a thread
 *                            names itself
 *
 * In a named domain, launches and marks are named "domain::message"; the
 * "step start" rule looks at the message alone. Wide-character messages
 * are converted to UTF-8 on the stack, registered strings and domain names
 * are copied into the recorder's arena: nothing here allocates from the
 * program's heap, and no callback makes a system call. Categories,
 * resources, colours and payloads are accepted and ignored. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <wchar.h>

#include "hooks-int.h"
#include "log.h"

/* --- the NVTX ABI -----------------------------------------------------------
 * Mirrors of the few NVTX v3 types and constants the injection protocol
 * uses, so that the recorder builds without NVIDIA's headers: the export
 * tables and callback ids of nvtx3/nvtxDetail/nvtxTypes.h and the event
 * attributes of nvtx3/nvToolsExt.h (NVTX_VERSION 3). NVTX keeps them
 * binary compatible: ids are only ever added at the end. */

typedef void (*nvtx_fn)(void);

struct nvtx_callbacks_table {    /* NvtxExportTableCallbacks */
	size_t struct_size;
	int (*get_module_function_table)(int module, nvtx_fn ***table, unsigned *size);
};

struct nvtx_version_table {      /* NvtxExportTableVersionInfo */
	size_t struct_size;
	uint32_t version;
	uint32_t reserved0;
	void (*set_injection_nvtx_version)(uint32_t version);
};

typedef const void *(*nvtx_get_export_table)(uint32_t id);

enum {
	NVTX_ETID_CALLBACKS = 1,
	NVTX_ETID_VERSIONINFO = 3,
	NVTX_CB_MODULE_CORE = 1,
	NVTX_CB_MODULE_CORE2 = 5,
	NVTX_VERSION = 3,
	NVTX_NO_PUSH_POP_TRACKING = -2,
};

enum {                           /* NvtxCallbackIdCore */
	CORE_MarkEx = 1,
	CORE_MarkA = 2,
	CORE_MarkW = 3,
	CORE_RangeStartEx = 4,
	CORE_RangeStartA = 5,
	CORE_RangeStartW = 6,
	CORE_RangeEnd = 7,
	CORE_RangePushEx = 8,
	CORE_RangePushA = 9,
	CORE_RangePushW = 10,
	CORE_RangePop = 11,
	CORE_NameCategoryA = 12,
	CORE_NameCategoryW = 13,
	CORE_NameOsThreadA = 14,
	CORE_NameOsThreadW = 15,
};

enum {                           /* NvtxCallbackIdCore2 */
	CORE2_DomainMarkEx = 1,
	CORE2_DomainRangeStartEx = 2,
	CORE2_DomainRangeEnd = 3,
	CORE2_DomainRangePushEx = 4,
	CORE2_DomainRangePop = 5,
	CORE2_DomainNameCategoryA = 8,
	CORE2_DomainNameCategoryW = 9,
	CORE2_DomainRegisterStringA = 10,
	CORE2_DomainRegisterStringW = 11,
	CORE2_DomainCreateA = 12,
	CORE2_DomainCreateW = 13,
	CORE2_DomainDestroy = 14,
	CORE2_Initialize = 15,
};

enum {                           /* nvtxMessageType_t */
	NVTX_MESSAGE_TYPE_ASCII = 1,
	NVTX_MESSAGE_TYPE_UNICODE = 2,
	NVTX_MESSAGE_TYPE_REGISTERED = 3,
};

struct nvtx_attributes {         /* nvtxEventAttributes_v2 */
	uint16_t version;
	uint16_t size;           /* of the structure the program filled in */
	uint32_t category;
	int32_t color_type;
	uint32_t color;
	int32_t payload_type;
	int32_t reserved0;
	uint64_t payload;        /* a union of 8-byte and 4-byte numbers */
	int32_t message_type;
	union {
		const char *ascii;
		const wchar_t *unicode;
		const void *registered;
	} message;
};

_Static_assert(offsetof(struct nvtx_attributes, message) == 40 && sizeof(struct nvtx_attributes) == 48,
	       "struct nvtx_attributes is nvtxEventAttributes_v2 of x86-64 and aarch64");

/* --- the recorder's tables ---------------------------------------------------
 * Mapped at the first InitializeInjectionNvtx2(), so that a program that
 * does not use NVTX keeps the memory layout it has without them (python3's
 * allocator, for one, allocates by where its arenas land).
 *
 * A domain or string handle the program holds is the address of a slot of
 * these tables, so a handle can be checked before it is used. The texts
 * are the recorder's copies, in its arena; slots are never reused (NVTX
 * has no call that unregisters a string, and a destroyed domain's handle
 * stays usable). open_starts: see "ranges" below. */

#define NVTX_DOMAINS 256
#define NVTX_STRINGS (1u << 14)
#define NVTX_OPEN_STARTS 4096

struct nvtx_tables {
	const char *domain_names[NVTX_DOMAINS];
	const char *string_texts[NVTX_STRINGS];
	uint64_t open_starts[NVTX_OPEN_STARTS];
	uint32_t ndomains;
	uint32_t nstrings;
};

static struct nvtx_tables *tables;
static pthread_mutex_t domains_lock = PTHREAD_MUTEX_INITIALIZER;

/* Maps the tables once. Returns 0, or -1 without memory. */
static int tables_init(void)
{
	struct nvtx_tables *t, *none = NULL;

	if (__atomic_load_n(&tables, __ATOMIC_ACQUIRE))
		return 0;
	t = mms__map_anon(sizeof(*t));
	if (!t)
		return -1;
	if (!__atomic_compare_exchange_n(&tables, &none, t, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		mms__unmap_own(t, sizeof(*t)); /* another NVTX instance's came first */
	return 0;
}

/* The name of the domain handle d, NULL for the default domain and for a
 * handle that is not one of ours. */
static const char *domain_name(const void *d)
{
	uintptr_t off = (uintptr_t)d - (uintptr_t)tables->domain_names;

	if (off >= sizeof(tables->domain_names) || off % sizeof(tables->domain_names[0]))
		return NULL;
	return __atomic_load_n((const char **)d, __ATOMIC_ACQUIRE);
}

static const char *string_text(const void *s)
{
	uintptr_t off = (uintptr_t)s - (uintptr_t)tables->string_texts;

	if (off >= sizeof(tables->string_texts) || off % sizeof(tables->string_texts[0]))
		return NULL;
	return __atomic_load_n((const char **)s, __ATOMIC_ACQUIRE);
}

/* A copy of s (len bytes) in the arena, NULL when there is no room. */
static const char *text_copy(const char *s, size_t len)
{
	char *c = mms__arena_alloc(len + 1, 1);

	if (c) {
		memcpy(c, s, len);
		c[len] = 0;
	}
	return c;
}

/* --- names ------------------------------------------------------------------ */

#define NAME_MAX_BYTES MMS_MAX_STRING /* the log keeps no longer strings */

/* Where a name is built (NAME_MAX_BYTES + 1 bytes): the recording
 * thread's room, not the stack of a thread that may be small; NULL when
 * nothing is recorded (a fork child's log opens here, as at its first
 * event). */
static char *name_room(void)
{
	struct mms_thread *t;

	if (!mms__recording_now())
		return NULL;
	t = mms__thread();
	return t ? t->name_room : NULL;
}

/* Appends the UTF-8 of the wide string w (UTF-32 on Linux) to buf, which
 * holds n bytes, and returns the new length: never beyond NAME_MAX_BYTES
 * and never in the middle of a character. What is not a character becomes
 * U+FFFD. */
static size_t put_wide(char *buf, size_t n, const wchar_t *w)
{
	for (; *w; w++) {
		uint32_t c = (uint32_t)*w;
		unsigned char u[4];
		size_t k;

		if (c > 0x10ffff || (c >= 0xd800 && c < 0xe000))
			c = 0xfffd;
		if (c < 0x80) {
			u[0] = (unsigned char)c;
			k = 1;
		} else if (c < 0x800) {
			u[0] = (unsigned char)(0xc0 | c >> 6);
			u[1] = (unsigned char)(0x80 | (c & 0x3f));
			k = 2;
		} else if (c < 0x10000) {
			u[0] = (unsigned char)(0xe0 | c >> 12);
			u[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3f));
			u[2] = (unsigned char)(0x80 | (c & 0x3f));
			k = 3;
		} else {
			u[0] = (unsigned char)(0xf0 | c >> 18);
			u[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3f));
			u[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3f));
			u[3] = (unsigned char)(0x80 | (c & 0x3f));
			k = 4;
		}
		if (n + k > NAME_MAX_BYTES)
			break;
		memcpy(buf + n, u, k);
		n += k;
	}
	return n;
}

/* An event's message, as the program gave it. */
struct nvtx_msg {
	int type;
	const void *p;
};

static struct nvtx_msg msg_of(const struct nvtx_attributes *a)
{
	struct nvtx_msg m = { 0, NULL };

	if (a && a->size >= offsetof(struct nvtx_attributes, message) + sizeof(a->message)) {
		m.type = a->message_type;
		m.p = a->message.registered;
	}
	return m;
}

/* The name an event of domain d with message m is recorded under:
 * "domain::message" in a named domain, the message in the default one
 * (NULL when it has none). Built in buf (NAME_MAX_BYTES + 1 bytes) unless
 * it is the program's own string; *text is the message alone. */
static const char *event_name(const void *d, struct nvtx_msg m, char *buf, const char **text)
{
	const char *dom = d ? domain_name(d) : NULL;
	const char *s = NULL;
	size_t dlen, slen;

	if (m.type == NVTX_MESSAGE_TYPE_ASCII) {
		s = m.p;
	} else if (m.type == NVTX_MESSAGE_TYPE_REGISTERED) {
		s = string_text(m.p);
	} else if (m.type == NVTX_MESSAGE_TYPE_UNICODE && m.p) {
		buf[put_wide(buf, 0, m.p)] = 0;
		s = buf;
	}
	*text = s;
	if (!dom)
		return s;
	/* The domain's name first (at most half of the room), then "::" and
	 * the message, moved up when it was converted into buf. */
	dlen = strnlen(dom, NAME_MAX_BYTES / 2);
	slen = s ? strnlen(s, NAME_MAX_BYTES - dlen - 2) : 0;
	if (s) {
		memmove(buf + dlen + 2, s, slen);
		memcpy(buf + dlen, "::", 2);
		*text = buf + dlen + 2;
	}
	memcpy(buf, dom, dlen);
	buf[s ? dlen + 2 + slen : dlen] = 0;
	return buf;
}

static int is_step(const char *text)
{
	return text && !strcmp(text, "step start");
}

/* --- ranges -------------------------------------------------------------------
 * Each thread keeps the ranges it has open, innermost last: pushed ranges
 * (with their domain, as each domain has its own push/pop stack) and the
 * start/end ranges that are its launches. A range that ends while ranges
 * opened after it are still open (a pop in another domain, start/end
 * ranges that overlap) is marked closed, and its launch ends when they
 * have ended: launches nest, as the log's operator launches do. */

#define NVTX_DEPTH 64

enum { LEVEL_OP, LEVEL_STEP, LEVEL_START };

struct nvtx_level {
	const void *domain;      /* LEVEL_OP, LEVEL_STEP: the pushing domain */
	uint64_t id;             /* LEVEL_STEP, LEVEL_START: the MSTX range */
	uint8_t kind;
	uint8_t closed;
};

static __thread struct {
	uint32_t depth;
	uint32_t dropped;        /* pushes past NVTX_DEPTH, not recorded */
	uint32_t starts;         /* open LEVEL_START levels */
	struct nvtx_level lv[NVTX_DEPTH];
} tls_ranges;

/* The start/end ranges that are launches, by id: the slot of id in
 * tables->open_starts holds id while the range is open. Another thread
 * that ends it clears the slot; the starting thread sees that at its next
 * NVTX call and ends the launch there (it cannot be ended in another
 * thread's records). */
static uint64_t *start_slot(uint64_t id)
{
	return &tables->open_starts[id & (NVTX_OPEN_STARTS - 1)];
}

/* Ends the launches of the closed ranges at the top of the stack. */
static void unwind(void)
{
	while (tls_ranges.depth && tls_ranges.lv[tls_ranges.depth - 1].closed) {
		const struct nvtx_level *l = &tls_ranges.lv[--tls_ranges.depth];

		if (l->kind == LEVEL_STEP)
			mms__api_range_end(l->id);
		else
			mms__api_op_end();
	}
}

static void close_start(struct nvtx_level *l)
{
	l->closed = 1;
	tls_ranges.starts--;
}

/* Ends the launches of this thread's ranges that other threads ended. */
static __attribute__((noinline, cold)) void sweep(void)
{
	for (uint32_t i = 0; i < tls_ranges.depth; i++) {
		struct nvtx_level *l = &tls_ranges.lv[i];

		if (l->kind == LEVEL_START && !l->closed &&
		    __atomic_load_n(start_slot(l->id), __ATOMIC_ACQUIRE) != l->id)
			close_start(l);
	}
	unwind();
}

/* Takes the reentrancy guard, as the API's functions do: 0 when the thread
 * is already inside the recorder (a signal handler's call), which records
 * nothing then. */
static int nvtx_enter(void)
{
	if (unlikely(mms__tls_busy))
		return 0;
	mms__tls_busy = 1;
	if (unlikely(tls_ranges.starts))
		sweep();
	return 1;
}

static void nvtx_leave(void)
{
	mms__tls_busy = 0;
}

static void range_push(const void *d, struct nvtx_msg m)
{
	char *buf = name_room();
	const char *text, *name;
	struct nvtx_level *l;

	if (!buf)
		return; /* nothing recorded: nothing to end either */
	if (tls_ranges.depth == NVTX_DEPTH) {
		tls_ranges.dropped++;
		return;
	}
	name = event_name(d, m, buf, &text);
	l = &tls_ranges.lv[tls_ranges.depth++];
	l->domain = d;
	l->closed = 0;
	if (is_step(text)) {
		l->kind = LEVEL_STEP;
		l->id = mms__api_range_start(text);
	} else {
		l->kind = LEVEL_OP;
		l->id = 0;
		mms__api_op_begin(name);
	}
}

static void range_pop(const void *d)
{
	if (tls_ranges.dropped) {
		tls_ranges.dropped--;
		return;
	}
	for (uint32_t i = tls_ranges.depth; i-- > 0;) {
		struct nvtx_level *l = &tls_ranges.lv[i];

		if (l->kind != LEVEL_START && !l->closed && l->domain == d) {
			l->closed = 1;
			unwind();
			return;
		}
	}
	/* A pop with nothing pushed in d: nothing ends, as in NVTX. */
}

static uint64_t range_start(const void *d, struct nvtx_msg m)
{
	char *buf = name_room();
	const char *text, *name;
	uint64_t id, expect = 0;
	struct nvtx_level *l;

	if (!buf)
		return 0; /* nothing recorded: an id no range has */
	name = event_name(d, m, buf, &text);

	if (is_step(text))
		return mms__api_range_start(text);
	id = mms__api_range_start(name);
	/* A launch only when its end can be told to this thread: past 64
	 * levels, or with 4096 launches open, an MSTX range alone. */
	if (tls_ranges.depth == NVTX_DEPTH ||
	    !__atomic_compare_exchange_n(start_slot(id), &expect, id, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		return id;
	mms__api_op_begin(name);
	l = &tls_ranges.lv[tls_ranges.depth++];
	l->domain = d;
	l->id = id;
	l->kind = LEVEL_START;
	l->closed = 0;
	tls_ranges.starts++;
	return id;
}

static void range_end(uint64_t id)
{
	uint64_t expect = id;

	for (uint32_t i = tls_ranges.depth; i-- > 0;) {
		struct nvtx_level *l = &tls_ranges.lv[i];

		if (l->kind == LEVEL_START && l->id == id && !l->closed) {
			__atomic_store_n(start_slot(id), 0, __ATOMIC_RELAXED);
			close_start(l);
			unwind();
			mms__api_range_end(id);
			return;
		}
	}
	/* Another thread's launch, or no launch: the thread that started
	 * it ends its launch at its next NVTX call. */
	if (id)
		__atomic_compare_exchange_n(start_slot(id), &expect, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	mms__api_range_end(id);
}

static void mark(const void *d, struct nvtx_msg m)
{
	char *buf = name_room();
	const char *text;

	if (buf)
		mms__api_mark(event_name(d, m, buf, &text));
}

/* --- the callbacks ------------------------------------------------------------
 * What they return is what the program gets: range ids and handles (0 and
 * NULL without a tool), and NVTX_NO_PUSH_POP_TRACKING from push and pop,
 * which is what they return without a tool too. */

static struct nvtx_msg msg_ascii(const char *s)
{
	return (struct nvtx_msg){ NVTX_MESSAGE_TYPE_ASCII, s };
}

static struct nvtx_msg msg_wide(const wchar_t *s)
{
	return (struct nvtx_msg){ NVTX_MESSAGE_TYPE_UNICODE, s };
}

static void do_mark(const void *d, struct nvtx_msg m)
{
	if (nvtx_enter()) {
		mark(d, m);
		nvtx_leave();
	}
}

static uint64_t do_start(const void *d, struct nvtx_msg m)
{
	uint64_t id = 0;

	if (nvtx_enter()) {
		id = range_start(d, m);
		nvtx_leave();
	}
	return id;
}

static int do_push(const void *d, struct nvtx_msg m)
{
	if (nvtx_enter()) {
		range_push(d, m);
		nvtx_leave();
	}
	return NVTX_NO_PUSH_POP_TRACKING;
}

static void cb_mark_ex(const struct nvtx_attributes *a)
{
	do_mark(NULL, msg_of(a));
}

static void cb_mark_a(const char *s)
{
	do_mark(NULL, msg_ascii(s));
}

static void cb_mark_w(const wchar_t *s)
{
	do_mark(NULL, msg_wide(s));
}

static uint64_t cb_range_start_ex(const struct nvtx_attributes *a)
{
	return do_start(NULL, msg_of(a));
}

static uint64_t cb_range_start_a(const char *s)
{
	return do_start(NULL, msg_ascii(s));
}

static uint64_t cb_range_start_w(const wchar_t *s)
{
	return do_start(NULL, msg_wide(s));
}

static void cb_range_end(uint64_t id)
{
	if (nvtx_enter()) {
		range_end(id);
		nvtx_leave();
	}
}

static int cb_range_push_ex(const struct nvtx_attributes *a)
{
	return do_push(NULL, msg_of(a));
}

static int cb_range_push_a(const char *s)
{
	return do_push(NULL, msg_ascii(s));
}

static int cb_range_push_w(const wchar_t *s)
{
	return do_push(NULL, msg_wide(s));
}

static int cb_domain_range_pop(const void *d)
{
	if (nvtx_enter()) {
		range_pop(d);
		nvtx_leave();
	}
	return NVTX_NO_PUSH_POP_TRACKING;
}

static int cb_range_pop(void)
{
	return cb_domain_range_pop(NULL);
}

static void cb_name_category_a(uint32_t category, const char *name)
{
	(void)category, (void)name;
}

static void cb_name_category_w(uint32_t category, const wchar_t *name)
{
	(void)category, (void)name;
}

static void name_thread(uint32_t tid, struct nvtx_msg m)
{
	const char *text;
	char *buf;

	if (tid && nvtx_enter()) { /* 0 is no thread; another thread is not named (api.c) */
		if ((buf = name_room()))
			mms__api_thread_name((pid_t)tid, event_name(NULL, m, buf, &text));
		nvtx_leave();
	}
}

static void cb_name_os_thread_a(uint32_t tid, const char *name)
{
	name_thread(tid, msg_ascii(name));
}

static void cb_name_os_thread_w(uint32_t tid, const wchar_t *name)
{
	name_thread(tid, msg_wide(name));
}

static void cb_domain_mark_ex(const void *d, const struct nvtx_attributes *a)
{
	do_mark(d, msg_of(a));
}

static uint64_t cb_domain_range_start_ex(const void *d, const struct nvtx_attributes *a)
{
	return do_start(d, msg_of(a));
}

static void cb_domain_range_end(const void *d, uint64_t id)
{
	(void)d;
	cb_range_end(id);
}

static int cb_domain_range_push_ex(const void *d, const struct nvtx_attributes *a)
{
	return do_push(d, msg_of(a));
}

static void cb_domain_name_category_a(const void *d, uint32_t category, const char *name)
{
	(void)d, (void)category, (void)name;
}

static void cb_domain_name_category_w(const void *d, uint32_t category, const wchar_t *name)
{
	(void)d, (void)category, (void)name;
}

/* The UTF-8 text of m in buf. */
static const char *text_of(struct nvtx_msg m, char *buf)
{
	const char *text;

	return m.p ? event_name(NULL, m, buf, &text) : NULL;
}

static const void *register_string(const void *d, struct nvtx_msg m)
{
	const char *s, *copy;
	char *buf;
	uint32_t i;

	(void)d;
	if (!nvtx_enter())
		return NULL;
	/* An ASCII text needs no room; without one (nothing recorded) a wide
	 * one is registered as no text. */
	buf = m.type == NVTX_MESSAGE_TYPE_ASCII ? NULL : name_room();
	s = m.type == NVTX_MESSAGE_TYPE_ASCII || buf ? text_of(m, buf) : NULL;
	copy = s ? text_copy(s, strnlen(s, NAME_MAX_BYTES)) : NULL;
	i = copy ? __atomic_fetch_add(&tables->nstrings, 1, __ATOMIC_RELAXED) : NVTX_STRINGS;
	nvtx_leave();
	if (i >= NVTX_STRINGS)
		return NULL; /* a registered NULL: events with no message */
	__atomic_store_n(&tables->string_texts[i], copy, __ATOMIC_RELEASE);
	return &tables->string_texts[i];
}

static const void *cb_domain_register_string_a(const void *d, const char *s)
{
	return register_string(d, msg_ascii(s));
}

static const void *cb_domain_register_string_w(const void *d, const wchar_t *s)
{
	return register_string(d, msg_wide(s));
}

/* One handle per domain name: a library that creates its domain again
 * gets the same one. */
static const void *domain_create(struct nvtx_msg m)
{
	const void *h = NULL;
	const char *s;
	char *buf;

	if (!nvtx_enter())
		return NULL;
	buf = m.type == NVTX_MESSAGE_TYPE_ASCII ? NULL : name_room();
	s = m.type == NVTX_MESSAGE_TYPE_ASCII || buf ? text_of(m, buf) : NULL;
	if (s) {
		struct nvtx_tables *t = tables;

		pthread_mutex_lock(&domains_lock);
		for (uint32_t i = 0; i < t->ndomains && !h; i++)
			if (!strncmp(t->domain_names[i], s, NAME_MAX_BYTES))
				h = &t->domain_names[i];
		if (!h && t->ndomains < NVTX_DOMAINS) {
			const char *copy = text_copy(s, strnlen(s, NAME_MAX_BYTES));
			if (copy) {
				__atomic_store_n(&t->domain_names[t->ndomains], copy, __ATOMIC_RELEASE);
				h = &t->domain_names[t->ndomains++];
			}
		}
		pthread_mutex_unlock(&domains_lock);
	}
	nvtx_leave();
	return h; /* NULL: the default domain */
}

static const void *cb_domain_create_a(const char *name)
{
	return domain_create(msg_ascii(name));
}

static const void *cb_domain_create_w(const wchar_t *name)
{
	return domain_create(msg_wide(name));
}

static void cb_domain_destroy(const void *d)
{
	(void)d; /* its handle stays usable: events may still name it */
}

static void cb_initialize(const void *reserved)
{
	(void)reserved;
}

/* --- attaching ------------------------------------------------------------------ */

struct nvtx_entry {
	unsigned id;
	nvtx_fn fn;
};

#define ENTRY(id, fn) { id, (nvtx_fn)(fn) }

static const struct nvtx_entry core[] = {
	ENTRY(CORE_MarkEx, cb_mark_ex),
	ENTRY(CORE_MarkA, cb_mark_a),
	ENTRY(CORE_MarkW, cb_mark_w),
	ENTRY(CORE_RangeStartEx, cb_range_start_ex),
	ENTRY(CORE_RangeStartA, cb_range_start_a),
	ENTRY(CORE_RangeStartW, cb_range_start_w),
	ENTRY(CORE_RangeEnd, cb_range_end),
	ENTRY(CORE_RangePushEx, cb_range_push_ex),
	ENTRY(CORE_RangePushA, cb_range_push_a),
	ENTRY(CORE_RangePushW, cb_range_push_w),
	ENTRY(CORE_RangePop, cb_range_pop),
	ENTRY(CORE_NameCategoryA, cb_name_category_a),
	ENTRY(CORE_NameCategoryW, cb_name_category_w),
	ENTRY(CORE_NameOsThreadA, cb_name_os_thread_a),
	ENTRY(CORE_NameOsThreadW, cb_name_os_thread_w),
};

static const struct nvtx_entry core2[] = {
	ENTRY(CORE2_DomainMarkEx, cb_domain_mark_ex),
	ENTRY(CORE2_DomainRangeStartEx, cb_domain_range_start_ex),
	ENTRY(CORE2_DomainRangeEnd, cb_domain_range_end),
	ENTRY(CORE2_DomainRangePushEx, cb_domain_range_push_ex),
	ENTRY(CORE2_DomainRangePop, cb_domain_range_pop),
	ENTRY(CORE2_DomainNameCategoryA, cb_domain_name_category_a),
	ENTRY(CORE2_DomainNameCategoryW, cb_domain_name_category_w),
	ENTRY(CORE2_DomainRegisterStringA, cb_domain_register_string_a),
	ENTRY(CORE2_DomainRegisterStringW, cb_domain_register_string_w),
	ENTRY(CORE2_DomainCreateA, cb_domain_create_a),
	ENTRY(CORE2_DomainCreateW, cb_domain_create_w),
	ENTRY(CORE2_DomainDestroy, cb_domain_destroy),
	ENTRY(CORE2_Initialize, cb_initialize),
};

/* Fills in the function pointers of one module of an NVTX instance.
 * Returns 0, or -1 when the instance does not have the module. */
static int attach(const struct nvtx_callbacks_table *cb, int module, const struct nvtx_entry *e, size_t n)
{
	nvtx_fn **table = NULL;
	unsigned size = 0;

	if (!cb->get_module_function_table(module, &table, &size) || !table)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (e[i].id < size && table[e[i].id])
			*table[e[i].id] = e[i].fn;
	return 0;
}

/* The entry point NVTX looks up in the library it loads; called once by
 * each NVTX instance in the program (each library compiled with the
 * headers has its own). Returns 1 when attached, 0 when that instance
 * offers no callback table (NVTX then turns its calls into no-ops). */
MMS_EXPORT int InitializeInjectionNvtx2(nvtx_get_export_table get);
MMS_EXPORT int InitializeInjectionNvtx2(nvtx_get_export_table get)
{
	const struct nvtx_callbacks_table *cb;
	const struct nvtx_version_table *v;

	mms__init(); /* at once when done; the first NVTX call may come first */
	cb = get ? get(NVTX_ETID_CALLBACKS) : NULL;
	if (!cb || cb->struct_size < sizeof(*cb) || !cb->get_module_function_table || tables_init() ||
	    attach(cb, NVTX_CB_MODULE_CORE, core, sizeof(core) / sizeof(core[0])))
		return 0;
	/* CORE2 (domains, registered strings) came with NVTX v2. */
	attach(cb, NVTX_CB_MODULE_CORE2, core2, sizeof(core2) / sizeof(core2[0]));
	v = get(NVTX_ETID_VERSIONINFO);
	if (v && v->struct_size >= sizeof(*v) && v->set_injection_nvtx_version)
		v->set_injection_nvtx_version(NVTX_VERSION);
	return 1;
}

/* The first dlopen() of a library that was preloaded builds its search
 * list, from the allocator: done here, inside the recorder (its arena),
 * the program's NVTX loader later finds the library open and allocates
 * nothing, so its heap stays as it is without the recorder. Done only
 * when NVTX_INJECTION64_PATH names this library, by the same path. */
__attribute__((constructor)) static void nvtx_preopen(void)
{
	const char *path = getenv("NVTX_INJECTION64_PATH");
	struct stat a, b;
	Dl_info self;
	int busy;

	if (!path || !*path || !dladdr((void *)InitializeInjectionNvtx2, &self) || !self.dli_fname ||
	    stat(path, &a) || stat(self.dli_fname, &b) || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return;
	busy = mms__tls_busy;
	mms__tls_busy = 2;
	(void)dlopen(path, RTLD_LAZY); /* never closed: the library stays (-z nodelete) */
	mms__tls_busy = busy;
}
