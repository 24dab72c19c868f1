#!/usr/bin/env bash
# exporter/old_pins: the exporter serving two interfaces, one of them with
# pins an older sluice made (tests/lib/old_sluice.sh: version 0.0.9-old,
# its meta map of another layout), before the upgrading attach. The old
# interface's families are replaced by its error gauge,
# sluice_interface_up 0, and it is counted in
# sluice_scrape_skipped_interfaces; the other interface has all of its
# series (sources, packets, rules), with sluice_interface_up 1; the
# exporter logs nothing per scrape for it. Once `sluice attach` upgrades
# the old pins in place, the next scrape reads that interface too.
# Shown to fail against the exporter before acf1598 (an interface it could
# not read was left out, with no series at all: sluice_interface_up of the
# old interface "absent"), rebuilt here as the current exporter.c with that
# one loop put back.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/lib/old_sluice.sh
. "$(dirname "$0")/../lib/old_sluice.sh"

exporter_init opn
old_sluice_build 0.0.9-old
ok "built an old sluice 0.0.9-old with another meta layout"
netns_setup
sluice_attach >/dev/null
sluice_rx limit default --rate 1000 --burst 1000 >/dev/null
sluice_rx limit set 198.18.9.0/24 --rate 5 >/dev/null
flood --src 198.18.8.1 --sources 20 --count 20 --pps 20000 --seconds 10 >/dev/null
L="interface=\"$IF_RX\""

# The old build on a second interface of the namespace.
OLDIF=sl$$op
in_rx ip link add "$OLDIF" type veth peer name "${OLDIF}p" || fail "cannot create veth $OLDIF"
EXTRA_IFACES+=("$OLDIF")
for l in "$OLDIF" "${OLDIF}p"; do in_rx ip link set "$l" up || fail "link up $l"; done
nsenter --net="/run/netns/$NS_RX" "$OLD" attach --mode native "$OLDIF" >/dev/null 2>&1 ||
	fail "the old build's attach on $OLDIF failed"
nsenter --net="/run/netns/$NS_RX" "$OLD" -i "$OLDIF" limit default --rate 50 >/dev/null 2>&1 ||
	fail "the old build's limit default on $OLDIF failed"
O="interface=\"$OLDIF\""

m=$(netns_tmp m.txt)
exporter_start
scrape /metrics >"$m" || fail "scrape with $OLDIF's old pins failed"
assert_eq "$(series "$m" "sluice_interface_up{$O}")" 0 "sluice_interface_up of $OLDIF (old pins)"
assert_eq "$(grep -v '^#' "$m" | grep -c "$O" || true)" 1 "series of $OLDIF: only its sluice_interface_up"
assert_ge "$(series "$m" sluice_scrape_skipped_interfaces)" 1 "sluice_scrape_skipped_interfaces"
assert_eq "$(series "$m" "sluice_interface_up{$L}")" 1 "sluice_interface_up of $IF_RX beside it"
assert_ge "$(series "$m" "sluice_tracked_sources{$L}")" 20 "sluice_tracked_sources of $IF_RX beside it"
assert_ge "$(grep -c "^sluice_packets_total{$L" "$m")" 10 "sluice_packets_total series of $IF_RX beside it"
assert_ge "$(grep -c "^sluice_policy_packets_total{$L" "$m")" 1 "sluice_policy_packets_total of $IF_RX beside it"
grep -q "pins of version" "$EXPORTER_LOG" && fail "the exporter logged the old pins per scrape: $(cat "$EXPORTER_LOG")"
ok "scrape: $OLDIF up 0 and nothing else of it; $IF_RX whole; $(series "$m" sluice_scrape_duration_seconds) s"

# The upgrading attach: the next scrape reads it.
nsenter --net="/run/netns/$NS_RX" "$SLUICE" attach --mode native "$OLDIF" >/dev/null 2>&1 ||
	fail "the upgrading attach of $OLDIF failed"
scrape /metrics >"$m" || fail "scrape after the upgrade failed"
assert_eq "$(series "$m" "sluice_interface_up{$O}")" 1 "sluice_interface_up of $OLDIF after the upgrading attach"
assert_eq "$(series "$m" "sluice_interface_up{$L}")" 1 "sluice_interface_up of $IF_RX after it"
exporter_stop TERM
