#!/usr/bin/env bash
# e2e/stale_pins: pins left by another version of sluice (an upgrade without
# a detach first) are named as such, not misread. One pinned map is swapped
# for one of another layout (the counters array one reason short, as a
# sluice with one drop reason fewer pins it): stats and query then refuse with exit 2 and one
# line that names the map and says to attach (the upgrade); status says so for that
# interface; detach still removes it all, and a new attach works.
# Can fail: a build that does not check the pins' layout reads the short
# array in stats and fails with "cannot read counters: No such file
# or directory", exit 1.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

netns_init sp
netns_setup

sluice_attach >/dev/null
pins=$SLUICE_PIN_ROOT/$IF_RX
# The counters map as an older build declared it: one reason fewer.
short=$(($(bpftool -j map show pinned "$pins/counters" | jq -r .max_entries) - 1))
rm "$pins/counters"
bpftool map create "$pins/counters" type percpu_array key 4 value 16 entries "$short" \
	name counters || fail "cannot pin a stand-in counters map"

for cmd in stats "query 198.18.0.1" "limit list"; do
	rc=0
	# shellcheck disable=SC2086
	err=$(sluice_rx $cmd 2>&1 >/dev/null) || rc=$?
	assert_eq "$rc" 2 "exit status of '$cmd' on another version's pins"
	assert_eq "$(wc -l <<<"$err")" 1 "lines on stderr of '$cmd'"
	# The pins say this version wrote them: the map is another build's.
	[[ $err == *"$IF_RX: pins of another build of sluice "*" (map counters differs from this version's): run 'sluice attach $IF_RX' to upgrade in place"* ]] ||
		fail "'$cmd' on another version's pins said: $err"
done
ok "stats, query and limit list refuse another version's pins in one line, exit 2"

sluice_rx detach "$IF_RX" >/dev/null || fail "detach of another version's pins failed"
[[ ! -e $pins ]] || fail "pins left at $pins after detach: $(ls "$pins")"
ok "detach removes them"
sluice_attach >/dev/null
sluice_rx stats >/dev/null || fail "stats after a fresh attach failed"
ok "a fresh attach works"
