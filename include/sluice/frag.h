/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The fragment table's key and value. */
#ifndef SLUICE_ABI_FRAG_H
#define SLUICE_ABI_FRAG_H

#include <linux/types.h>
#include "sluice/addr.h"

/*
 * The fragment table: what the first fragment of a fragmented datagram
 * said of its L4 (protocol, destination port, TCP flags), so that its later
 * fragments, which carry no L4 header, are judged by the rule the first was
 * (doc/rules.rst, "Fragments"). Keyed as the stack reassembles: IPv4 by
 * (source, destination, identification, protocol), IPv6 by (source,
 * destination, the fragment header's identification); an IPv6 later
 * fragment's next header is not the datagram's, so proto is 0 there.
 * Addresses in the 128-bit form (IPv4 as ::ffff:a.b.c.d). An LRU hash of
 * SLUICE_FRAG_ENTRIES datagrams in flight; written and read by the program
 * only.
 */
struct sluice_frag_key {
	__u8 src[SLUICE_ADDR_LEN];
	__u8 dst[SLUICE_ADDR_LEN];
	__u32 id;		/* IPv4: 16 bits, IPv6: 32; as on the wire */
	__u8 family;		/* SLUICE_FAMILY_V4 or SLUICE_FAMILY_V6 */
	__u8 proto;		/* IPv4's protocol; 0 for IPv6 */
	__u16 pad;		/* zero */
};
struct sluice_frag_l4 {
	__u8 proto;		/* the datagram's L4 protocol */
	__u8 flags;		/* bpf/parse.h's L4_PORTS and L4_SYN */
	__u16 dport;		/* host byte order, with L4_PORTS */
};

#endif /* SLUICE_ABI_FRAG_H */
