#!/usr/bin/env bash
# e2e/edit_keeps_tokens: through the CLI, an edit of another rule leaves a
# source's bucket alone. The source spends 1 of its burst of 5 at 10/s, is
# idle 1.5 s (full again), its rule is raised to 20/s burst 10 (it keeps
# its 5), then an unrelated allow is committed: `query` still says 5 tokens
# and 5 of the next 5 packets pass.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

SRC=198.18.0.68

netns_init ek
netns_setup
sluice_attach
sluice_rx limit set "$SRC/32" --rate 10 --burst 5
send() { # N
	local out
	out=$(flood --src "$SRC" --dst "$RX4" --count "$1" --pps 1000 --seconds 5)
	assert_eq "$(flood_field "$out" .sent)" "$1" "sent $1"
}

send 1
assert_eq "$(sluice_passed "$SRC")" 1 "the first packet"
sleep 1.5
sluice_rx limit set "$SRC/32" --rate 20 --burst 10
sluice_rx allow 198.19.5.0/24
tokens=$(sluice_jq .tokens query "$SRC")
assert_ge "$tokens" 5 "tokens after the unrelated allow"
assert_le "$tokens" 10 "tokens after the unrelated allow (the burst)"
send 5
assert_eq "$(sluice_passed "$SRC")" 6 "passed: 5 of the next 5"
assert_eq "$(sluice_dropped "$SRC")" 0 "dropped"
