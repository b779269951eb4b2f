/* SPDX-License-Identifier: MIT */
/* tlsplug.c: a library with thread-local storage, loaded with dlopen by
 * heapaddr's "threads" mode (as many copies as it is given): a thread
 * that reaches its variable makes glibc grow the thread's vector of
 * thread-local storage once enough such libraries are loaded. reach's
 * "dyntls" keeps a block only in its thread-local pointer (tlsplug_keep),
 * which the thread's vector reaches. */
static __thread long tlsplug_value[4];
/* Larger than the room glibc keeps in each thread for the static TLS of
 * libraries loaded later: the library's TLS is allocated per thread from
 * the heap when the thread first reaches it (dynamic TLS), and only the
 * thread's vector points to it. */
struct tlsplug_big {
	char room[1 << 16];
	void *kept;
};
extern __thread struct tlsplug_big tlsplug_big; /* not static: kept though only written */
__thread struct tlsplug_big tlsplug_big;

long *tlsplug_var(void);
void tlsplug_keep(void *p);

void tlsplug_keep(void *p)
{
	tlsplug_big.kept = p;
}

long *tlsplug_var(void)
{
	tlsplug_value[0]++;
	return tlsplug_value;
}
