/* SPDX-License-Identifier: MIT */
/* msmemscope-config.h: the old name of msmemscope/config.h, kept for programs that include it. */
#include "msmemscope/config.h"
