#!/usr/bin/env bash
# e2e/upgrade_bans LAYOUT: an escalation ban that the old version's check
# server writes while an upgrade in place runs is enforced by the new
# program.
#  The "old" sluice is this tree built in a scratch copy with one struct
#  changed, by LAYOUT:
#  - ban: struct sluice_ban reshaped, so the upgrade makes the ban table
#    anew and copies it before the new program loads;
#  - policy: a field added to struct sluice_policy, so the policy table
#    and with it the config are made anew, while the ban table and
#    ban_state are kept: the first ban's word must be where the new
#    program looks.
#  It is attached with a request rule (--ban-after 3) and its check server
#  runs. The new build's attach is stopped between putting the new program
#  on the link and pinning the new maps (SLUICE_TEST_HOOK=attached:stop,
#  build/tests/sluice-fault): the new program already judges on the new
#  maps, and the old check server, which has not seen anything change,
#  bans a client that keeps asking (the first ban of the table). Then the
#  attach goes on:
#  - `ban list` of the new build lists the client's escalated ban;
#  - XDP drops every packet of that client as banned.
# Shown to fail against the build that kept the word in the config and
# had no carry: with LAYOUT ban the ban was in the old table only (ban
# list empty); with LAYOUT policy it was listed, but its word was set in
# the old config only, and XDP let the client's packets through.
set -euo pipefail
# shellcheck source=tests/check/lib.sh
. "$(dirname "$0")/../check/lib.sh"
# shellcheck source=tests/lib/old_sluice.sh
. "$(dirname "$0")/../lib/old_sluice.sh"

BAD=$TX4
LAYOUT=${1:-ban}
[[ $LAYOUT == ban || $LAYOUT == policy ]] || fail "usage: upgrade_bans.sh ban|policy"

netns_init upb
command -v curl >/dev/null || skip "curl not installed (tools/install-deps.sh)"
need_sluice_fault
OLD_TREE=$(netns_tmp old)
tree_copy "$OLD_TREE"
python3 - "$OLD_TREE/include/sluice" "$LAYOUT" <<'EOF'
import sys
d, layout = sys.argv[1], sys.argv[2]
ps, pb = d + "/policy.h", d + "/bans.h"
s, b = open(ps).read(), open(pb).read()
pol = "\tstruct sluice_match match;\t/* the rule's match (policy unused) */\n};"
ban = "\t__u32 policy;\t\t/* the request rule's index (its counters) */\n\t__u32 pad;\n};"
if pol not in s or ban not in b:
    sys.exit("upgrade_bans: policy.h or bans.h changed: the old layout's patch no longer applies")
if layout == "ban":
    b = b.replace(ban, ban.replace("\t__u32 pad;\n", "\t__u32 old_spare;\n\t__u64 old_seen;\n"))
else:
    s = s.replace(pol, pol[:-3] + "\n\t__u64 old_extra;\n};")
open(ps, "w").write(s)
open(pb, "w").write(b)
EOF
make -s -C "$OLD_TREE" -j2 build/sluice >"$(netns_tmp old-build.log)" 2>&1 ||
	fail "the old layout does not build: $(tail -5 "$(netns_tmp old-build.log)")"
OLD=$OLD_TREE/build/sluice
NEW=$SLUICE
ok "built an old sluice with another $LAYOUT layout"

netns_setup
CHECK_HDR=$(netns_tmp check.hdr)
SLUICE=$OLD SLUICE_CHECK=$OLD
sluice_attach >/dev/null
sluice_rx limit set 198.18.0.0/24 --requests 1/s --burst 2 --ban 60s --ban-after 3 >/dev/null
check_start

# The new build's attach, stopped with its program on the link and the old
# maps still pinned (nsenter execs it: its PID is $!).
attach_log=$(netns_tmp attach.log)
SLUICE_TEST_HOOK=attached:stop nsenter --net="/run/netns/$NS_RX" "$SLUICE_FAULT" -i "$IF_RX" \
	attach --mode native "$IF_RX" >"$attach_log" 2>&1 &
attach_pid=$!
netns_track_pid "$attach_pid"
for _ in $(seq 1200); do
	[[ $(awk '{ print $3 }' "/proc/$attach_pid/stat" 2>/dev/null) == T ]] && break
	kill -0 "$attach_pid" 2>/dev/null || fail "the new attach ended early: $(cat "$attach_log")"
	sleep 0.1
done
[[ $(awk '{ print $3 }' "/proc/$attach_pid/stat") == T ]] ||
	fail "the new attach did not reach its stop within 120 s: $(cat "$attach_log")"
ok "the new program runs; the old maps are still pinned"

codes=
for ((i = 0; i < 6; i++)); do
	codes+="$(check "$BAD") "
done
assert_eq "$codes" "200 200 429 429 429 429 " "checks of $BAD by the old check server"
sluice_rx -j ban list | jq -e --arg a "$BAD" 'any(.[]; .source == $a and .kind == "escalated")' \
	>/dev/null || fail "the old check server did not ban $BAD: $(sluice_rx -j ban list)"
ok "the old check server banned $BAD into the old ban table, mid-upgrade"

kill -CONT "$attach_pid"
rc=0
wait "$attach_pid" || rc=$?
assert_eq "$rc" 0 "exit status of the new attach ($(cat "$attach_log"))"
made=$(grep -o "upgraded in place: made anew[^;]*" "$attach_log") ||
	fail "the attach did not upgrade: $(cat "$attach_log")"
if [[ $LAYOUT == ban ]]; then
	[[ $made == *" bans"* ]] || fail "the attach did not make the ban table anew: $made"
else
	[[ $made == *" config"* && $made != *" bans"* && $made != *ban_state* ]] ||
		fail "the attach should make the config anew and keep the ban table: $made"
fi
ok "the attach: $made"

SLUICE=$NEW
sluice_rx -j ban list | jq -e --arg a "$BAD" 'any(.[]; .source == $a and .kind == "escalated")' \
	>/dev/null || fail "the ban of $BAD is not in the new ban table: $(sluice_rx -j ban list)"
ok "the new build lists the ban written during the upgrade"

before=$(sluice_stat drop banned)
out=$(flood --src "$BAD" --count 20 --pps 1000)
assert_eq "$(flood_field "$out" .sent)" 20 "packets sent by $BAD"
sleep 0.2 # the last frames leave the veth's ring
assert_eq "$(($(sluice_stat drop banned) - before))" 20 "packets of $BAD dropped as banned by the new program"
ok "the new program enforces the ban written during the upgrade"
