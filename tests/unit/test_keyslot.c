// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of the Redis Cluster slot of a key (user/daemon/cluster/
 * keyslot.h), against what a real Redis 7 answered to `redis-cli cluster
 * keyslot KEY`: plain keys, hash tags, the tag's edge cases (empty,
 * unclosed, a second one), and the agent's own keys in both modes.
 *
 * usage: test_keyslot [CASE]    only the cases whose name contains CASE */
#include <string.h>
#include "keyslot.h"
#include "harness.h"

struct slot_case {
	const char *key;
	unsigned int slot;	/* redis-cli cluster keyslot KEY (Redis 7.0.15) */
};

static const struct slot_case redis_says[] = {
	{ "foo", 12182 },
	{ "bar", 5061 },
	{ "hello", 866 },
	{ "123456789", 12739 },
	{ "", 0 },
	{ "{user1000}.following", 3443 },
	{ "a{}b", 13694 },		/* an empty tag: the whole key */
	{ "{}", 15257 },
	{ "{", 4092 },			/* no '}': the whole key */
	{ "abc{", 3048 },
	{ "x{sluice}y{z}", 59 },	/* the first tag only */
	{ "sluice", 59 },
	{ "{sluice}:nodes", 59 },	/* --redis-cluster's keys share this slot */
	{ "sluice:{nodes}", 9928 },	/* single Redis: the heartbeat, as before */
	{ "sluice:{198.18.0.0/15|198.18.0.1/32}", 15750 },
};

static void case_crc16_check_value(void)
{
	/* The CRC-16/XMODEM catalogue's check value. */
	CHECK_EQ(redis_crc16("123456789", 9), 0x31c3, "crc16 of 123456789");
}

static void case_keyslot_as_redis(void)
{
	for (size_t i = 0; i < ARRAY_LEN(redis_says); i++) {
		const struct slot_case *c = &redis_says[i];

		CHECK_EQ(redis_keyslot(c->key, strlen(c->key)), c->slot, "keyslot of '%s'",
			 c->key);
	}
}

static const struct test_case cases[] = {
	{ "crc16_check_value", case_crc16_check_value },
	{ "keyslot_as_redis", case_keyslot_as_redis },
};

/* Optional argument: run only the cases whose name contains it. */
int main(int argc, char **argv)
{
	return run_cases("test_keyslot", cases, ARRAY_LEN(cases), argc, argv);
}
