/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Addresses as every map keeps them: 128 bits, IPv4 mapped into IPv6
 * (::ffff:a.b.c.d), with the family beside them. */
#ifndef SLUICE_ABI_ADDR_H
#define SLUICE_ABI_ADDR_H

#include <linux/types.h>

/* Address family of a source key, IPv4 is stored IPv4-mapped (::ffff:a.b.c.d). */
#define SLUICE_ADDR_LEN			16
#define SLUICE_V4_MAPPED_PREFIX		96
#define SLUICE_FAMILY_V4		4
#define SLUICE_FAMILY_V6		6

/* An address: IPv4 stored IPv4-mapped (::ffff:a.b.c.d). */
struct sluice_addr {
	__u8 a[SLUICE_ADDR_LEN];
};

#endif /* SLUICE_ABI_ADDR_H */
