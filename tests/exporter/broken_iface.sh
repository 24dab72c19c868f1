#!/usr/bin/env bash
# exporter/broken_iface: one interface whose pins cannot be read (a map's
# pin moved away, as a damaged or half-upgraded pin directory has) never
# blanks the scrape: it has sluice_interface_up 0 and no other series, and
# every other interface has its series, with sluice_interface_up 1; once
# its pin is back, it is read again.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

exporter_init bki
netns_setup
sluice_attach
sluice_rx limit default --rate 1000 --burst 1000 >/dev/null
flood --src 198.18.8.1 --sources 20 --count 20 --pps 20000 --seconds 10 >/dev/null
L="interface=\"$IF_RX\""
m=$(netns_tmp m.txt)
BROKEN=sl$$bk
attach_extra "$BROKEN"
mv "$SLUICE_PIN_ROOT/$BROKEN/src_stats" "$SLUICE_PIN_ROOT/$BROKEN/src_stats_away"
restore() { mv "$SLUICE_PIN_ROOT/$BROKEN/src_stats_away" "$SLUICE_PIN_ROOT/$BROKEN/src_stats"; }
exporter_start
scrape /metrics >"$m" || { restore; fail "scrape with $BROKEN broken failed"; }
restore
B="interface=\"$BROKEN\""
assert_eq "$(series "$m" "sluice_interface_up{$B}")" 0 "sluice_interface_up of the broken $BROKEN"
assert_eq "$(grep -v '^#' "$m" | grep -c "$B" || true)" 1 "series of $BROKEN: only its sluice_interface_up"
assert_eq "$(series "$m" "sluice_interface_up{$L}")" 1 "sluice_interface_up of $IF_RX beside it"
assert_ge "$(series "$m" "sluice_tracked_sources{$L}")" 20 "sluice_tracked_sources of $IF_RX beside it"
assert_ge "$(grep -c "^sluice_packets_total{$L" "$m")" 10 "sluice_packets_total series of $IF_RX beside it"
scrape /metrics >"$m" || fail "scrape after the repair failed"
assert_eq "$(series "$m" "sluice_interface_up{$B}")" 1 "sluice_interface_up of $BROKEN once its pin is back"
exporter_stop TERM
