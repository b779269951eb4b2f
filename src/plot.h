/* SPDX-License-Identifier: MIT */
/* plot.h: pictures of an analysis's figures as self-contained SVG files. */
#ifndef MMS_PLOT_H
#define MMS_PLOT_H

#include "analysis.h"

/* Draws t's timeline (it must have been run with plot_buckets) into the
 * SVG file path: live bytes over time, step boundaries, operator launches
 * and the peak. Returns 0, or CLI_EXIT_FAILURE after saying why. */
int plot_usage_svg(struct an_ctx *c, const mms_trace_t *t, const char *path);

#endif /* MMS_PLOT_H */
