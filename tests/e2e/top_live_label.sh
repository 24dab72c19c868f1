#!/usr/bin/env bash
# e2e/top_live_label: `top` and `query` label a source with the rule that
# judges it in the live policy, even when the source has not sent since the
# policy changed (its bucket still names the old generation's rule).
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

SRC=198.18.3.5
DPORT=5001

netns_init tl
netns_setup
sluice_attach
sluice_rx limit default --rate 1000 --burst 1000
sluice_rx limit set 198.18.3.0/24 --rate 1 --burst 5
flood --src "$SRC" --dport "$DPORT" --count 50 --pps 10000 --seconds 5 >/dev/null
row() { sluice_jq ".[] | select(.source == \"$SRC\") | .$1" top; }
assert_eq "$(row policy)" 198.18.3.0/24 "top: policy while it sends"
assert_eq "$(row dropped)" 45 "top: dropped beyond the burst of 5"

# The /24 goes, a /16 covers the source now; no packet from it since.
sluice_rx limit del 198.18.3.0/24
sluice_rx deny 198.18.0.0/16
assert_eq "$(row policy)" 198.18.0.0/16 "top: policy after the change, before any packet"
assert_eq "$(row action)" deny "top: action after the change"
assert_eq "$(sluice_jq .policy query "$SRC")" 198.18.0.0/16 "query: policy after the change"

# Back to the default only.
sluice_rx limit del 198.18.0.0/16
assert_eq "$(row policy)" default "top: policy once only the default is left"
assert_eq "$(row action)" limit "top: action once only the default is left"
