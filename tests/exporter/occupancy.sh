#!/usr/bin/env bash
# exporter/occupancy: at the largest table (--max-sources 16,777,216, some
# 600 MB of slots), `sluice status` and a scrape take the source table's
# occupancy from the counters the datapath keeps, never from the table:
#  - after 3,000 sources sent one packet each, status -j (slots_live), the
#    scrape (sluice_tracked_sources), `sluice top` and an independent
#    slot-by-slot walk (fill_sources count) all say the same;
#  - neither reads the table: the exporter's peak RSS after five scrapes,
#    and `sluice -j status`'s, stay under RSS_MAX_KB, far below the table's
#    size (a walk through the mmap, or the copy an unprivileged reader
#    makes, would map or copy all of it);
# (exporter/broken_iface: one interface that cannot be read never blanks
# the others.)
# Memory, not time: a busy machine passes as a quiet one does.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CAP=16777216
N=3000
RSS_MAX_KB=$((128 * 1024))

exporter_init occ
[[ -x $FILL_SOURCES ]] || fail "$FILL_SOURCES not built: run make build/tests/fill_sources"
[[ -x /usr/bin/time ]] || skip "GNU time not installed (Debian package time)"
netns_setup
sluice_attach --max-sources "$CAP"
sluice_rx limit default --rate 1000 --burst 1000 >/dev/null
pin=$SLUICE_PIN_ROOT/$IF_RX
L="interface=\"$IF_RX\""
m=$(netns_tmp m.txt)
SLOTS=$(sluice_rx -j status | jq ".interfaces[] | select(.interface == \"$IF_RX\") | .slots")
TABLE_KB=$((SLOTS * 32 / 1024))
ok "table of $SLOTS slots ($((TABLE_KB / 1024)) MB of slots)"

flood --src 198.18.8.1 --sources "$N" --count "$N" --pps 20000 --seconds 10 >/dev/null

# --- the table is never read: status's memory ---
rss=$(nsenter --net="/run/netns/$NS_RX" /usr/bin/time -f %M "$SLUICE" -i "$IF_RX" -j status \
	2>&1 >/dev/null | tail -n 1)
echo "sluice -j status peak RSS: $((rss / 1024)) MB"
assert_le "$rss" "$RSS_MAX_KB" "sluice -j status peak RSS (kB) at --max-sources $CAP"
exporter_start -i "$IF_RX"

# --- the counts: status, a scrape and top equal a walk ---
status_live() {
	sluice_rx -j status | jq ".interfaces[] | select(.interface == \"$IF_RX\") | .slots_live"
}
# The kernel's own packets (an IPv6 MLD report, say) may add a source at
# any moment: take the readings between two walks that agree.
for ((i = 0; i < 5; i++)); do
	walked=$("$FILL_SOURCES" count "$pin") || fail "walking $pin failed"
	live=$(status_live)
	scrape /metrics >"$m" || fail "scrape failed"
	exported=$(series "$m" "sluice_tracked_sources{$L}")
	topped=$(sluice_rx -j top -n 100000 | jq length)
	after=$("$FILL_SOURCES" count "$pin") || fail "walking $pin failed"
	((after == walked)) && break
done
assert_eq "$after" "$walked" "the table held still between two walks"
assert_ge "$walked" $((N * 9 / 10)) "sources that took a slot, of the $N sent"
assert_eq "$live" "$walked" "status -j slots_live equals a walk of the table"
assert_eq "$exported" "$walked" "sluice_tracked_sources equals a walk of the table"
assert_eq "$topped" "$walked" "sluice top lists what a walk of the table finds"
probation=$(series "$m" "sluice_tracked_sources_probation{$L}")
established=$(series "$m" "sluice_tracked_sources_established{$L}")
assert_eq "$((probation + established))" "$walked" "established + probation equals the slots held"
assert_eq "$(series "$m" "sluice_interface_up{$L}")" 1 "sluice_interface_up of the interface"

# --- the table is never read: the exporter's memory ---
for ((i = 0; i < 5; i++)); do
	scrape /metrics -o /dev/null || fail "scrape $i failed"
done
hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$EXPORTER_PID/status")
echo "exporter peak RSS after 6 scrapes: $((hwm / 1024)) MB (the table: $((TABLE_KB / 1024)) MB of slots);" \
	"last scrape $(series "$m" sluice_scrape_duration_seconds) s"
assert_le "$hwm" "$RSS_MAX_KB" "exporter peak RSS (kB) after 6 scrapes at --max-sources $CAP"
exporter_stop TERM

