/* SPDX-License-Identifier: MIT */
/* msmemscope/config.h: the recording configuration: what the recorder is
 * asked to record. It travels as text, "key=value;key=value" (the
 * MSMEMSCOPE_CONFIG environment variable, which msmemscope writes from its
 * options), plus one variable for each of a few keys (MSMEMSCOPE_LOG_LIMIT,
 * ...); the recorder keeps what it used in its log. These functions are
 * the one writer and the one parser of that text; doc/recorder.md lists
 * the keys. Part of the replay API: msmemscope-replay.h includes it; the
 * recorder uses it too.
 *
 * Functions return 0 or a negative errno value; the structures are the
 * caller's, filled in place (nothing to free). */
#ifndef MSMEMSCOPE_API_CONFIG_H
#define MSMEMSCOPE_API_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MMS_CONFIG_STEPS_MAX 5 /* steps: at most 5 step numbers */
#define MMS_CONFIG_NAME_MAX 64 /* watch: operator names of at most 63 bytes */

/* events: what is recorded. alloc and free go together; access implies
 * both. */
enum mms_config_events {
	MMS_CONFIG_EV_ALLOC = 1u << 0,
	MMS_CONFIG_EV_FREE = 1u << 1,
	MMS_CONFIG_EV_LAUNCH = 1u << 2,
	MMS_CONFIG_EV_ACCESS = 1u << 3,
};

/* log_level: what the recorder (and msmemscope) say on stderr. */
enum mms_config_log_level { MMS_CONFIG_LOG_INFO, MMS_CONFIG_LOG_WARN, MMS_CONFIG_LOG_ERROR };

/* clock: the order stamps. TSC when the CPU's is invariant, else an
 * atomic counter; counter forces the counter; exact reads the TSC at every
 * event also while the process has one thread (tsc reads it there only
 * as often as event times need: doc/recorder.md, "Order"). */
enum mms_config_clock { MMS_CONFIG_CLOCK_TSC, MMS_CONFIG_CLOCK_COUNTER, MMS_CONFIG_CLOCK_EXACT };

/* unwind: which unwinder captures the stacks. */
enum mms_config_unwind { MMS_CONFIG_UNWIND_WALKER, MMS_CONFIG_UNWIND_LIBUNWIND };

/* watch: [START[:outN],]END[,full-content]. */
struct mms_config_watch {
	int on;                          /* a watch was asked for */
	int full_content;                /* ",full-content": the blocks' bytes too */
	int out;                         /* START:outN: N; -1: every output */
	char start[MMS_CONFIG_NAME_MAX]; /* "" when only END was given */
	char end[MMS_CONFIG_NAME_MAX];
};

/* One recording configuration. Each field is one key of the text; the
 * comment gives the key, then its default. */
typedef struct mms_config {
	uint32_t call_stack; /* call_stack: C frames recorded per event, 0 = none; 0 */
	uint32_t events;     /* events: enum mms_config_events; alloc,free,launch */
	/* python_stack: Python frames recorded per event (the msmemscope
	 * package's profile hook keeps them), 0 = none; 0 */
	uint32_t python_stack;
	/* collect=deferred: record between msmemscope_start() and
	 * msmemscope_stop() only (collect=immediate: from the start) */
	int deferred;
	uint32_t nsteps; /* steps: how many in steps[], 0 = every step; all */
	uint32_t steps[MMS_CONFIG_STEPS_MAX];
	int follow_exec;               /* follow_exec: record the images the program execs; 1 */
	int log_level;                 /* log_level: enum mms_config_log_level; warn */
	int freeres;                   /* freeres: glibc and libstdc++ free their memory at exit; 1 */
	/* reach: the process's writable memory is scanned at exit for
	 * pointers to its heap, which tell leaked blocks from those still
	 * reachable; 1 */
	int reach;
	struct mms_config_watch watch; /* watch: none */
	uint64_t log_limit;            /* log_limit: the largest log file, bytes; 64G */
	int clock;                     /* clock: enum mms_config_clock; tsc */
	int log_thread;                /* log_thread: the msmemscope-log thread may run; 1 */
	int unwind;                    /* unwind: enum mms_config_unwind; walker */
	/* unwind_check: compare the walker with libunwind (1), and print the
	 * first differences (2); 0 */
	int unwind_check;
	int guard;              /* guard: red zones, quarantine and free checks (1), and
	                           full checks at each operator launch's end (2); 0 */
	uint32_t guard_redzone; /* guard_redzone: bytes of each red zone; 16 */
	uint64_t guard_quarantine; /* guard_quarantine: bytes of freed blocks held back; 4M */
	/* torch_ops: a Python program's aten operators are operator launches
	 * from its import of torch on (the msmemscope package's boot module;
	 * the launcher's --level=op); 0 */
	int torch_ops;
	/* free_stack: with stacks on, each free records the stack of the
	 * call that freed (0: allocations only, valgrind's
	 * --keep-stacktraces=alloc; the launcher's --keep-stacktraces); 1 */
	int free_stack;
	/* devices: the CUDA devices whose device memory is recorded, bit N for
	 * ordinal N (0 to 63); 0 = every device (the launcher's --device); all */
	uint64_t devices;
	/* read-only: what parsing met and skipped */
	uint32_t unknown; /* keys this version does not know */
	uint32_t bad;     /* values it could not read: those keys kept their value */
} mms_config_t;

