#!/usr/bin/env bash
# e2e/query_bans: `query` shows every rule ban that holds a source, not
# only its decisive rule's. Under a packet rule for the prefix (no ban) and
# a rule with a match beside it (UDP to port 5001, --ban 1h), a source that
# floods port 5001 is banned by the match rule: ban list shows the ban,
# and query of the source (whose decisive rule, for packets in general, is
# the prefix's) says so too, in text ("banned by RULE (bucket ...) for ...
# s more") and in JSON ("banned": true, a "bans" entry of kind "rule" with
# the match rule and most of its hour left). A source with no ban has an
# empty "bans".
#
# It can fail: before query looked at other rules' buckets it said
# "banned": false for the banned source, with no word of the ban.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

NET=198.18.3.0/24
SRC=198.18.3.7
OTHER=198.18.3.8

netns_init qbn
netns_setup
sluice_attach
sluice_rx limit set "$NET" --rate 1000 --burst 1000 >/dev/null
sluice_rx limit set "$NET" --proto udp --dport 5001 --rate 10 --burst 5 --ban 1h >/dev/null
MATCH=$(sluice_rx -j limit list | jq -r '.[] | select(.ban_ms == 3600000) | .rule') ||
	fail "limit list -j failed"
[[ -n $MATCH ]] || fail "limit list -j shows no rule with --ban 1h"

out=$(flood --src "$SRC" --dport 5001 --count 40 --pps 1000 --seconds 10)
[[ $(flood_field "$out" .sent) == 40 ]] || fail "the flood sent $(flood_field "$out" .sent) of 40"
sleep 0.2 # the last frames leave the veth's ring

entry=$(sluice_rx -j ban list | jq -c --arg a "$SRC" '[.[] | select(.source == $a)] | .[0] // empty') ||
	fail "ban list -j failed"
[[ -n $entry ]] || fail "ban list -j shows no ban of $SRC"
echo "ban list: $entry"

q=$(sluice_rx -j query "$SRC") || fail "query -j $SRC failed"
echo "query -j: $q"
assert_eq "$(jq -r .policy <<<"$q")" "$NET" "query's decisive rule (packets in general)"
assert_eq "$(jq -r .banned <<<"$q")" true "query -j: banned"
assert_ge "$(jq -r .ban_left_ms <<<"$q")" 3500000 "query -j: ban_left_ms (most of an hour)"
assert_eq "$(jq -r '.bans | length' <<<"$q")" 1 "query -j: bans"
assert_eq "$(jq -r '.bans[0].kind' <<<"$q")" rule "query -j: the ban's kind"
assert_eq "$(jq -r '.bans[0].policy' <<<"$q")" "$(jq -r .policy <<<"$entry")" "query -j: the ban's rule, as ban list has it"
assert_ge "$(jq -r '.bans[0].left_seconds' <<<"$q")" 3500 "query -j: the ban's time left"

text=$(sluice_rx query "$SRC") || fail "query $SRC failed"
echo "$text"
grep -qE "^  banned by .*--dport 5001.* for [0-9.]+ s more$" <<<"$text" ||
	fail "query $SRC says nothing of the ban by the --dport 5001 rule"
ok "query $SRC: the ban of the match rule, in text"

q=$(sluice_rx -j query "$OTHER") || fail "query -j $OTHER failed"
assert_eq "$(jq -r '.banned, (.bans | length)' <<<"$q" | tr '\n' ' ')" "false 0 " "query -j of a source without a ban"
ok "query_bans"
