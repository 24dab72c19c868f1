/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The Redis Cluster slot of a key, as Redis computes it (its crc16.c and
 * keyHashSlot() in cluster.c): CRC16-CCITT (XMODEM: polynomial 0x1021,
 * initial value 0, no reflection) of the key's hash tag, modulo 16384.
 * Header-only, so that the unit test takes it as the agent does. */
#ifndef SLUICE_CLUSTER_KEYSLOT_H
#define SLUICE_CLUSTER_KEYSLOT_H

#include <stddef.h>
#include <stdint.h>

#define REDIS_CLUSTER_SLOTS	16384U
#define CRC16_POLY		0x1021U
#define CRC16_TOP_BIT		0x8000U
#define BITS_PER_BYTE		8

/* CRC16-CCITT (XMODEM) of len bytes at p; "123456789" gives 0x31c3. */
static inline uint16_t redis_crc16(const char *p, size_t len)
{
	uint16_t crc = 0;

	for (size_t i = 0; i < len; i++) {
		crc ^= (uint16_t)((uint8_t)p[i] << BITS_PER_BYTE);
		for (int b = 0; b < BITS_PER_BYTE; b++)
			crc = (uint16_t)(crc & CRC16_TOP_BIT ? ((unsigned int)crc << 1) ^ CRC16_POLY :
							       (unsigned int)crc << 1);
	}
	return crc;
}

/* The slot of key (len bytes): of what lies between its first '{' and
 * the first '}' after it when that is not empty, else of the whole key. */
static inline unsigned int redis_keyslot(const char *key, size_t len)
{
	size_t open, close;

	for (open = 0; open < len && key[open] != '{'; open++)
		;
	for (close = open + 1; close < len && key[close] != '}'; close++)
		;
	if (open < len && close < len && close > open + 1)
		return redis_crc16(key + open + 1, close - open - 1) % REDIS_CLUSTER_SLOTS;
	return redis_crc16(key, len) % REDIS_CLUSTER_SLOTS;
}

#endif /* SLUICE_CLUSTER_KEYSLOT_H */
