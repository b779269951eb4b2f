/* SPDX-License-Identifier: MIT */
/* cxxops.h: the C++ runtime's replaceable allocation operators (the
 * Itanium C++ ABI's symbols on LP64 targets) with their names in C++: the
 * ones the recorder defines (hooks/newdelete.c), and those whose own copy
 * in a program or library the reader looks for (replay/core/ownops.c).
 * The first eight allocate, the other twelve release. */
#ifndef MMS_CXXOPS_H
#define MMS_CXXOPS_H

static const char *const mms_cxx_op_symbols[] = {
	"_Znwm",
	"_Znam",
	"_ZnwmSt11align_val_t",
	"_ZnamSt11align_val_t",
	"_ZnwmRKSt9nothrow_t",
	"_ZnamRKSt9nothrow_t",
	"_ZnwmSt11align_val_tRKSt9nothrow_t",
	"_ZnamSt11align_val_tRKSt9nothrow_t",
	"_ZdlPv",
	"_ZdaPv",
	"_ZdlPvm",
	"_ZdaPvm",
	"_ZdlPvSt11align_val_t",
	"_ZdaPvSt11align_val_t",
	"_ZdlPvmSt11align_val_t",
	"_ZdaPvmSt11align_val_t",
	"_ZdlPvRKSt9nothrow_t",
	"_ZdaPvRKSt9nothrow_t",
	"_ZdlPvSt11align_val_tRKSt9nothrow_t",
	"_ZdaPvSt11align_val_tRKSt9nothrow_t",
};
static const char *const mms_cxx_op_names[] = {
	"operator new(std::size_t)",
	"operator new[](std::size_t)",
	"operator new(std::size_t, std::align_val_t)",
	"operator new[](std::size_t, std::align_val_t)",
	"operator new(std::size_t, const std::nothrow_t&)",
	"operator new[](std::size_t, const std::nothrow_t&)",
	"operator new(std::size_t, std::align_val_t, const std::nothrow_t&)",
	"operator new[](std::size_t, std::align_val_t, const std::nothrow_t&)",
	"operator delete(void*)",
	"operator delete[](void*)",
	"operator delete(void*, std::size_t)",
	"operator delete[](void*, std::size_t)",
	"operator delete(void*, std::align_val_t)",
	"operator delete[](void*, std::align_val_t)",
	"operator delete(void*, std::size_t, std::align_val_t)",
	"operator delete[](void*, std::size_t, std::align_val_t)",
	"operator delete(void*, const std::nothrow_t&)",
	"operator delete[](void*, const std::nothrow_t&)",
	"operator delete(void*, std::align_val_t, const std::nothrow_t&)",
	"operator delete[](void*, std::align_val_t, const std::nothrow_t&)",
};
#define MMS_CXX_OPS (sizeof mms_cxx_op_symbols / sizeof mms_cxx_op_symbols[0])
_Static_assert(sizeof mms_cxx_op_names / sizeof mms_cxx_op_names[0] == MMS_CXX_OPS, "one name per operator");

#endif /* MMS_CXXOPS_H */
