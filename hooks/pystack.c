/* SPDX-License-Identifier: MIT */
/* pystack.c: Python call stacks (python_stack=N): each thread's shadow
 * stack of Python frames, kept by the msmemscope package's profile hook
 * through the msmemscope__py_* functions below, and read by the
 * allocation hooks without a lock, without the GIL and without calling
 * the allocator.
 *
 * The package's profile hook (hooks/python/pystacks.c) runs with the
 * GIL held on every Python call and return of a thread: it pushes the
 * frame and its code object here, and pops it. A code object is defined
 * in the log once (a PYCODE record: file, qualified name, first line);
 * the package keeps a reference to it, so its address is never reused.
 * At an allocation the hook turns the thread's innermost frames into
 * tagged frames (format.h: MMS_PYFRAME), interned on their own and
 * grafted onto the C stack by one node (MMS_PYGRAFT: a Python context
 * costs its frames once, not once per C stack it meets): the line of each
 * frame is asked of the interpreter (PyFrame_GetLineNumber,
 * through the package: it reads the frame's line table and allocates
 * nothing), for the innermost frame when its instruction moved since the
 * last allocation and for the others once per call they make, since a
 * frame that called another stays on that line until it returns; and
 * only for an instruction of a code object the thread has not seen (a
 * per-thread cache of (code, instruction) -> line).
 *
 * What an allocation costs is kept small the way the C stacks' walker
 * does it: the frames below the lowest one pushed or popped since the
 * last allocation are known to be the same, and keep their interned
 * ids; the others go through a small per-thread cache of (parent, frame)
 * -> id before the process's table.
 *
 * Where the package can read the interpreter's own frames (CPython 3.11
 * to 3.13: hooks/python/pystacks.c), it installs no profile hook at
 * all and gives the recorder a walker instead (msmemscope__py_walker,
 * pywalk.h): at an allocation the recorder asks it for the thread's
 * innermost frames (code object, instruction, whether the frame began a
 * run of the eval loop), keeps the frames equal to the last capture's
 * (same frame, code and instruction) with their interned ids, and
 * defines a code object the first time a stack shows it. The program then
 * runs at the speed it runs without the recorder's Python stacks: no hook
 * at each call, no frame object made for each call. A code object defined
 * while its thread does not hold the GIL cannot be kept alive by the
 * package; its slot then also keeps its file and name objects, and a
 * later code object at its address with others is a code object of its
 * own. */
#define _GNU_SOURCE
#include <string.h>

#include "hooks-int.h"
#include "log.h"
#include "pywalk.h"

#define PY_DEPTH_MAX (1u << 20) /* frames kept per thread; deeper ones are counted only */
#define PY_DEPTH_START 256      /* the first room of a thread's stack: doubled as needed */
#define ICACHE 512              /* per-thread cache of interned Python frames */
#define CCACHE 256              /* per-thread cache of code ids */
#define LCACHE 1024             /* per-thread cache of (code, instruction) -> line */
#define CODE_SLOTS (1u << 17)
#define CODE_MAX (CODE_SLOTS / 4 * 3)

struct py_entry {
	const void *frame; /* the interpreter's PyFrameObject */
	uintptr_t sp;      /* the profile hook's stack pointer at its call event */
	uint32_t code;     /* PYCODE id, 0: not defined (the table is full) */
	uint32_t line;     /* cached line, 0: ask again */
	int32_t lasti;     /* the instruction line was asked at, -2: none */
	uint32_t entry;    /* it began a run of the eval loop (MMS_PYFRAME_ENTRY) */
};

/* One thread's shadow stack and the frames it last interned. Written by
 * its own thread only: the profile hook pushes and pops, the allocation
 * hook reads (and caches lines). */
