// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sluice's XDP program with a parser that walks only 4 IPv6 extension
 * headers instead of SLUICE_MAX_IPV6_EXT_HDRS (8): chains of 5 to 8 headers
 * come out malformed. Only the packet fuzzer loads it (--variant
 * short-ext), to show that it tells the two apart. */
#include "sluice/sluice.h"
#undef SLUICE_MAX_IPV6_EXT_HDRS
#define SLUICE_MAX_IPV6_EXT_HDRS 4
#include "../../bpf/sluice.bpf.c"
