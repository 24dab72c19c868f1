#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# docs/generated: every copy that tools/gen-docs.sh writes is current: the
# synopsis blocks of README.md and doc/commands/ equal `sluice help`'s usage
# lines, HACKING.md's layers equal tests/lint/layers.sh's LAYERS and its
# suites the `# ---- SUITE:` comments of tests/list. On failure it prints
# the difference; `make docs` (tools/gen-docs.sh) writes them anew.
#
# usage: tests/docs/generated.sh [ROOT]
#   ROOT  the tree to check (default the repository); pass an edited copy
#         (with its build/sluice, or SLUICE_BIN) to see the test fail.
set -uo pipefail

ROOT=${1:-${SLUICE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}}
GEN=$(dirname "${BASH_SOURCE[0]}")/../../tools/gen-docs.sh
export SLUICE_BIN=${SLUICE_BIN:-$ROOT/build/sluice}
[[ -x $SLUICE_BIN ]] || { echo "docs/generated: no $SLUICE_BIN: run make all" >&2; exit 1; }

# The markers must be there: a synopsis whose marker was lost is a hand
# copy again. Every command page and both READMEs have one.
n=0
for f in "$ROOT"/README.md "$ROOT"/doc/commands/README.md "$ROOT"/doc/commands/*.rst; do
	m=$(grep -cE '^(\.\. synopsis: |<!-- synopsis: )' "$f")
	((m > 0)) || { echo "FAIL: ${f#"$ROOT"/} has no synopsis marker (see tools/gen-docs.sh)"; exit 1; }
	n=$((n + m))
done
grep -q '^<!-- suites: tests/list -->$' "$ROOT/HACKING.md" || { echo "FAIL: HACKING.md has no suites marker"; exit 1; }
echo "# $n synopsis markers"

if ! "$GEN" --check "$ROOT"; then
	echo "FAIL: a generated copy is stale: run make docs (tools/gen-docs.sh) and commit"
	exit 1
fi
echo "docs/generated: ok"