struct mms_pystack {
	uint32_t depth; /* frames on the stack (may pass cap) */
	uint32_t cap;   /* room in e[]: frames deeper are counted only */
	/* e[0 .. clean) are as the last capture saw them (their frames are
	 * last_tag[i - last_first]): nothing was pushed or popped below. */
	uint32_t clean;
	uint32_t nlast; /* the last interned Python frames, outermost first */
	/* The last graft node: C stack base, Python stack py, its id. */
	uint32_t graft_base, graft_py, graft_id;
	uint32_t last_first; /* the index in e[] of last_tag[0] */
	struct py_entry *e;  /* the arena's; grown by the profile hook */
	uint64_t last_tag[MMS_MAX_DEPTH];
	uint32_t last_id[MMS_MAX_DEPTH];
	struct {
		uint64_t tag;
		uint32_t parent, id;
	} icache[ICACHE];
	struct {
		const void *code;
		uint32_t id;
	} ccache[CCACHE];
	struct {
		uint32_t code;
		int32_t lasti;
		uint32_t line;
	} lcache[LCACHE];
	/* Walk mode: this capture's frames (innermost first), the last
	 * capture's (outermost first), room to describe a code object. */
	struct mms_pyraw *raw, *lraw;
	struct mms_pycode_desc *desc;
};

/* A code object the log defines. Its names are kept (in names[]) so that
 * a fork child's log, which starts empty, can define it again. */
struct code_slot {
	uint32_t state; /* 0 empty, 1 being defined, 2 ready, 3 dead (its code
			   object is gone: another one has its address) */
	uint32_t gen;   /* the log_gen of the log that has its PYCODE record */
	const void *code;
	const char *file, *name; /* in names[], or NULL (full) */
	uint32_t firstline;
	uint32_t pinned;                 /* the package holds a reference to code */
	const void *file_obj, *name_obj; /* walk mode, not pinned: its names' objects */
};

uint32_t mms__py_depth;
uint32_t mms__stacks_on;
uint32_t mms__free_stacks_on;
#define NAMES_SIZE (16u << 20)

static struct code_slot *codes;
static uint32_t ncodes;
static char *names;
static uint64_t names_used;
/* Which log the process writes: bumped in a fork child. */
static uint32_t log_gen = 1;
static int (*line_of)(const void *frame);
static int (*lasti_of)(const void *frame);
static int (*hooked)(void);
/* Walk mode (msmemscope__py_walker): the package's walker and helpers. */
static mms_pywalk_fn walk_of;
static mms_pydescribe_fn describe_of;
static mms_pyline_fn code_line_of;
static __thread struct mms_pystack *tls_py;

void mms__pystack_init(void)
{
	mms__py_depth = mms__config.python_stack;
	if (mms__py_depth && !codes) {
		codes = mms__map_anon(sizeof(struct code_slot) * CODE_SLOTS);
		names = mms__map_anon(NAMES_SIZE);
	}
	if (!codes)
		mms__py_depth = 0;
	mms__stacks_on = mms__config.call_stack || mms__py_depth;
	mms__free_stacks_on = mms__stacks_on && mms__config.free_stack;
}

void mms__pystack_after_fork_child(void)
{
	/* The child's log starts empty: code objects keep their ids and are
	 * defined in it again when a stack of the child first shows them
	 * (define_again). Its threads but the forking one are gone; this
	 * thread's Python stack stays as it was, its interned frames do not. */
	log_gen++;
	if (tls_py) {
		tls_py->nlast = tls_py->clean = tls_py->graft_id = 0;
		memset(tls_py->icache, 0, sizeof tls_py->icache);
	}
}

static void stack_free(struct mms_pystack *s);

void mms__pystack_thread_exit(void)
{
	struct mms_pystack *s = tls_py;

	if (s) {
		tls_py = NULL;
		stack_free(s);
	}
}

static inline uint32_t code_hash(const void *code)
{
	uint64_t x = (uintptr_t)code;

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 32;
	return (uint32_t)x & (CODE_SLOTS - 1);
}

/* Whether id is still the id of the code object r runs: a slot the package
 * pinned is; another is while its names' objects are those of r's code. */
static inline int slot_is(uint32_t id, const struct mms_pyraw *r)
{
	const struct code_slot *c = &codes[id - 1];

	if (c->pinned)
		return 1;
	return __atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == 2 && c->file_obj == r->file && c->name_obj == r->name;
}

