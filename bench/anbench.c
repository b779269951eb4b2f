/* SPDX-License-Identifier: MIT */
/* anbench.c: a workload for the analyses (bench/analyses.sh): ITERATIONS
 * operator launches over a ring of LIVE heap blocks; each launch pushes an
 * owner (model@layerK), frees the oldest block, allocates one of 16..4096
 * bytes, writes it and reads another live block, so the log has operator,
 * owner, memory and access events (8 per iteration) and LIVE live blocks.
 *
 * Usage: anbench [ITERATIONS [LIVE]]   (defaults 2500000 and 1000)
 * Linked against the no-op stubs: alone it runs the API as no-ops. */
#include <stdio.h>
#include <stdlib.h>

#include "msmemscope.h"

static const char *const ops[] = { "embed", "attn", "mlp", "norm" };
static const char *const layers[] = { "layer0", "layer1", "layer2", "layer3", "layer4", "layer5", "layer6", "layer7" };

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 2500000;
	unsigned long live = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000, i;
	unsigned long long x = 0x9e3779b97f4a7c15ull;
	char **ring;

	if (!live)
		live = 1;
	ring = calloc(live, sizeof(*ring));
	if (!ring)
		return 1;
	msmemscope_owner_push("model");
	for (i = 0; i < n; i++) {
		size_t size;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		size = 16 + (size_t)(x % 4081);
		msmemscope_op_begin(ops[i % 4]);
		msmemscope_owner_push(layers[(i / 4) % 8]);
		free(ring[i % live]);
		ring[i % live] = malloc(size);
		if (!ring[i % live])
			return 1;
		ring[i % live][0] = (char)i;
		msmemscope_access(ring[i % live], size, MSMEMSCOPE_ACCESS_WRITE);
		if (ring[(i + 1) % live])
			msmemscope_access(ring[(i + 1) % live], 1, MSMEMSCOPE_ACCESS_READ);
		msmemscope_owner_pop();
		msmemscope_op_end();
	}
	msmemscope_owner_pop();
	for (i = 0; i < live; i++)
		free(ring[i]);
	free(ring);
	printf("anbench: %lu iterations over %lu live blocks\n", n, live);
	return 0;
}
