#!/usr/bin/env bash
# e2e/upgrade_occupancy: the source table and the occupancy counters the
# XDP program keeps of it (src_stats) are kept or made anew together by an
# upgrading attach. Pins of a version that kept no counters (src_stats's
# pin removed) hold sources; the attach over them makes the table anew
# with its counters, so `status` still says what a walk of the table finds,
# then and after more sources came: never a table kept with its held slots
# counted as free (status would say 0 held, for good, while the walk finds
# them).
set -euo pipefail
. "$(dirname "$0")/../lib/netns.sh"

FILL_SOURCES=${FILL_SOURCES:-$SLUICE_ROOT/build/tests/fill_sources}

netns_init upo
[[ -x $FILL_SOURCES ]] || fail "$FILL_SOURCES not built: run make build/tests/fill_sources"
netns_setup
sluice_attach
sluice_rx limit default --rate 1000 --burst 1000 >/dev/null
pin=$SLUICE_PIN_ROOT/$IF_RX

live() { sluice_jq ".interfaces[] | select(.interface == \"$IF_RX\") | .slots_live" status; }
# Readings between two walks that agree (the kernel's own packets, an
# IPv6 MLD report say, may add a source at any moment).
agree() { # WHAT
	local walked counted after i
	for ((i = 0; i < 5; i++)); do
		walked=$("$FILL_SOURCES" count "$pin") || fail "walking $pin failed"
		counted=$(live)
		after=$("$FILL_SOURCES" count "$pin") || fail "walking $pin failed"
		((after == walked)) && break
	done
	assert_eq "$counted" "$walked" "$1: status -j slots_live equals a walk of the table"
	WALKED=$walked
}

flood --src 198.18.8.1 --sources 50 --count 50 --pps 20000 --seconds 10 >/dev/null
agree "50 sources"
assert_ge "$WALKED" 50 "slots held after 50 sources"

rm "$pin/src_stats"
out=$(sluice_attach 2>&1) || fail "attach over pins without src_stats: $out"
echo "$out"
agree "after the upgrading attach"
assert_le "$WALKED" 10 "slots held after the upgrading attach (the table made anew)"

flood --src 198.18.9.1 --sources 30 --count 30 --pps 20000 --seconds 10 >/dev/null
agree "30 more sources"
assert_ge "$WALKED" 30 "slots held after 30 more sources"
