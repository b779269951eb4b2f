/* SPDX-License-Identifier: MIT */
/* infer.c: a small annotated inference loop with two deliberate memory bugs,
 * the program msmemscope's README, user guide and tests run.
 *
 * Usage: infer [steps]   (steps 1..1000, default 5)
 *
 * Shape, as in the programs msmemscope is for: the model is loaded (weights,
 * owner "model@weights") and a workspace arena is set up (one malloc'd
 * block, owner "model@workspace", handed out as two pool blocks of the pool
 * "workspace": softmax's output `probs`, 256 bytes, directly followed by
 * layernorm's `gamma`, 64 bytes). Then each step runs the operators
 * embed, attention, matmul, softmax and layernorm, in that order, each
 * between msmemscope_op_begin() and msmemscope_op_end(); the step ends with
 * msmemscope_step(). Operators allocate their temporaries with malloc and
 * free them before they end. The teardown after the last step (step
 * steps+1 for msmemscope) frees the weights and the arena.
 *
 * Bug 1, a leak: attention allocates one kv_cache block of exactly 4096
 * bytes per step (owner "model@kv_cache") and links it into a list that is
 * never freed. With the default 5 steps, 5 blocks and 20480 bytes are live
 * at exit, all allocated in operator "attention", one in each of steps 1-5;
 * they are the only heap blocks live at exit (stdout uses a static buffer).
 * By msMemScope's per-step rule (a block allocated in step N >= 2 and still
 * live at the end of step N+1), checked at each msmemscope_step() call, the
 * blocks of steps 2, 3 and 4 are step leaks: 3 blocks, 12288 bytes. The
 * step-1 block is warm-up; the step-5 block becomes one only if the end of
 * the run also ends step 6 (then 4 blocks, 16384 bytes).
 *
 * Bug 2, an out-of-bounds write: in step 3 only, softmax writes 8 bytes (two
 * int32 values) past the end of `probs`, into the first 8 bytes of `gamma`.
 * Both lie inside the same malloc'd arena, so the program does not crash and
 * neither valgrind nor AddressSanitizer reports it. The program watches
 * `gamma` (msmemscope_watch(..., "ln_gamma")): nothing but softmax in step 3
 * ever changes it after set-up, so a watch report must name softmax, step 3.
 *
 * Heap figures with the default 5 steps (the malloc family only): 27
 * allocations (2 at set-up, 5 per step: 4 temporaries and the kv_cache
 * block), 22 frees, 25 operator launches, pool "workspace": 2 blocks
 * (probs 256 + gamma 64 bytes), both released at teardown.
 *
 * Output: one deterministic line per step on stdout (integer arithmetic
 * only), then a last line with the kv_cache total. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msmemscope.h"

#define SEQ 16        /* tokens per step */
#define DIM 32        /* hidden size */
#define VOCAB 64      /* softmax width: probs is VOCAB int32 = 256 bytes */
#define GAMMA 16      /* layernorm scale: 16 int32 = 64 bytes */
#define KV_BLOCK 4096 /* bytes leaked per step */
#define STOMP_STEP 3  /* the step whose softmax overruns probs */
#define STOMP_EXTRA 2 /* int32 values written past probs: 8 bytes */

struct kv_block {
	struct kv_block *next;
	int32_t data[(KV_BLOCK - sizeof(struct kv_block *)) / sizeof(int32_t)];
};

struct model {
	int32_t *weights;     /* DIM x VOCAB */
	unsigned char *arena; /* probs then gamma, back to back */
	int32_t *probs;       /* VOCAB */
	int32_t *gamma;       /* GAMMA */
	struct kv_block *kv;  /* the leak: never freed */
	unsigned kv_blocks;
};

_Static_assert(sizeof(struct kv_block) == KV_BLOCK, "kv_cache blocks are exactly KV_BLOCK bytes");

static void *xmalloc(size_t n)
{
	void *p = malloc(n);

	if (!p) {
		fprintf(stderr, "infer: out of memory (%zu bytes)\n", n);
		exit(1);
	}
	return p;
}

