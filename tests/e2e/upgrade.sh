#!/usr/bin/env bash
# e2e/upgrade: `sluice attach` over a running sluice of another layout
# replaces it in place, during a flood, and keeps the policy.
#  The "old" sluice is this tree built in a scratch copy with two structs
#  changed (a field added to struct sluice_policy, so the policy table, and
#  with it the config, must be made anew and the policy re-committed from
#  its saved text; and struct sluice_ban reshaped, so the escalation ban
#  map is translated field by field). The old one is attached, given a
#  default limit, a deny rule, a prefix ban and a new-source budget, and
#  flooded; the new build then attaches over it while floods from the
#  denied and the banned source run:
#  - no packet of theirs passes XDP (an nftables counter behind it stays 0),
#    so there was no moment without a judge;
#  - the attach says what it made anew and that per-source state was kept;
#  - policy show and ban list read the same before and after, the limited
#    source keeps its counts (the source table and its seed were kept), the
#    program id changed;
#  - per-source state keeps its meaning: a source with 4 of its 10 tokens
#    (a rule that keeps its index) still has them, and its next packet
#    passes; a source banned for 1 h by a --ban rule whose index the old
#    version had left with a gap (a rule deleted before it) is still banned
#    (query and ban list) and its packets are still dropped;
#  - the old version's check server notices its maps were replaced and
#    exits 1 with a word of why (its unit restarts it on the new ones);
#  - a second attach of the same build keeps everything (no upgrade words),
#    and a policy edit after the upgrade lands on the new maps.
# Shown to fail against a build whose upgrade_fill skips the re-commit: the
# denied source's packets then pass the new program; and against one that
# re-commits into an empty policy table (every rule a new `since`): the
# source with 4 tokens then has none, the banned one a full bucket.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/lib/old_sluice.sh
. "$(dirname "$0")/../lib/old_sluice.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"

DENIED=198.18.7.7
BANNED=198.18.9.9
LIMITED=198.18.0.66
TOKENS=198.18.12.12	# 4 of its 10 tokens left, at one a minute
RULE_BANNED=198.18.13.13	# banned for an hour by its rule's --ban

netns_init up
OLD_TREE=$(netns_tmp old)
tree_copy "$OLD_TREE"
python3 - "$OLD_TREE/include/sluice" <<'EOF'
import sys
d = sys.argv[1]
ps, pb = d + "/policy.h", d + "/bans.h"
s, b = open(ps).read(), open(pb).read()
pol = "\tstruct sluice_match match;\t/* the rule's match (policy unused) */\n};"
ban = "\t__u32 policy;\t\t/* the request rule's index (its counters) */\n\t__u32 pad;\n};"
if pol not in s or ban not in b:
    sys.exit("upgrade: policy.h or bans.h changed: the old layout's patch no longer applies")
s = s.replace(pol, pol[:-3] + "\n\t__u64 old_extra;\n};")
b = b.replace(ban, ban.replace("\t__u32 pad;\n", "\t__u32 old_spare;\n\t__u64 old_seen;\n"))
open(ps, "w").write(s)
open(pb, "w").write(b)
EOF
make -s -C "$OLD_TREE" -j2 build/sluice >"$(netns_tmp old-build.log)" 2>&1 ||
	fail "the old layout does not build: $(tail -5 "$(netns_tmp old-build.log)")"
OLD=$OLD_TREE/build/sluice
ok "built an old sluice with another policy and ban layout"

netns_setup
old_rx() { nsenter --net="/run/netns/$NS_RX" "$OLD" -i "$IF_RX" "$@"; }
old_rx attach --mode native "$IF_RX" >/dev/null
old_rx limit default --rate 1000 --burst 100 >/dev/null
old_rx deny 198.18.7.0/24 >/dev/null
# Index 2 for the tokens rule; 3 is left free when its rule is deleted,
# so the --ban rule's index (4) is not the one a fresh table gives it.
old_rx limit set 198.18.12.0/24 --rate 1/m --burst 10 >/dev/null
old_rx limit set 198.18.14.0/24 --rate 1/m >/dev/null
old_rx limit set 198.18.13.0/24 --rate 1/h --burst 2 --ban 1h >/dev/null
old_rx limit del 198.18.14.0/24 >/dev/null
old_rx limit new-sources --rate 50000 --burst 5000 >/dev/null
old_rx ban add "$BANNED" >/dev/null
prog_old=$(old_rx -j status | jq -r '.interfaces[0].prog_id')
send() { # SRC N: N packets, all sent
	local out
	out=$(flood --src "$1" --count "$2" --pps 1000 --seconds 5)
	assert_eq "$(flood_field "$out" .sent)" "$2" "packets sent from $1"
}
send "$TOKENS" 6
tokens_before=$(old_rx -j query "$TOKENS" | jq -r .tokens)
assert_eq "$tokens_before" 4 "tokens of $TOKENS before the upgrade"
send "$RULE_BANNED" 5
[[ $(old_rx -j query "$RULE_BANNED" | jq -r .banned) == true ]] ||
	fail "$RULE_BANNED is not banned by its rule: $(old_rx -j query "$RULE_BANNED")"
policy_before=$(old_rx policy show)
bans_before=$(old_rx ban list | awk '{ print $1, $2 }')

out=$(flood --src "$LIMITED" --count 3000 --pps 6000 --seconds 5)
passed_before=$(old_rx -j query "$LIMITED" | jq -r '.passed // empty')
[[ -n $passed_before ]] || fail "no count for $LIMITED from the old sluice: $(old_rx -j query "$LIMITED")"
assert_ge "$passed_before" 100 "packets the old sluice passed from $LIMITED"

