/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* sluice simulate (simulate.c): the admission math on a fake clock. */
#ifndef SLUICE_SIMULATE_H
#define SLUICE_SIMULATE_H

#include "cli.h"

extern const struct cli_cmd simulate_cmd;

#endif /* SLUICE_SIMULATE_H */