/* The id of code, 0 when it has none yet. In walk mode r is the frame
 * running it: a slot of code's address whose code object is gone (not
 * pinned, other names' objects) is not its id, and is marked dead on the
 * way; the hook's code objects are all pinned (r NULL). */
static uint32_t code_find(const void *code, const struct mms_pyraw *r)
{
	for (uint32_t i = code_hash(code);; i = (i + 1) & (CODE_SLOTS - 1)) {
		struct code_slot *c = &codes[i];
		uint32_t st = __atomic_load_n(&c->state, __ATOMIC_ACQUIRE), two = 2;

		if (st == 0)
			return 0;
		if (st != 2 || c->code != code)
			continue;
		if (!r || slot_is(i + 1, r))
			return i + 1;
		__atomic_compare_exchange_n(&c->state, &two, 3, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	}
}

/* Frees s and what it holds (some of which may be missing). */
static void stack_free(struct mms_pystack *s)
{
	void *held[] = { s->e, s->raw, s->lraw, s->desc };

	for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++)
		if (held[i])
			mms__arena_free(held[i]);
	mms__arena_free(s);
}

static struct mms_pystack *stack_new(void)
{
	int busy = mms__tls_busy;
	struct mms_pystack *s;

	mms__tls_busy = 2;
	s = mms__arena_alloc(sizeof *s, 64);
	if (s) {
		memset(s, 0, sizeof *s);
		if (walk_of) {
			s->raw = mms__arena_alloc(mms__py_depth * sizeof *s->raw, 64);
			s->lraw = mms__arena_alloc(mms__py_depth * sizeof *s->lraw, 64);
			s->desc = mms__arena_alloc(sizeof *s->desc, 64);
		} else {
			s->e = mms__arena_alloc(PY_DEPTH_START * sizeof *s->e, 64);
		}
		if (walk_of ? !s->raw || !s->lraw || !s->desc : !s->e) {
			stack_free(s);
			s = NULL;
		}
	}
	mms__tls_busy = busy;
	if (s) {
		s->cap = walk_of ? 0 : PY_DEPTH_START;
		tls_py = s;
	}
	return s;
}

/* Doubles the room of s->e (with the GIL held, outside any hook): the new
 * array is published whole before the old one goes, so an allocation in
 * a signal handler of this thread reads one or the other. Returns 0, or
 * -1 when the arena has no room (deeper frames are then counted only). */
static __attribute__((noinline)) int stack_grow(struct mms_pystack *s)
{
	int busy = mms__tls_busy;
	struct py_entry *old = s->e, *e;

	if (s->cap >= PY_DEPTH_MAX)
		return -1;
	mms__tls_busy = 2;
	e = mms__arena_alloc((size_t)s->cap * 2 * sizeof *e, 64);
	if (e) {
		memcpy(e, old, (size_t)s->cap * sizeof *e);
		__atomic_store_n(&s->e, e, __ATOMIC_RELEASE);
		s->cap *= 2;
		mms__arena_free(old);
	}
	mms__tls_busy = busy;
	return e ? 0 : -1;
}

static inline uint32_t ccache_slot(const void *code)
{
	return (uint32_t)((uintptr_t)code >> 4) & (CCACHE - 1);
}

/* The line of entry e, whose line is unknown or may have moved: asked of
 * the interpreter when its instruction is not one the thread has seen. */
static inline void entry_line(struct mms_pystack *s, struct py_entry *e)
{
	uint32_t h;
	int l;

	if (!lasti_of || !e->code) {
		l = line_of ? line_of(e->frame) : 0;
		e->line = l > 0 ? (uint32_t)l : 0;
		return;
	}
	l = lasti_of(e->frame);
	if (l == e->lasti && e->line)
		return;
	e->lasti = l;
	h = (e->code * 0x9e3779b1u ^ (uint32_t)l * 0x85ebca6bu) >> 22 & (LCACHE - 1);
	if (s->lcache[h].code == e->code && s->lcache[h].lasti == l) {
		e->line = s->lcache[h].line;
		return;
	}
	l = line_of ? line_of(e->frame) : 0;
	e->line = l > 0 ? (uint32_t)l : 0;
	s->lcache[h].code = e->code;
	s->lcache[h].lasti = e->lasti;
	s->lcache[h].line = e->line;
}

