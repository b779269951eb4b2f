/* SPDX-License-Identifier: MIT */
/* msmemscope-replay.h: the replay library's public API, all of it: open a
 * .mms log, iterate its events in their recorded order, replay it, run
 * analyses and exports over it in one pass, and compare. An umbrella over
 * one header per concept, each of which compiles on its own:
 *
 *   msmemscope/error.h      error codes and mms_strerror()
 *   msmemscope/config.h     the recording configuration (mms_config_*)
 *   msmemscope/log.h        open a log, its metadata, events, iteration
 *   msmemscope/summary.h    the figures of a whole log (mms_summarize())
 *   msmemscope/pass.h       the pass driver (mms_pass_*)
 *   msmemscope/replay.h     heap state, seek, steps, step reports
 *   msmemscope/symbolize.h  function, file and line of recorded stacks
 *   msmemscope/output.h     how output files are written
 *   msmemscope/analysis.h   decompose, inefficient, leaks, trace, watch
 *   msmemscope/export.h     the dump (CSV, SQLite) and memray-style transforms
 *   msmemscope/compare.h    launches of a log or step, and compare
 *
 * Functions return 0 (or a count) on success and a negative error code on
 * failure: -errno for system errors, or one of the MMS_E* codes of
 * msmemscope/error.h. mms_strerror() explains any of them. The library
 * never prints or exits. Structures the library fills are read-only to
 * the caller; option structures are the caller's, and zero means the
 * default. */
#ifndef MSMEMSCOPE_REPLAY_H
#define MSMEMSCOPE_REPLAY_H

#include "msmemscope/error.h"
#include "msmemscope/config.h"
#include "msmemscope/log.h"
#include "msmemscope/summary.h"
#include "msmemscope/pass.h"
#include "msmemscope/replay.h"
#include "msmemscope/symbolize.h"
#include "msmemscope/output.h"
#include "msmemscope/analysis.h"
#include "msmemscope/export.h"
#include "msmemscope/compare.h"

#endif /* MSMEMSCOPE_REPLAY_H */