/* A fixed pseudo-random sequence, so every run computes the same. */
static uint32_t next_rand(uint32_t *state)
{
	*state = *state * 1664525u + 1013904223u;
	return *state >> 8;
}

static void model_load(struct model *m)
{
	uint32_t seed = 42;
	const size_t probs_size = VOCAB * sizeof(int32_t);
	const size_t gamma_size = GAMMA * sizeof(int32_t);

	msmemscope_owner_push("weights");
	m->weights = xmalloc(DIM * VOCAB * sizeof(int32_t));
	msmemscope_owner_pop();
	for (size_t i = 0; i < DIM * VOCAB; i++)
		m->weights[i] = (int32_t)(next_rand(&seed) % 17) - 8;

	/* One arena, two buffers carved from it back to back, reported as the
	 * blocks of a custom pool the way a framework's caching allocator
	 * does. */
	msmemscope_owner_push("workspace");
	m->arena = xmalloc(probs_size + gamma_size);
	msmemscope_owner_pop();
	m->probs = (int32_t *)m->arena;
	m->gamma = (int32_t *)(m->arena + probs_size);
	msmemscope_pool_alloc("workspace", m->probs, probs_size, probs_size + gamma_size, probs_size);
	msmemscope_pool_alloc("workspace", m->gamma, gamma_size, probs_size + gamma_size, probs_size + gamma_size);
	for (int i = 0; i < GAMMA; i++)
		m->gamma[i] = 256 + i;
	msmemscope_watch(m->gamma, gamma_size, "ln_gamma");

	m->kv = NULL;
	m->kv_blocks = 0;
}

static void model_unload(struct model *m)
{
	const size_t probs_size = VOCAB * sizeof(int32_t);
	const size_t gamma_size = GAMMA * sizeof(int32_t);

	msmemscope_pool_free("workspace", m->gamma, gamma_size, probs_size + gamma_size, probs_size);
	msmemscope_pool_free("workspace", m->probs, probs_size, probs_size + gamma_size, 0);
	free(m->arena);
	free(m->weights);
	/* m->kv is not freed: bug 1. */
}

/* embed: token ids -> hidden states (SEQ x DIM), returned to the caller in
 * `hidden`; its temporary is the token table. */
static void op_embed(int step, int32_t *hidden)
{
	int32_t *table;

	msmemscope_op_begin("embed");
	table = xmalloc(SEQ * sizeof(int32_t));
	for (int t = 0; t < SEQ; t++)
		table[t] = (step * 7 + t * 3) % VOCAB;
	for (int t = 0; t < SEQ; t++)
		for (int d = 0; d < DIM; d++)
			hidden[t * DIM + d] = (table[t] * 31 + d * 5) % 97 - 48;
	free(table);
	msmemscope_op_end();
}

/* attention: mixes each token with the previous ones and appends one block
 * to the kv cache, which is never given back (bug 1). */
static void op_attention(struct model *m, int32_t *hidden)
{
	int32_t *scores;
	struct kv_block *kv;

	msmemscope_op_begin("attention");
	scores = xmalloc(SEQ * SEQ * sizeof(int32_t));
	for (int i = 0; i < SEQ; i++)
		for (int j = 0; j < SEQ; j++)
			scores[i * SEQ + j] = j <= i ? hidden[i * DIM + j % DIM] - hidden[j * DIM] : 0;
	for (int i = 0; i < SEQ; i++)
		for (int d = 0; d < DIM; d++)
			hidden[i * DIM + d] += scores[i * SEQ + (d % SEQ)] / 4;
	free(scores);

	msmemscope_owner_push("kv_cache");
	kv = xmalloc(sizeof(*kv));
	msmemscope_owner_pop();
	for (size_t i = 0; i < sizeof(kv->data) / sizeof(kv->data[0]); i++)
		kv->data[i] = hidden[i % (SEQ * DIM)];
	kv->next = m->kv;
	m->kv = kv;
	m->kv_blocks++;
	msmemscope_op_end();
}