/* Interns frame tag above parent, through the thread's cache. */
static inline uint32_t intern_cached(struct mms_pystack *s, struct mms_thread *t, uint32_t parent, uint64_t tag)
{
	uint32_t h = (uint32_t)((tag ^ (tag >> 29) ^ ((uint64_t)parent * 0x9e3779b97f4a7c15ull)) >> 20) & (ICACHE - 1);

	if (s->icache[h].tag == tag && s->icache[h].parent == parent && s->icache[h].id)
		return s->icache[h].id;
	s->icache[h].tag = tag;
	s->icache[h].parent = parent;
	return s->icache[h].id = mms__intern_frame(t, parent, tag);
}

/* The stack of an event whose C stack is base and Python frames py (both
 * interned, each rooted at 0): a graft node (format.h: MMS_PYGRAFT), so
 * that a Python context costs its frames once whatever C stacks it
 * meets; either alone where the other is empty. */
static inline uint32_t graft(struct mms_pystack *s, struct mms_thread *t, uint32_t base, uint32_t py)
{
	if (!base || !py)
		return base ? base : py;
	if (s->graft_id && s->graft_base == base && s->graft_py == py)
		return s->graft_id;
	s->graft_base = base;
	s->graft_py = py;
	return s->graft_id = intern_cached(s, t, base, MMS_PYGRAFT | py);
}

/* A copy of s in names[], or NULL when it is full. */
static const char *name_copy(const char *s)
{
	size_t len = s ? strnlen(s, MMS_MAX_STRING) : 0;
	uint64_t off;

	if (!s || !names)
		return NULL;
	off = __atomic_fetch_add(&names_used, len + 1, __ATOMIC_RELAXED);
	if (off + len + 1 > NAMES_SIZE)
		return NULL;
	memcpy(names + off, s, len);
	names[off + len] = 0;
	return names + off;
}

/* Writes the PYCODE record of code id into the log, when it can be
 * written: the slot says so. */
static void define(struct mms_thread *t, uint32_t id)
{
	struct code_slot *c = &codes[id - 1];
	const char *file = c->file ? c->file : "?", *name = c->name ? c->name : "?";
	size_t fl = strlen(file), nl = strlen(name);
	/* Encoded in place (mms__meta_begin): 8 KiB of names would not fit a
	 * small thread's stack. */
	uint8_t *p = mms__meta_begin(t, MMS_TAG_PYCODE, 5 * 10 + fl + nl);

	if (p) {
		p = mms_put_u(p, id);
		p = mms_put_s(p, file, fl);
		p = mms_put_s(p, name, nl);
		p = mms_put_u(p, c->firstline);
		mms__rec_commit(t, p);
	}
	c->gen = log_gen;
}

/* In a fork child: the code of a frame first shown in its log. Inside a
 * hook (no allocation, no lock). */
static inline void define_again(struct mms_thread *t, uint32_t id)
{
	if (id && unlikely(__atomic_load_n(&codes[id - 1].gen, __ATOMIC_RELAXED) != log_gen))
		define(t, id);
}

/* --- what the package calls ----------------------------------------------- */

/* How many Python frames the recorder wants with each event, 0: none (the
 * package then installs no profile hook). line tells a frame's line, lasti
 * (NULL: none) the offset of its instruction, and on_thread whether the
 * calling thread's profile function is still the package's (a profiler
 * set from C, cProfile's, replaces it without a word: the frames then
 * return unseen, and must not be read); none of them may allocate nor
 * need the GIL. */
MMS_EXPORT uint32_t msmemscope__py_setup(int (*line)(const void *frame), int (*lasti)(const void *frame),
					 int (*on_thread)(void))
{
	if (!mms__py_depth || !mms__active)
		return 0;
	line_of = line;
	lasti_of = lasti;
	hooked = on_thread;
	return mms__py_depth;
}

