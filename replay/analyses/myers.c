/* SPDX-License-Identifier: MIT */
/* myers.c: Myers' O((N+M)D) difference algorithm in its linear-space form
 * (middle snake and recursion), which aligns two sequences of ids on a
 * longest common subsequence; compare.c aligns operator launches with it. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "myers-int.h"

struct myers {
	const uint32_t *a, *b;
	size_t *match;    /* a index -> b index, SIZE_MAX when unmatched */
	ptrdiff_t *vf, *vb; /* furthest x per diagonal, forward and backward */
	ptrdiff_t off;    /* diagonal k is at index k + off */
	ptrdiff_t max_cost; /* edits one middle-snake search may explore */
};

/* A snake: the diagonal run from (x, y) to (u, v) on an optimal path
 * through the box, splitting it into the box before and the box after. */
struct snake {
	ptrdiff_t x, y, u, v;
};

/* Finds the middle snake of the box a[0..n) x b[0..m) (offsets given by
 * a, b), as in Myers' paper, section 4b. When the search passes max_cost
 * edits, it gives up optimality and splits at the forward point furthest
 * along, as GNU diff's and git's heuristics do, so that the cost of one
 * search stays bounded. */
static void middle_snake(struct myers *md, const uint32_t *a, ptrdiff_t n, const uint32_t *b, ptrdiff_t m,
			 struct snake *s)
{
	ptrdiff_t *vf = md->vf + md->off, *vb = md->vb + md->off;
	ptrdiff_t delta = n - m, dmax = (n + m + 1) / 2, d, k, x, y, xs, c;
	int odd = (int)(delta & 1);

	vf[1] = 0;
	vb[1] = 0;
	for (d = 0; d <= dmax; d++) {
		/* Forward paths of d edits. */
		for (k = -d; k <= d; k += 2) {
			if (k == -d || (k != d && vf[k - 1] < vf[k + 1]))
				x = vf[k + 1];
			else
				x = vf[k - 1] + 1;
			y = x - k;
			xs = x;
			while (x < n && y < m && a[x] == b[y]) {
				x++;
				y++;
			}
			vf[k] = x;
			c = delta - k;
			if (odd && c >= -(d - 1) && c <= d - 1 && x <= n && y <= m && vf[k] + vb[c] >= n) {
				s->x = xs;
				s->y = xs - k;
				s->u = x;
				s->v = y;
				return;
			}
		}
		/* Backward paths of d edits, x counted from the end. */
		for (c = -d; c <= d; c += 2) {
			if (c == -d || (c != d && vb[c - 1] < vb[c + 1]))
				x = vb[c + 1];
			else
				x = vb[c - 1] + 1;
			y = x - c;
			xs = x;
			while (x < n && y < m && a[n - 1 - x] == b[m - 1 - y]) {
				x++;
				y++;
			}
			vb[c] = x;
			k = delta - c;
			if (!odd && k >= -d && k <= d && x <= n && y <= m && vf[k] + vb[c] >= n) {
				s->x = n - x;
				s->y = m - y;
				s->u = n - xs;
				s->v = m - (xs - c);
				return;
			}
		}
		if (d >= md->max_cost) {
			/* Too costly: split at the forward point with the
			 * most progress (x + y) that is not a corner. */
			ptrdiff_t best = -1, bx = 0;

			for (k = -d; k <= d; k += 2) {
				x = vf[k];
				if (x > n)
					x = n;
				y = x - k;
				if (y < 0 || y > m || (x == n && y == m) || 2 * x - k <= best)
					continue;
				best = 2 * x - k;
				bx = x;
				s->x = s->u = bx;
				s->y = s->v = bx - k;
			}
			if (best > 0)
				return;
			/* No usable point: one edit from the corner. */
			s->x = s->u = n ? 1 : 0;
			s->y = s->v = n ? 0 : 1;
			return;
		}
	}
	/* Not reached: a path of at most n + m edits always exists. */
	s->x = s->u = n;
	s->y = s->v = m;
}

static void align(struct myers *md, size_t alo, size_t ahi, size_t blo, size_t bhi)
{
	struct snake s;
	ptrdiff_t i;

	for (;;) {
		/* Common prefix and suffix are matched outright. */
		while (alo < ahi && blo < bhi && md->a[alo] == md->b[blo])
			md->match[alo++] = blo++;
		while (alo < ahi && blo < bhi && md->a[ahi - 1] == md->b[bhi - 1])
			md->match[--ahi] = --bhi;
		if (alo == ahi || blo == bhi)
			return;
		middle_snake(md, md->a + alo, (ptrdiff_t)(ahi - alo), md->b + blo, (ptrdiff_t)(bhi - blo), &s);
		for (i = s.x; i < s.u; i++)
			md->match[alo + (size_t)i] = blo + (size_t)(s.y + (i - s.x));
		/* Recurse into the smaller box, loop on the other, so the
		 * stack stays logarithmic. */
		if ((size_t)s.x + (size_t)s.y < (ahi - alo - (size_t)s.u) + (bhi - blo - (size_t)s.v)) {
			align(md, alo, alo + (size_t)s.x, blo, blo + (size_t)s.y);
			alo += (size_t)s.u;
			blo += (size_t)s.v;
		} else {
			align(md, alo + (size_t)s.u, ahi, blo + (size_t)s.v, bhi);
			ahi = alo + (size_t)s.x;
			bhi = blo + (size_t)s.y;
		}
	}
}

int mms__myers(const uint32_t *a, size_t n, const uint32_t *b, size_t m, size_t *match, size_t max_cost)
{
	struct myers md;
	size_t i, dmax, len;

	for (i = 0; i < n; i++)
		match[i] = SIZE_MAX;
	if (n > PTRDIFF_MAX / 4 || m > PTRDIFF_MAX / 4)
		return -ENOMEM;
	dmax = (n + m + 1) / 2;
	len = 2 * dmax + 4;
	md.a = a;
	md.b = b;
	md.match = match;
	md.off = (ptrdiff_t)dmax + 2;
	md.max_cost = max_cost && max_cost < dmax ? (ptrdiff_t)max_cost : (ptrdiff_t)dmax + 1;
	md.vf = malloc(2 * len * sizeof(*md.vf));
	if (!md.vf)
		return -ENOMEM;
	md.vb = md.vf + len;
	align(&md, 0, n, 0, m);
	free(md.vf);
	return 0;
}
