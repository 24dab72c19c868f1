#!/usr/bin/env bash
# e2e/attach_edit_race: a policy edit made while a first attach is still
# running is not lost. Attach commits the initial policy to fresh maps; it
# must decide that the maps are fresh under the same lock that edits take,
# or an edit landing in between is overwritten by the empty policy. The
# hook SLUICE_TEST_HOOK=gen:stop of sluice-fault stops attach right after it read
# the policy generation; `limit default` runs then, and attach continues.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

netns_init ae
need_sluice_fault
netns_setup

proc_state() { awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null; }

SLUICE_TEST_HOOK=gen:stop nsenter --net="/run/netns/$NS_RX" "$SLUICE_FAULT" attach --mode native "$IF_RX" \
	>"$(netns_tmp attach.out)" 2>&1 &
attach_pid=$!
netns_track_pid "$attach_pid"
for ((i = 0; i < 200; i++)); do
	[[ $(proc_state "$attach_pid") == T ]] && break
	kill -0 "$attach_pid" 2>/dev/null || fail "attach ended before the hook: $(cat "$(netns_tmp attach.out)")"
	sleep 0.05
done
[[ $(proc_state "$attach_pid") == T ]] || fail "attach did not stop at the hook"
ok "attach stopped after reading the policy generation"

# The edit: it either completes now or waits for attach's lock.
nsenter --net="/run/netns/$NS_RX" "$SLUICE" -i "$IF_RX" limit default --rate 5 --burst 7 \
	>"$(netns_tmp limit.out)" 2>&1 &
limit_pid=$!
netns_track_pid "$limit_pid"
for ((i = 0; i < 40; i++)); do
	kill -0 "$limit_pid" 2>/dev/null || break
	sleep 0.05
done
kill -0 "$limit_pid" 2>/dev/null && ok "limit default waits for attach's lock" ||
	ok "limit default finished while attach was stopped"

kill -CONT "$attach_pid"
rc=0
wait "$attach_pid" || rc=$?
assert_eq "$rc" 0 "attach exit code ($(cat "$(netns_tmp attach.out)"))"
rc=0
wait "$limit_pid" || rc=$?
assert_eq "$rc" 0 "limit default exit code ($(cat "$(netns_tmp limit.out)"))"

def=$(sluice_rx -j limit list | jq -c '.[] | select(.cidr == "default") | {action, rate, burst}')
assert_eq "$def" '{"action":"limit","rate":5,"burst":7}' "default policy after both"
