/* SPDX-License-Identifier: MIT */
/* conf.h: the recording configuration's one table of keys (conf.c), behind
 * the functions of msmemscope/config.h. conf.c is compiled into the
 * recorder (its copies hidden there) and into the replay library, which
 * exports the functions; the launcher and the gdb side call them there. */
#ifndef MMS_CONF_H
#define MMS_CONF_H

#include <stddef.h>

#include "msmemscope/config.h"

/* How a key's value is read and written. */
enum mms_conf_type {
	MMS_CONF_UINT,     /* a decimal number from min to max (uint32_t or int) */
	MMS_CONF_BOOL,     /* 0 or 1 (int) */
	MMS_CONF_ENUM,     /* one of names[], stored as its index (int) */
	MMS_CONF_SIZE,     /* bytes, with K, M or G: at least min, rounded down to 4 KiB unless
	                    MMS_CONF_EXACT (uint64_t) */
	MMS_CONF_EVENTS,   /* a list of names[], stored as bits */
	MMS_CONF_STEPS,    /* a list of step numbers */
	MMS_CONF_WATCH,    /* [START[:outN],]END[,full-content] */
	MMS_CONF_ORDINALS, /* a list of numbers from min to max (at most 63), stored as bits (uint64_t) */
};

/* Written even at its default: the keys every configuration the launcher
 * writes shows. */
#define MMS_CONF_ALWAYS 1u
/* MMS_CONF_SIZE: taken to the byte, not rounded down to 4 KiB. */
#define MMS_CONF_EXACT 2u

struct mms_conf_key {
	const char *name; /* in the text */
	/* The variable that sets this key alone and wins over
	 * MSMEMSCOPE_CONFIG, or NULL. */
	const char *env;
	enum mms_conf_type type;
	size_t offset;            /* of the field in mms_config_t */
	uint64_t min, max;        /* MMS_CONF_UINT, MMS_CONF_SIZE (min only) */
	const char *const *names; /* MMS_CONF_ENUM, MMS_CONF_EVENTS: NULL-terminated */
	const char *dflt;         /* the default, as the text writes it */
	unsigned flags;           /* MMS_CONF_ALWAYS, MMS_CONF_EXACT */
	const char *expected;     /* what it takes, for messages */
	const char *what;         /* what it means */
	const char *readers;      /* who reads it */
};

/* The keys, in the order the text writes them. */
extern const struct mms_conf_key mms__conf_keys[];
extern const size_t mms__conf_nkeys;

#endif /* MMS_CONF_H */
