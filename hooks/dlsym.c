/* SPDX-License-Identifier: MIT */
/* dlsym.c: interposes dlsym() so that the CUDA driver's entry points the
 * program looks up by name reach cuda.c, and every other lookup reaches
 * the real dlsym() exactly as if the recorder were not there.
 *
 * dlsym() depends on its caller: dlsym(RTLD_NEXT, name) searches the
 * objects loaded after the one that called it, which glibc finds from the
 * return address. A C wrapper would make the recorder the caller, so the
 * entry point is a few instructions of assembly that test the handle and
 * the name's first two bytes and jump to the real dlsym() with the
 * caller's return address still in place. Only a lookup in a real handle
 * of one of the driver's entry points cuda.c wraps (a name beginning with
 * "cu", then mms__cuda_wants(), which changes nothing) goes to
 * mms__cuda_dlsym(), where the caller matters less: a real handle is
 * searched in its own scope, whoever asks. What does change there is who
 * glibc records as the user of the object that defines the name (the
 * recorder instead of the caller), so that object (libcuda) is not
 * unloaded when the caller closes its handle; and an audit module's
 * la_symbind would see the recorder as the caller. Every other name, a
 * "curl_..." one included, keeps all of dlsym()'s behaviour.
 *
 * The real dlsym() is found with dlvsym(), never with dlsym(), at the
 * first call (the recorder's own start-up makes it). dlvsym() is not
 * interposed.
 *
 * On x86-64 and aarch64 only. Elsewhere dlsym() is not interposed, and
 * capturing CUDA memory there needs another way in (a preloaded libcuda
 * shim, or CUPTI's callbacks). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <stdlib.h>

#include "hooks-int.h"
#include "objects.h"

#if defined(__x86_64__) || defined(__aarch64__)

void *(*mms__real_dlsym)(void *, const char *);
/* Set where an allocator's own functions are redirected (redirect.c),
 * and once the log is open (modules.c): every dlsym() then goes through
 * mms__dlsym_slow(), which redirects the objects loaded since the last
 * look first, and records the modules loaded since. Bits
 * MMS_DLSYM_WATCH_*. */
int mms__dlsym_watch;

void mms__dlsym_watch_set(int bits)
{
	__atomic_fetch_or(&mms__dlsym_watch, bits, __ATOMIC_RELEASE);
}

#if defined(__x86_64__)
#define DLSYM_OLD_VERSION "GLIBC_2.2.5"
#else
#define DLSYM_OLD_VERSION "GLIBC_2.17"
#endif

/* glibc 2.34 moved dlsym() from libdl into libc under a new version. A
 * lookup of a version that is not there would leave an error for the
 * program's next dlerror() (and allocate it), so the version is chosen
 * from the running glibc's. */
static const char *dlsym_version(void)
{
	const char *v = gnu_get_libc_version();
	char *end;
	long major = strtol(v, &end, 10), minor = *end == '.' ? strtol(end + 1, NULL, 10) : 0;

	return major > 2 || (major == 2 && minor >= 34) ? "GLIBC_2.34" : DLSYM_OLD_VERSION;
}

/* Called by the entry point while the real dlsym() is not known yet.
 * Returns it, or NULL when it cannot be found (or this thread is finding
 * it already): the entry point then returns NULL. */
void *mms__dlsym_resolve(void)
{
	static __thread int resolving;
	void *p = __atomic_load_n(&mms__real_dlsym, __ATOMIC_ACQUIRE);

	if (p || resolving)
		return p;
	resolving = 1;
	p = dlvsym(RTLD_NEXT, "dlsym", dlsym_version());
	resolving = 0;
	__atomic_store_n((void **)&mms__real_dlsym, p, __ATOMIC_RELEASE);
	return p;
}

/* The entry point's slow path, with dlsym()'s arguments and its caller's
 * return address: the real dlsym() found when not known yet, and, while
 * mms__dlsym_watch is set, the objects loaded since the last look
 * redirected (a program's plugin is reached through dlsym(), so its calls
 * of an allocator's own functions are redirected before its code runs,
 * redirect.c) and a lookup of one of those functions answered there: 2,
 * the answer in *result (the entry point returns it). Then 1 when the
 * lookup is one of the driver's entry points cuda.c wraps, in a real
 * handle (the entry point goes on to mms__cuda_dlsym()), else 0 (it jumps
 * to the real dlsym(), or returns NULL when there is none). */
int mms__dlsym_slow(void *handle, const char *name, const void *caller, void **result)
{
	int watch;

	if (!mms__dlsym_resolve())
		return 0;
	watch = __atomic_load_n(&mms__dlsym_watch, __ATOMIC_RELAXED);
	if (watch & MMS_DLSYM_WATCH_MODULES)
		mms__modules_check();
	if (watch & MMS_DLSYM_WATCH_REDIRECT) {
		mms__redirect_rescan();
		if (handle != RTLD_NEXT && name && mms__redirect_dlsym(handle, name, caller, result))
			return 2;
	}
	return handle && handle != RTLD_NEXT && name && name[0] == 'c' && name[1] == 'u' && mms__cuda_wants(name);
}

/* The entry point. RTLD_NEXT is (void *)-1 and RTLD_DEFAULT NULL; a NULL
 * name is the real dlsym()'s to report. Every lookup but one of a "cu"
 * name in a real handle jumps to the real dlsym() at once; those, any
 * before the real dlsym() is known, and every one while mms__dlsym_watch
 * is set, ask mms__dlsym_slow(). */
