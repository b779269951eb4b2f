/* SPDX-License-Identifier: MIT */
/* fill-ptx.h: the kernel of the CUDA examples (cudamem.c, cudadrv.c) as
 * PTX text, which the driver compiles for the device at hand when it is
 * loaded: fill(p, v, n) stores v into the n floats at p. No nvcc is needed
 * to build the examples. */
#ifndef MMS_FILL_PTX_H
#define MMS_FILL_PTX_H

static const char fill_ptx[] = ".version 7.0\n"
			       ".target sm_50\n"
			       ".address_size 64\n"
			       ".visible .entry fill(.param .u64 fill_p, .param .f32 fill_v, .param .u32 fill_n)\n"
			       "{\n"
			       "	.reg .pred %p<2>;\n"
			       "	.reg .b32 %r<6>;\n"
			       "	.reg .f32 %f<2>;\n"
			       "	.reg .b64 %rd<5>;\n"
			       "	ld.param.u64 %rd1, [fill_p];\n"
			       "	ld.param.f32 %f1, [fill_v];\n"
			       "	ld.param.u32 %r1, [fill_n];\n"
			       "	mov.u32 %r2, %ctaid.x;\n"
			       "	mov.u32 %r3, %ntid.x;\n"
			       "	mov.u32 %r4, %tid.x;\n"
			       "	mad.lo.s32 %r5, %r2, %r3, %r4;\n"
			       "	setp.ge.u32 %p1, %r5, %r1;\n"
			       "	@%p1 bra DONE;\n"
			       "	cvta.to.global.u64 %rd2, %rd1;\n"
			       "	mul.wide.u32 %rd3, %r5, 4;\n"
			       "	add.s64 %rd4, %rd2, %rd3;\n"
			       "	st.global.f32 [%rd4], %f1;\n"
			       "DONE:\n"
			       "	ret;\n"
			       "}\n";

#endif /* MMS_FILL_PTX_H */