/* The thread enters frame, running code; sp is the profile hook's stack
 * pointer, 1 when unknown (a frame running before the hook was installed).
 * Returns 1 when code has no id yet: the package then calls
 * msmemscope__py_code() before anything else. */
MMS_EXPORT int msmemscope__py_push(const void *frame, const void *code, uintptr_t sp)
{
	struct mms_pystack *s = tls_py;
	struct py_entry *e;
	uint32_t d;

	if (unlikely(!s) && !(s = stack_new()))
		return 0;
	d = s->depth;
	if (unlikely(d >= s->cap))
		stack_grow(s);
	if (likely(d < s->cap)) {
		uint32_t k = ccache_slot(code);

		e = &s->e[d];
		e->frame = frame;
		e->sp = sp;
		if (s->ccache[k].code == code) {
			e->code = s->ccache[k].id;
		} else {
			e->code = code_find(code, NULL);
			if (e->code) {
				s->ccache[k].code = code;
				s->ccache[k].id = e->code;
			}
		}
		e->line = 0;
		e->lasti = -2;
		if (d) {
			/* The caller stands on the line of this call now. */
			s->e[d - 1].line = 0;
			s->e[d - 1].lasti = -2;
		}
		if (s->clean > (d ? d - 1 : 0))
			s->clean = d ? d - 1 : 0;
		if (!d) {
			e->entry = 1;
		} else if (sp <= 1) {
			/* A frame running when the hook was installed: taken to
			 * run in the same run of the eval loop as its caller,
			 * when that one was such a frame too. */
			e->entry = s->e[d - 1].sp > 1;
		} else if (s->e[d - 1].sp <= 1) {
			/* Above such a frame: taken to run in the same run of
			 * the eval loop, whose stack pointer it tells. */
			e->entry = 0;
			s->e[d - 1].sp = sp;
		} else {
			e->entry = s->e[d - 1].sp != sp;
		}
	}
	/* A signal handler that allocates sees the entry whole or not at
	 * all. */
	__atomic_signal_fence(__ATOMIC_RELEASE);
	s->depth = d + 1;
	return d < s->cap && !s->e[d].code;
}

/* The thread left frame (returned, raised or yielded). A return without
 * its call (a frame entered before the hook was installed) is ignored. */
MMS_EXPORT void msmemscope__py_pop(const void *frame)
{
	struct mms_pystack *s = tls_py;
	uint32_t d;

	if (!s || !(d = s->depth))
		return;
	if (d > s->cap) {
		s->depth = d - 1;
		return;
	}
	/* Frames whose returns were missed (an exception in the hook's
	 * absence) are dropped with the one returning under them. */
	for (uint32_t k = d; k > 0 && d - k < 8; k--)
		if (s->e[k - 1].frame == frame) {
			s->depth = k - 1;
			if (k > 1) {
				/* It goes on from its call. */
				s->e[k - 2].line = 0;
				s->e[k - 2].lasti = -2;
			}
			if (s->clean > (k > 1 ? k - 2 : 0))
				s->clean = k > 1 ? k - 2 : 0;
			return;
		}
}

/* Forgets the thread's frames: another profile hook replaced ours. */
MMS_EXPORT void msmemscope__py_reset(void)
{
	if (tls_py)
		tls_py->depth = tls_py->clean = 0;
}

/* Takes a slot for code and gives it its names; a ready slot when it
 * returns. Returns its id, 0 when the table is full. */
static uint32_t code_claim(const void *code, const char *file, const char *name, int firstline, int pinned,
			   const void *file_obj, const void *name_obj)
{
	for (uint32_t i = code_hash(code);; i = (i + 1) & (CODE_SLOTS - 1)) {
		struct code_slot *c = &codes[i];
		uint32_t expect = 0;

		if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE))
			continue; /* taken: a code object of another id */
		if (__atomic_load_n(&ncodes, __ATOMIC_RELAXED) >= CODE_MAX)
			return 0;
		if (!__atomic_compare_exchange_n(&c->state, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			continue;
		__atomic_fetch_add(&ncodes, 1, __ATOMIC_RELAXED);
		c->code = code;
		c->file = name_copy(file);
		c->name = name_copy(name);
		c->firstline = firstline > 0 ? (uint32_t)firstline : 0;
		c->pinned = (uint32_t)pinned;
		c->file_obj = file_obj;
		c->name_obj = name_obj;
		c->gen = 0; /* not in the log yet */
		return i + 1;
	}
}

