/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The BPF tests' checks: the C tests' one harness (tests/lib/harness.h). */
#ifndef SLUICE_TEST_CHECK_H
#define SLUICE_TEST_CHECK_H

#include "../lib/harness.h"

#endif /* SLUICE_TEST_CHECK_H */