/* What parsing skipped, for a message: the first bad value ("SOURCE:
 * KEY=VALUE: expected EXPECTED") and the first unknown key. Parsing
 * writes each part only when it meets one: clear it first. */
typedef struct mms_config_error {
	char source[32]; /* "MSMEMSCOPE_CONFIG", or the variable of the key */
	char key[32];
	char value[128];      /* cut to fit */
	const char *expected; /* what the key takes (static) */
	char unknown[32];     /* the first key this version does not know, cut to fit */
} mms_config_error_t;

/* Sets *cfg to the defaults. */
void mms_config_default(mms_config_t *cfg);

/* Parses len bytes of "key=value;..." text on top of *cfg. Keys this
 * version does not know are skipped and counted in cfg->unknown. A value
 * that does not parse leaves its key as it was and is counted in
 * cfg->bad. The first of each is described in *err when err is not NULL.
 * Returns 0, or -EINVAL when a value was bad (the rest is parsed all the
 * same). */
int mms_config_parse(mms_config_t *cfg, const char *text, size_t len, mms_config_error_t *err);

/* Sets one key from its value as the text would have it: returns 0, or
 * -EINVAL (the key unchanged, *err says why) for a bad value, -ENOENT
 * for a key this version does not know. */
int mms_config_set(mms_config_t *cfg, const char *key, const char *value, size_t len, mms_config_error_t *err);

/* The configuration the recorder reads from the environment, on top of
 * the defaults: text as MSMEMSCOPE_CONFIG's value (NULL: the variable's,
 * when set), then the variables of single keys (MSMEMSCOPE_LOG_LIMIT,
 * MSMEMSCOPE_CLOCK, MSMEMSCOPE_LOG_THREAD, MSMEMSCOPE_UNWIND,
 * MSMEMSCOPE_UNWIND_CHECK) that are set and not empty, which win. Returns
 * as mms_config_parse(). */
int mms_config_getenv(mms_config_t *cfg, const char *text, mms_config_error_t *err);

/* Writes cfg as MSMEMSCOPE_CONFIG text into buf (cap bytes, NUL-terminated
 * when cap is not 0, cut to fit): call_stack, events, collect, follow_exec
 * and log_level always, the other keys when they are not at their
 * default. Returns the length of the whole text, as snprintf(). */
size_t mms_config_format(const mms_config_t *cfg, char *buf, size_t cap);

/* The configuration log was recorded with, as its recorder kept it (a log
 * of this version holds every key that was not at its default). Returns
 * 0; or MMS_EUSAGE when the log keeps none (it was cut before the
 * recorder wrote it): *cfg then holds the defaults. Keys and values the
 * parser does not know are counted in cfg->unknown and cfg->bad. */
struct mms_log;
int mms_log_config(const struct mms_log *log, mms_config_t *cfg);

#ifdef __cplusplus
}
#endif

#endif /* MSMEMSCOPE_API_CONFIG_H */
