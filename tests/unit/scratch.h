/* SPDX-License-Identifier: MIT */
/* scratch.h: the folders the Check tests write their files in. A test
 * case gets one folder in /tmp, made and removed with all it holds in the
 * runner's own process (an unchecked fixture), so that it goes even when
 * a test fails: the test's process then exits before its own teardown.
 * Each test gets a fresh folder inside it as its working directory (a
 * checked fixture, in the test's process), removed after the test. */
#ifndef MMS_SCRATCH_H
#define MMS_SCRATCH_H

#include <check.h>

/* Adds both fixtures to tc. */
void scratch_add(TCase *tc);
/* The running test's folder, an absolute path. */
const char *scratch_dir(void);

#endif /* MMS_SCRATCH_H */