# The old version's check server, which holds the old maps open.
sock=$(netns_tmp check.sock)
check_log=$(netns_tmp check.log)
nsenter --net="/run/netns/$NS_RX" "$OLD" -i "$IF_RX" check-server --socket "$sock" \
	>"$check_log" 2>&1 &
check_pid=$!
netns_track_pid "$check_pid"
for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.1; done
[[ -S $sock ]] || fail "the old check server did not start: $(cat "$check_log")"

nft_rx_init
nft_rx_counter c_denied ip saddr "$DENIED"
nft_rx_counter c_banned ip saddr "$BANNED"

# The upgrade while both floods run (5000/s each, at most 4 s).
flood_bg "$(netns_tmp f_denied.json)" --src "$DENIED" --count 20000 --pps 5000 --seconds 4
pid_denied=$FLOOD_PID
flood_bg "$(netns_tmp f_banned.json)" --src "$BANNED" --count 20000 --pps 5000 --seconds 4
pid_banned=$FLOOD_PID
sleep 0.5
msg=$(sluice_attach 2>&1) || fail "attach over the old sluice failed: $msg"
echo "$msg"
wait "$pid_denied" "$pid_banned" || true

for f in f_denied f_banned; do
	sent=$(flood_field "$(cat "$(netns_tmp $f.json)")" .sent)
	assert_ge "$sent" 5000 "packets sent by $f across the upgrade"
done
assert_eq "$(nft_rx_packets c_denied)" 0 "packets of the denied source past XDP across the upgrade"
assert_eq "$(nft_rx_packets c_banned)" 0 "packets of the banned source past XDP across the upgrade"

[[ $msg == *"upgraded in place: made anew"*"policy_table"* ]] ||
	fail "the attach does not say it made the policy table anew: $msg"
[[ $msg == *"bans"* && $msg == *"config"* ]] ||
	fail "the attach does not name the ban and config maps it made anew: $msg"
[[ $msg == *"the policy re-applied from its saved text"* ]] ||
	fail "the attach does not say the policy was re-applied: $msg"
[[ $msg == *"per-source state kept"* ]] || fail "the attach does not say per-source state was kept: $msg"
ok "the attach said what it made anew and what it kept"

# The old check server sees its maps replaced within a second or so and
# exits 1 (its unit's Restart= brings it back on the new maps).
rc=0
timeout 5 tail --pid="$check_pid" -f /dev/null || fail "the old check server still runs 5 s after the upgrade"
wait "$check_pid" || rc=$?
assert_eq "$rc" 1 "exit status of the old check server after the upgrade"
grep -q "attached anew with other maps (an upgrade)" "$check_log" ||
	fail "the old check server did not say why it stopped: $(cat "$check_log")"
ok "the old check server stopped, saying its maps were replaced"

# Per-source state kept means kept: the tokens, and the rule's ban.
tokens_after=$(sluice_jq .tokens query "$TOKENS")
assert_ge "$tokens_after" "$tokens_before" "tokens of $TOKENS after the upgrade"
assert_le "$tokens_after" $((tokens_before + 1)) "tokens of $TOKENS after the upgrade"
passed0=$(sluice_passed "$TOKENS")
send "$TOKENS" 1
assert_eq "$(sluice_passed "$TOKENS")" $((passed0 + 1)) "$TOKENS's packet after the upgrade"
ok "$TOKENS kept its tokens across the upgrade"
left_ms=$(sluice_jq .ban_left_ms query "$RULE_BANNED")
assert_ge "$left_ms" 3000000 "ms left of $RULE_BANNED's ban after the upgrade"
sluice_rx -j ban list | jq -e --arg s "$RULE_BANNED" \
	'any(.[]; .source == $s and .kind == "rule")' >/dev/null ||
	fail "ban list does not show $RULE_BANNED's ban after the upgrade: $(sluice_rx ban list)"
passed0=$(sluice_passed "$RULE_BANNED")
send "$RULE_BANNED" 3
assert_eq "$(sluice_passed "$RULE_BANNED")" "$passed0" "$RULE_BANNED's packets passed after the upgrade"
[[ $(sluice_jq .banned query "$RULE_BANNED") == true ]] ||
	fail "$RULE_BANNED is no longer banned after the upgrade"
ok "$RULE_BANNED's ban survived the upgrade"

prog_new=$(sluice_jq '.interfaces[0].prog_id' status)
[[ $prog_new != "$prog_old" ]] || fail "the program id did not change ($prog_old)"
policy_after=$(sluice_rx policy show)
bans_after=$(sluice_rx ban list | awk '{ print $1, $2 }')
[[ $policy_after == "$policy_before" ]] ||
	fail "the policy changed across the upgrade: before: $policy_before; after: $policy_after"
[[ $bans_after == "$bans_before" ]] ||
	fail "the bans changed across the upgrade: before: $bans_before; after: $bans_after"
ok "policy show and ban list read the same after the upgrade"

passed_after=$(sluice_jq .passed query "$LIMITED")
assert_ge "$passed_after" "$passed_before" "$LIMITED's pass count after the upgrade (source table kept)"

msg=$(sluice_attach 2>&1) || fail "a second attach of the same build failed: $msg"
[[ $msg == *"state kept from the previous attach"* && $msg != *upgraded* ]] ||
	fail "a same-version re-attach should keep everything: $msg"
sluice_rx allow 198.18.1.0/24 >/dev/null
sluice_rx policy show | grep -q '^allow 198.18.1.0/24' ||
	fail "an edit after the upgrade is not in the live policy: $(sluice_rx policy show)"
ok "a same-version re-attach keeps everything, and edits land on the new maps"