#if defined(__x86_64__)
#ifdef __CET__
#define DLSYM_LANDING "endbr64\n\t"
#else
#define DLSYM_LANDING ""
#endif
__asm__(".text\n\t"
	".globl dlsym\n\t"
	".type dlsym, @function\n\t"
	".p2align 4\n"
	"dlsym:\n\t"
	".cfi_startproc\n\t" DLSYM_LANDING "movq mms__real_dlsym(%rip), %rax\n\t"
	"testq %rax, %rax\n\t"
	"jz 3f\n\t"
	"cmpl $0, mms__dlsym_watch(%rip)\n\t"
	"jne 3f\n\t"
	"cmpq $-1, %rdi\n\t"
	"je 2f\n\t"
	"testq %rdi, %rdi\n\t"
	"jz 2f\n\t"
	"testq %rsi, %rsi\n\t"
	"jz 2f\n\t"
	"cmpb $0x63, (%rsi)\n\t" /* 'c' */
	"jne 2f\n\t"
	"cmpb $0x75, 1(%rsi)\n\t" /* 'u' */
	"jne 2f\n"
	"3:\n\t"
	"movq (%rsp), %rdx\n\t" /* the caller */
	/* Two pushes and 8 bytes more (the answer's place) keep the call
	 * 16-byte aligned. */
	"pushq %rdi\n\t"
	".cfi_adjust_cfa_offset 8\n\t"
	"pushq %rsi\n\t"
	".cfi_adjust_cfa_offset 8\n\t"
	"subq $8, %rsp\n\t"
	".cfi_adjust_cfa_offset 8\n\t"
	"movq %rsp, %rcx\n\t"
	"call mms__dlsym_slow\n\t"
	"cmpl $2, %eax\n\t"
	"je 6f\n\t"
	"addq $8, %rsp\n\t"
	".cfi_adjust_cfa_offset -8\n\t"
	"popq %rsi\n\t"
	".cfi_adjust_cfa_offset -8\n\t"
	"popq %rdi\n\t"
	".cfi_adjust_cfa_offset -8\n\t"
	"testl %eax, %eax\n\t"
	"jnz 4f\n\t"
	"movq mms__real_dlsym(%rip), %rax\n\t"
	"testq %rax, %rax\n\t"
	"jz 5f\n"
	"2:\n\t"
	"jmp *%rax\n"
	"4:\n\t"
	"jmp mms__cuda_dlsym\n"
	"5:\n\t"
	"ret\n" /* %rax is NULL */
	"6:\n\t"
	".cfi_adjust_cfa_offset 24\n\t"
	"movq (%rsp), %rax\n\t"
	"addq $24, %rsp\n\t"
	".cfi_adjust_cfa_offset -24\n\t"
	"ret\n\t"
	".cfi_endproc\n\t"
	".size dlsym, .-dlsym\n\t"
	".previous");
#else /* __aarch64__ */
#ifdef __ARM_FEATURE_BTI_DEFAULT
#define DLSYM_LANDING "hint 34\n\t" /* bti c */
#else
#define DLSYM_LANDING ""
#endif
__asm__(".text\n\t"
	".globl dlsym\n\t"
	".type dlsym, %function\n\t"
	".p2align 2\n"
	"dlsym:\n\t"
	".cfi_startproc\n\t" DLSYM_LANDING "adrp x16, mms__real_dlsym\n\t"
	"ldr x16, [x16, :lo12:mms__real_dlsym]\n\t"
	"cbz x16, 3f\n\t"
	"adrp x17, mms__dlsym_watch\n\t"
	"ldr w17, [x17, :lo12:mms__dlsym_watch]\n\t"
	"cbnz w17, 3f\n\t"
	"cmn x0, #1\n\t"
	"b.eq 2f\n\t"
	"cbz x0, 2f\n\t"
	"cbz x1, 2f\n\t"
	"ldrb w17, [x1]\n\t"
	"cmp w17, #0x63\n\t" /* 'c' */
	"b.ne 2f\n\t"
	"ldrb w17, [x1, #1]\n\t"
	"cmp w17, #0x75\n\t" /* 'u' */
	"b.ne 2f\n"
	"3:\n\t"
	"mov x2, x30\n\t" /* the caller */
	"stp x29, x30, [sp, #-48]!\n\t"
	".cfi_def_cfa_offset 48\n\t"
	".cfi_offset 29, -48\n\t"
	".cfi_offset 30, -40\n\t"
	"mov x29, sp\n\t"
	"stp x0, x1, [sp, #16]\n\t"
	"add x3, sp, #32\n\t" /* the answer's place */
	"bl mms__dlsym_slow\n\t"
	"mov w17, w0\n\t"
	"ldp x0, x1, [sp, #16]\n\t"
	"cmp w17, #2\n\t"
	"b.ne 7f\n\t"
	"ldr x0, [sp, #32]\n"
	"7:\n\t"
	"ldp x29, x30, [sp], #48\n\t"
	".cfi_def_cfa_offset 0\n\t"
	".cfi_restore 29\n\t"
	".cfi_restore 30\n\t"
	"cmp w17, #2\n\t"
	"b.eq 6f\n\t"
	"cbnz w17, 4f\n\t"
	"adrp x16, mms__real_dlsym\n\t"
	"ldr x16, [x16, :lo12:mms__real_dlsym]\n\t"
	"cbz x16, 5f\n"
	"2:\n\t"
	"br x16\n"
	"4:\n\t"
	"b mms__cuda_dlsym\n"
	"5:\n\t"
	"mov x0, #0\n"
	"6:\n\t"
	"ret\n\t"
	".cfi_endproc\n\t"
	".size dlsym, .-dlsym\n\t"
	".previous");
#endif

#else

void mms__dlsym_watch_set(int bits)
{
	(void)bits;
}

#endif /* x86-64 or aarch64 */
