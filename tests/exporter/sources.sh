#!/usr/bin/env bash
# exporter/sources: with a million sources in the table (put straight into
# the pinned source table's slots, no traffic), sluice_tracked_sources
# equals `sluice stats -j` and an independent slot-by-slot walk, and so it
# does when sources are put in past its size until nearly every slot is
# held. Scrape times at 0 and 1M sources are printed for the record, not
# asserted.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CAP=1048576
FILL=1000000
MORE=1100000

exporter_init exs
[[ -x $FILL_SOURCES ]] || fail "$FILL_SOURCES not built: run make build/tests/fill_sources"
netns_setup
sluice_attach --max-sources "$CAP"
exporter_start -i "$IF_RX"

m=$(netns_tmp m.txt)
L="interface=\"$IF_RX\""
pin=$SLUICE_PIN_ROOT/$IF_RX
SLOTS=$(sluice_rx -j status | jq ".interfaces[] | select(.interface == \"$IF_RX\") | .slots")

# Scrape time (the exporter's own gauge, and curl's) at N sources, median of 5.
scrape_times() {
	local i d=() t=()
	for ((i = 0; i < 5; i++)); do
		t+=("$(scrape /metrics -o "$m" -w '%{time_total}')")
		d+=("$(series "$m" sluice_scrape_duration_seconds)")
	done
	echo "scrape at $1 sources: sluice_scrape_duration_seconds median" \
		"$(printf '%s\n' "${d[@]}" | sort -g | sed -n 3p) s, HTTP round trip median" \
		"$(printf '%s\n' "${t[@]}" | sort -g | sed -n 3p) s"
}

check_counts() { # WHAT
	local walked after exported stats i
	# The kernel's own packets (an IPv6 MLD report, say) may add a source
	# at any moment: take a reading only between two walks that agree.
	for ((i = 0; i < 5; i++)); do
		walked=$("$FILL_SOURCES" count "$pin") || fail "walking $pin failed"
		scrape /metrics >"$m" || fail "scrape failed"
		exported=$(series "$m" "sluice_tracked_sources{$L}")
		stats=$(stats_json | jq .tracked_sources)
		after=$("$FILL_SOURCES" count "$pin") || fail "walking $pin failed"
		((after == walked)) && break
	done
	assert_eq "$after" "$walked" "$1: the table held still between two walks"
	assert_eq "$exported" "$walked" "$1: exported count equals a key-by-key walk"
	assert_eq "$stats" "$walked" "$1: stats -j equals the walk"
	COUNT=$walked
}

scrape_times "$(stats_json | jq .tracked_sources)"
t0=$(now)
put=$("$FILL_SOURCES" fill "$pin" "$FILL") || fail "filling $pin failed"
echo "put $put of $FILL sources in $(calc "$(now) - $t0" %.2f) s (the rest found both buckets full)"
check_counts "after $FILL inserts"
assert_eq "$COUNT" "$put" "sources tracked"
assert_ge "$COUNT" $((FILL * 999 / 1000)) "sources that found a slot at load $(calc "$FILL / $SLOTS" %.2f)"
assert_eq "$(series "$m" "sluice_tracked_sources_capacity{$L}")" "$CAP" "capacity"
scrape_times "$COUNT"
t0=$(now)
sluice_rx top -n 1 >/dev/null || fail "sluice top failed"
echo "for comparison, one batched walk of the table (sluice top -n 1): $(calc "$(now) - $t0" %.3f) s"
t0=$(now)
stats_json >/dev/null
echo "sluice stats -j: $(calc "$(now) - $t0" %.3f) s"

# Past --max-sources: free slots fill up until sources find both their
# buckets full, and the count follows. fill_sources numbers sources from
# 1: the first FILL are there already, MORE new ones come.
"$FILL_SOURCES" fill "$pin" $((FILL + MORE)) >/dev/null || fail "overfilling $pin failed"
check_counts "after putting sources past --max-sources"
assert_le "$COUNT" "$SLOTS" "sources tracked past --max-sources ($SLOTS slots)"
assert_ge "$COUNT" $((SLOTS * 9 / 10)) "sources tracked past --max-sources (the table nearly full)"
exporter_stop TERM
