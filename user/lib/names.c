// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The names userspace prints for the datapath's values. */
#include <xdp/libxdp.h>
#include "sluice/reasons.h"
#include "names.h"

const char *reason_name(__u32 reason)
{
	static const char *const names[SLUICE_R_MAX] = {
#define REASON_NAME(id, name, drop, help) [SLUICE_R_##id] = name,
		SLUICE_REASONS(REASON_NAME)
#undef REASON_NAME
	};

	return reason < SLUICE_R_MAX ? names[reason] : "unknown";
}

const char *reason_help(__u32 reason)
{
	static const char *const help[SLUICE_R_MAX] = {
#define REASON_HELP(id, name, drop, text) [SLUICE_R_##id] = text,
		SLUICE_REASONS(REASON_HELP)
#undef REASON_HELP
	};

	return reason < SLUICE_R_MAX ? help[reason] : "";
}

const char *mode_name(__u32 xdp_mode)
{
	switch (xdp_mode) {
	case XDP_MODE_NATIVE: return "native";
	case XDP_MODE_SKB: return "skb";
	case XDP_MODE_HW: return "hw";
	default: return "unknown";
	}
}