/* matmul: the last token's hidden state times the weights -> logits. */
static void op_matmul(const struct model *m, const int32_t *hidden, int32_t *logits)
{
	int32_t *acc;

	msmemscope_op_begin("matmul");
	acc = xmalloc(VOCAB * sizeof(int32_t));
	for (int v = 0; v < VOCAB; v++) {
		int64_t s = 0;
		for (int d = 0; d < DIM; d++)
			s += (int64_t)hidden[(SEQ - 1) * DIM + d] * m->weights[d * VOCAB + v];
		acc[v] = (int32_t)(s / 8);
	}
	memcpy(logits, acc, VOCAB * sizeof(int32_t));
	free(acc);
	msmemscope_op_end();
}

/* softmax, in fixed point: probs[v] ~ 65536 * exp2((logits[v] - max) / 16)
 * normalised. In step STOMP_STEP its loop bound is off by STOMP_EXTRA and
 * it writes past probs into gamma (bug 2). */
static void op_softmax(struct model *m, int step, const int32_t *logits)
{
	int32_t max = logits[0];
	int64_t sum = 0;
	int n = VOCAB + (step == STOMP_STEP ? STOMP_EXTRA : 0);

	msmemscope_op_begin("softmax");
	for (int v = 1; v < VOCAB; v++)
		if (logits[v] > max)
			max = logits[v];
	for (int v = 0; v < VOCAB; v++) {
		int shift = (max - logits[v]) / 16;
		m->probs[v] = shift >= 16 ? 1 : 65536 >> shift;
		sum += m->probs[v];
	}
	for (int v = 0; v < n; v++)
		m->probs[v] = (int32_t)((int64_t)m->probs[v % VOCAB] * 65536 / sum);
	msmemscope_op_end();
}

/* layernorm: scales the probabilities by gamma; returns the argmax token. */
static int op_layernorm(const struct model *m, uint32_t *checksum)
{
	int32_t *out;
	int best = 0;

	msmemscope_op_begin("layernorm");
	out = xmalloc(VOCAB * sizeof(int32_t));
	for (int v = 0; v < VOCAB; v++)
		out[v] = m->probs[v] * m->gamma[v % GAMMA] / 256;
	for (int v = 0; v < VOCAB; v++) {
		*checksum = *checksum * 31u + (uint32_t)out[v];
		if (out[v] > out[best])
			best = v;
	}
	free(out);
	msmemscope_op_end();
	return best;
}

int main(int argc, char **argv)
{
	/* A static stdout buffer, so that stdio leaves no heap block of its own
	 * live at exit and the leak report holds exactly the kv_cache blocks. */
	static char outbuf[4096];
	static int32_t hidden[SEQ * DIM], logits[VOCAB];
	struct model m;
	long steps = 5;
	char *end = NULL;

	if (argc == 2)
		steps = strtol(argv[1], &end, 10);
	if (argc > 2 || (end && (*end || end == argv[1])) || steps < 1 || steps > 1000) {
		fprintf(stderr, "usage: infer [steps]   (steps: 1 to 1000, default 5)\n");
		return 2;
	}
	setvbuf(stdout, outbuf, _IOLBF, sizeof(outbuf));

	msmemscope_owner_push("model");
	model_load(&m);
	for (int step = 1; step <= steps; step++) {
		uint32_t checksum = 0;
		int token;

		op_embed(step, hidden);
		op_attention(&m, hidden);
		op_matmul(&m, hidden, logits);
		op_softmax(&m, step, logits);
		token = op_layernorm(&m, &checksum);
		printf("step %d: token %d, checksum %08x, kv_cache %u blocks\n", step, token, checksum, m.kv_blocks);
		msmemscope_step();
	}
	printf("done: %ld steps, kv_cache holds %u bytes that are never freed\n", steps,
	       m.kv_blocks * (unsigned)KV_BLOCK);
	model_unload(&m);
	msmemscope_owner_pop();
	return 0;
}
