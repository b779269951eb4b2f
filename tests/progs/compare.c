/* SPDX-License-Identifier: MIT */
/* compare.c: two steps of named operator launches whose net memory is
 * known, for compare.sh. With the argument "big", matmul allocates 2000
 * bytes more in each step and step 1 runs one more operator, dropout.
 * Step 2 differs from step 1: matmul keeps 500 bytes more and the extra
 * operator "extra2" runs, and 700 bytes (750 with "big") are kept
 * outside every operator. Kernel launches inside matmul and relu. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msmemscope.h"

/* Blocks pass through here so that the compiler keeps every malloc and
 * free (GCC may drop a pair it can see). */
static void *volatile sink;

static void *alloc(size_t n)
{
	sink = malloc(n);
	if (!sink)
		abort();
	return sink;
}

static void release(void *p)
{
	sink = p;
	free(sink);
}

int main(int argc, char **argv)
{
	int big = argc > 1 && !strcmp(argv[1], "big");
	void *kept[16];
	size_t nkept = 0, i;
	int step;

	for (step = 1; step <= 2; step++) {
		void *e, *t, *r;

		msmemscope_op_begin("embed");
		e = alloc(1000);
		msmemscope_op_end();

		msmemscope_op_begin("matmul");
		msmemscope_kernel_launch("gemm");
		t = alloc(64);
		release(t);
		kept[nkept++] = alloc(4000 + (big ? 2000 : 0) + (step == 2 ? 500 : 0));
		msmemscope_op_end();

		if (big && step == 1) {
			msmemscope_op_begin("dropout");
			kept[nkept++] = alloc(300);
			msmemscope_op_end();
		}

		/* A name that CSV must quote, quotes doubled. */
		msmemscope_op_begin("attn,\"qkv\"");
		kept[nkept++] = alloc(200);
		msmemscope_op_end();

		if (step == 2) {
			msmemscope_op_begin("extra2");
			kept[nkept++] = alloc(10);
			msmemscope_op_end();
		}

		msmemscope_op_begin("relu");
		msmemscope_kernel_launch("relu_kernel");
		r = alloc(128);
		release(r);
		msmemscope_op_end();

		msmemscope_op_begin("softmax");
		release(e);
		msmemscope_op_end();

		/* Kept between the operators, in step 2 only. */
		if (step == 2)
			kept[nkept++] = alloc(700 + (big ? 50 : 0));

		msmemscope_step();
	}
	for (i = 0; i < nkept; i++)
		release(kept[i]);
	printf("compare %s: %zu blocks\n", big ? "big" : "base", nkept);
	return 0;
}