/* Defines the code object of the thread's innermost frame, code: writes its
 * PYCODE record and gives the frame its id. Called with the GIL held,
 * after msmemscope__py_push() returned 1. Returns the id, 0 when the table
 * is full (the frame is then shown as an unknown one). */
MMS_EXPORT uint32_t msmemscope__py_code(const void *code, const char *file, const char *name, int firstline)
{
	struct mms_pystack *s = tls_py;
	struct mms_thread *t;
	uint32_t id = 0;
	int busy = mms__tls_busy;

	if (!codes)
		return 0;
	id = code_find(code, NULL);
	if (!id && (id = code_claim(code, file, name, firstline, 1, NULL, NULL))) {
		mms__tls_busy = 2;
		/* Not recording now (a log still to open): the first stack that
		 * shows it defines it. */
		t = mms__recording ? mms__thread() : NULL;
		if (t)
			define(t, id);
		mms__tls_busy = busy;
		__atomic_store_n(&codes[id - 1].state, 2, __ATOMIC_RELEASE);
	}
	if (s && s->depth && s->depth <= s->cap) {
		s->e[s->depth - 1].code = id;
		if (id) {
			s->ccache[ccache_slot(code)].code = code;
			s->ccache[ccache_slot(code)].id = id;
		}
	}
	return id;
}

/* Walk mode: the package reads the interpreter's frames itself (pywalk.h).
 * Returns python_stack, 0 when the recorder wants no Python frames (the
 * package then keeps none). */
MMS_EXPORT uint32_t msmemscope__py_walker(mms_pywalk_fn walk, mms_pydescribe_fn describe, mms_pyline_fn line)
{
	if (!mms__py_depth || !mms__active || !walk || !describe || !line)
		return 0;
	describe_of = describe;
	code_line_of = line;
	__atomic_store_n(&walk_of, walk, __ATOMIC_RELEASE);
	return mms__py_depth;
}

/* --- what the allocation hooks call ---------------------------------------- */

/* --- walk mode ---------------------------------------------------------------- */

/* The id of the code object frame r runs, defined in the log on its first
 * sight; 0 when it cannot have one (the table is full, the package could
 * not describe it). */
static uint32_t walk_code(struct mms_pystack *s, struct mms_thread *t, const struct mms_pyraw *r)
{
	uint32_t k = ccache_slot(r->code), id;

	if (s->ccache[k].code == r->code && (id = s->ccache[k].id) && slot_is(id, r)) {
		define_again(t, id);
		return id;
	}
	id = code_find(r->code, r);
	if (!id) {
		if (describe_of(r->code, s->desc))
			return 0;
		s->desc->file[MMS_PYNAME_MAX - 1] = s->desc->name[MMS_PYNAME_MAX - 1] = 0;
		id = code_claim(r->code, s->desc->file, s->desc->name, s->desc->firstline, s->desc->pinned, r->file,
				r->name);
		if (!id)
			return 0;
		define(t, id);
		__atomic_store_n(&codes[id - 1].state, 2, __ATOMIC_RELEASE);
	} else {
		define_again(t, id);
	}
	s->ccache[k].code = r->code;
	s->ccache[k].id = id;
	return id;
}

/* The line of frame r, whose code has id (0: none), through the thread's
 * cache of (code, instruction) -> line. */
static inline uint32_t walk_line(struct mms_pystack *s, uint32_t id, const struct mms_pyraw *r)
{
	uint32_t h = (id * 0x9e3779b1u ^ (uint32_t)r->lasti * 0x85ebca6bu) >> 22 & (LCACHE - 1);
	int l;

	if (id && s->lcache[h].code == id && s->lcache[h].lasti == r->lasti)
		return s->lcache[h].line;
	l = code_line_of(r->code, r->lasti);
	if (id) {
		s->lcache[h].code = id;
		s->lcache[h].lasti = r->lasti;
		s->lcache[h].line = l > 0 ? (uint32_t)l : 0;
	}
	return l > 0 ? (uint32_t)l : 0;
}

