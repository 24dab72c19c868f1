#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# doc/metrics.md's reason table against the SLUICE_REASONS list
# (include/sluice/reasons.h), from which the enum, the drop set and the
# names stats and the exporter print all come: the same reasons in the same
# order, each with its action and meaning. Usage: reasons.sh [DOC]
set -euo pipefail
cd "$(dirname "$0")/../.."
doc=${1:-doc/metrics.md}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat > "$tmp/rows.c" <<'C'
#include <stdio.h>
#include "sluice/reasons.h"

int main(void)
{
#define ROW(id, name, drop, help) \
	printf("| `%s` | %s | %s |\n", name, (drop) ? "drop" : "pass", help);
	SLUICE_REASONS(ROW)
	return 0;
}
C
"${CC:-cc}" -std=gnu11 -Wall -Wextra -Werror -I include "$tmp/rows.c" -o "$tmp/rows"
"$tmp/rows" > "$tmp/want"
# The rows of the table under the "### Reasons" heading.
awk '/^### Reasons/ { on = 1; next } on && /^#/ { exit } on && /^\| `/' "$doc" > "$tmp/have"

if ! diff -u "$tmp/want" "$tmp/have" > "$tmp/diff"; then
	echo "FAIL: $doc's reason table differs from SLUICE_REASONS (include/sluice/reasons.h);"
	echo "      - is the list, + is the doc:"
	cat "$tmp/diff"
	exit 1
fi
echo "ok: $doc lists the $(wc -l < "$tmp/want") reasons of SLUICE_REASONS"
