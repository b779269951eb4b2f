/* SPDX-License-Identifier: MIT */
/* inefficient.c: one block of each inefficient type and blocks that must
 * not be flagged, over known operator indices (inefficient.sh asserts the
 * report). The counter advances at each operator launch and at each memory
 * event outside an operator; the numbers below are its values.
 *
 *   1 setup        T = malloc(1024), T written
 *   2 alloc_early  E = malloc(4096), T read
 *   3 (lone free)  free(T): T's last access (2) is not before the last
 *                  allocating operator (2): not late
 *   4 use_early    E written: allocated in 2 < memory freed in 3 < first
 *                  used in 4: E is early_allocation; C = malloc(2048)
 *   5 alloc_late   L = malloc(8192), L written, C written (C allocated in 4,
 *                  last free 3: not early)
 *   6 last_use     L read
 *   7 alloc_other  O = malloc(512)
 *   8 free_late    free(L): last used in 6 < allocation in 7 < freed in 8:
 *                  L is late_deallocation; C read, free(C): used in the
 *                  operator that frees it: not late
 *   9 alloc_idle   I = malloc(16384), S = malloc(64), K = malloc(16384),
 *                  each written
 *   10..3010 tick  3001 launches; K read in launch 3009 (3000 after 9: not
 *                  more than the threshold)
 *   3011 wake      I and S read, 3002 launches after 9: I is
 *                  temporary_idleness, and S too unless --min-size > 64
 * E, O, I, S and K are live at the end. Allocation ids: T 1, E 2, C 3,
 * L 4, O 5, I 6, S 7, K 8. */
#include <stdint.h>

#include "msmemscope.h"
#include "progs.h"

#define W MSMEMSCOPE_ACCESS_WRITE
#define R MSMEMSCOPE_ACCESS_READ

int main(void)
{
	char *t, *e, *c, *l, *o, *i, *s, *k;

	msmemscope_op_begin("setup");
	t = prog_malloc(1024);
	msmemscope_access(t, 1024, W);
	msmemscope_op_end();

	msmemscope_op_begin("alloc_early");
	e = prog_malloc(4096);
	msmemscope_access(t, 1024, R);
	msmemscope_op_end();

	free(t);

	msmemscope_op_begin("use_early");
	msmemscope_access(e, 4096, W);
	c = prog_malloc(2048);
	msmemscope_op_end();

	msmemscope_op_begin("alloc_late");
	l = prog_malloc(8192);
	prog_say(1, "inefficient l=%p\n", (void *)l);
	msmemscope_access(l, 8192, W);
	msmemscope_access(c, 2048, W);
	msmemscope_op_end();

	msmemscope_op_begin("last_use");
	msmemscope_access(l, 8192, R);
	msmemscope_op_end();

	msmemscope_op_begin("alloc_other");
	o = prog_malloc(512);
	msmemscope_op_end();

	msmemscope_op_begin("free_late");
	free(l);
	msmemscope_access(c, 2048, R);
	free(c);
	msmemscope_op_end();

	msmemscope_op_begin("alloc_idle");
	i = prog_malloc(16384);
	msmemscope_access(i, 16384, W);
	s = prog_malloc(64);
	msmemscope_access(s, 64, W);
	k = prog_malloc(16384);
	msmemscope_access(k, 16384, W);
	msmemscope_op_end();

	for (int n = 10; n <= 3010; n++) {
		msmemscope_op_begin("tick");
		if (n == 3009)
			msmemscope_access(k, 16384, R);
		msmemscope_op_end();
	}

	msmemscope_op_begin("wake");
	msmemscope_access(i, 16384, R);
	msmemscope_access(s, 64, R);
	msmemscope_op_end();

	prog_say(1, "inefficient e=%p i=%p o=%p s=%p k=%p\n", (void *)e, (void *)i, (void *)o, (void *)s, (void *)k);
	return 0;
}
