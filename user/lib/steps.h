/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Named steps of attach and detach (steps.c). sluice does nothing at
 * them; a test build kills or stops the command at a chosen one, so tests
 * can check what a crash there leaves behind, or run another command in
 * the middle of one. */
#ifndef SLUICE_STEPS_H
#define SLUICE_STEPS_H

void test_hook(const char *step);

#endif /* SLUICE_STEPS_H */