static inline int raw_same(const struct mms_pyraw *a, const struct mms_pyraw *b)
{
	return a->frame == b->frame && a->code == b->code && a->lasti == b->lasti && a->entry == b->entry;
}

/* The stack of an allocation in walk mode: the frames the walker finds,
 * grafted onto the C stack base; those the last capture had below the
 * first one that differs keep their ids. */
static uint32_t capture_walk(struct mms_thread *t, uint32_t base, mms_pywalk_fn walk)
{
	struct mms_pystack *s = tls_py;
	uint32_t n, c = 0, parent;

	if (unlikely(!s) && !(s = stack_new()))
		return base;
	if (unlikely(!s->raw))
		return base;
	n = walk(s->raw, mms__py_depth);
	if (!n) {
		s->nlast = 0;
		return base;
	}
	/* raw[] is innermost first, lraw[] and last_id[] outermost first. */
	while (c < n && c < s->nlast && raw_same(&s->raw[n - 1 - c], &s->lraw[c]))
		c++;
	if (c == n && n == s->nlast)
		return graft(s, t, base, s->last_id[n - 1]);
	parent = c ? s->last_id[c - 1] : 0;
	for (uint32_t i = c; i < n; i++) {
		const struct mms_pyraw *r = &s->raw[n - 1 - i];
		uint32_t id = walk_code(s, t, r);

		s->last_id[i] = parent =
			intern_cached(s, t, parent, mms_pyframe(id, walk_line(s, id, r), r->entry != 0));
	}
	/* The frames kept for the next capture, outermost first. */
	for (uint32_t i = c; i < n; i++)
		s->lraw[i] = s->raw[n - 1 - i];
	s->nlast = n;
	return graft(s, t, base, parent);
}

uint32_t mms__pystack_capture(struct mms_thread *t, uint32_t base)
{
	struct mms_pystack *s = tls_py;
	uint32_t n, m, first, c = 0, parent;
	/* Published after the helpers it calls (msmemscope__py_walker). */
	mms_pywalk_fn walk = __atomic_load_n(&walk_of, __ATOMIC_ACQUIRE);

	if (walk)
		return capture_walk(t, base, walk);
	if (!s || !s->depth)
		return base;
	if (hooked && !hooked()) {
		/* Another profile function took the thread over: its frames
		 * are no longer followed. */
		s->depth = s->clean = s->nlast = 0;
		return base;
	}
	n = s->depth < s->cap ? s->depth : s->cap;
	m = n < mms__py_depth ? n : mms__py_depth;
	first = n - m;
	if (first != s->last_first) {
		s->nlast = 0;
	} else if (s->clean > first) {
		/* Unchanged since the last capture: their ids stand. */
		c = s->clean - first;
		if (c > s->nlast)
			c = s->nlast;
		if (c >= m)
			c = m - 1;
	}
	/* Outermost first, keeping the prefix shared with the last stack. */
	for (uint32_t i = c; i < m; i++) {
		struct py_entry *e = &s->e[first + i];
		uint64_t tag;

		/* The innermost frame moves on; the others only when
		 * something was pushed or popped above them (line 0). */
		if (first + i == n - 1 || !e->line)
			entry_line(s, e);
		define_again(t, e->code);
		tag = mms_pyframe(e->code, e->line, e->entry);
		if (c == i && i < s->nlast && s->last_tag[i] == tag) {
			c++;
			continue;
		}
		s->last_tag[i] = tag;
	}
	s->clean = n - 1;
	if (c == m && m == s->nlast)
		return graft(s, t, base, s->last_id[m - 1]);
	parent = c ? s->last_id[c - 1] : 0;
	for (uint32_t i = c; i < m; i++)
		s->last_id[i] = parent = intern_cached(s, t, parent, s->last_tag[i]);
	s->nlast = m;
	s->last_first = first;
	return graft(s, t, base, parent);
}
