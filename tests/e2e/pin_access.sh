#!/usr/bin/env bash
# e2e/pin_access: the pins are root's and readable by one group. attach
# gives the pin root and the interface's directory 0750 root:GROUP, every
# map pin 0640 root:GROUP but the source table's seed's (0600 root:root:
# e2e/seed), the program pin 0600 root:root and the writers'
# lock (a directory) 0700 root:root, with GROUP
# 'sluice' (created if missing) or --group NAME. A process of uid nobody in
# that group can run the read-only commands (it opens the maps read-only)
# but cannot edit the policy or open a map read-write; without the group it
# cannot read at all. A re-attach re-applies the modes and a different
# --group moves the pins to it; an unknown --group is a usage error that
# changes nothing.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

netns_init pa
for cmd in setpriv groupadd groupdel stat bpftool; do
	command -v "$cmd" >/dev/null || skip "$cmd not installed"
done
getent passwd nobody >/dev/null || skip "no user nobody"
netns_setup

GROUP2=slpa$$
groupadd --system "$GROUP2" || fail "cannot create test group $GROUP2"
# The pin root is shared: never leave it with the group this test deletes.
pa_cleanup() {
	local rc=$?
	[[ $(stat -c %G "$SLUICE_PIN_ROOT" 2>/dev/null) == "$GROUP2" ]] && chgrp sluice "$SLUICE_PIN_ROOT"
	groupdel "$GROUP2" 2>/dev/null
	(exit "$rc")
	netns_cleanup
}
trap pa_cleanup EXIT
NOGROUP=$(id -gn nobody)
DIR=$SLUICE_PIN_ROOT/$IF_RX

check_modes() { # GROUP WHAT
	local group=$1 what=$2 f
	assert_eq "$(stat -c '%a %U:%G' "$SLUICE_PIN_ROOT")" "750 root:$group" "$what: pin root"
	assert_eq "$(stat -c '%a %U:%G' "$DIR")" "750 root:$group" "$what: $IF_RX's directory"
	assert_eq "$(stat -c '%a %U:%G' "$DIR/prog")" "600 root:root" "$what: program pin"
	assert_eq "$(stat -c '%a %U:%G' "$DIR/lock")" "700 root:root" "$what: writers' lock"
	assert_eq "$(stat -c '%a %U:%G' "$DIR/src_seed")" "600 root:root" "$what: the table's seed"
	for f in "$DIR"/*; do
		[[ $f == */prog || $f == */lock || $f == */src_seed ]] && continue
		assert_eq "$(stat -c '%a %U:%G' "$f")" "640 root:$group" "$what: map pin ${f##*/}"
	done
	assert_eq "$(sluice_jq '.interfaces[0].group' status)" "$group" "$what: status -j group"
}

check_readers() { # GROUP WHAT
	local group=$1 what=$2 rc out def
	# Read-only commands work for a member of the group ...
	out=$(as_nobody "$group" "$SLUICE" -i "$IF_RX" -j limit list) ||
		fail "$what: limit list as nobody in $group failed"
	assert_eq "$(jq -c '.[] | select(.cidr == "default") | [.rate, .burst]' <<<"$out")" "[33,44]" \
		"$what: limit list as nobody in group $group"
	as_nobody "$group" "$SLUICE" -i "$IF_RX" -j stats | jq -e '.packets.pass' >/dev/null ||
		fail "$what: stats as nobody in $group failed"
	ok "$what: stats as nobody in group $group"
	# ... but editing does not, and changes nothing ...
	rc=0
	out=$(as_nobody "$group" "$SLUICE" -i "$IF_RX" limit default --rate 5 2>&1) || rc=$?
	assert_eq "$rc" 1 "$what: limit default as nobody in $group: exit code ($out)"
	def=$(sluice_jq '.[] | select(.cidr == "default") | [.rate, .burst] | tostring' limit list)
	assert_eq "$def" "[33,44]" "$what: policy after the refused edit"
	# ... nor opening a map read-write (bpftool opens pins read-write).
	! as_nobody "$group" bpftool map show pinned "$DIR/config" >/dev/null 2>&1 ||
		fail "$what: nobody in $group opened $DIR/config read-write"
	ok "$what: nobody in group $group cannot open a map pin read-write"
	# Without the group: no reading either.
	! as_nobody "$NOGROUP" "$SLUICE" -i "$IF_RX" -j limit list >/dev/null 2>&1 ||
		fail "$what: nobody without $group read the policy"
	ok "$what: nobody without group $group cannot read"
}

sluice_attach >/dev/null
getent group sluice >/dev/null || fail "attach did not create group sluice"
ok "group sluice exists: $(getent group sluice)"
sluice_rx limit default --rate 33 --burst 44 >/dev/null
check_modes sluice "attach"
check_readers sluice "attach"

# A different --group on re-attach moves the pins to it.
sluice_attach --group "$GROUP2" >/dev/null
check_modes "$GROUP2" "re-attach --group $GROUP2"
check_readers "$GROUP2" "re-attach --group $GROUP2"
! as_nobody sluice "$SLUICE" -i "$IF_RX" -j limit list >/dev/null 2>&1 ||
	fail "nobody in sluice still reads after the pins moved to $GROUP2"
ok "nobody in group sluice no longer reads"

# Modes drifted by hand are put back by a re-attach (default group again).
chmod 0666 "$DIR/config"
chmod 0644 "$DIR/src_seed"
chmod 0755 "$DIR"
sluice_attach >/dev/null
check_modes sluice "re-attach after chmod"

# An unknown --group: usage error, one line, nothing changed.
before=$(stat -c '%n %a %U:%G' "$SLUICE_PIN_ROOT" "$DIR" "$DIR"/*)
prog=$(sluice_jq '.interfaces[0].prog_id' status)
rc=0
err=$(sluice_rx attach --mode native --group "nosuch$$" "$IF_RX" 2>&1 >/dev/null) || rc=$?
assert_eq "$rc" 2 "attach --group nosuch$$: exit code"
assert_eq "$(wc -l <<<"$err")" 1 "attach --group nosuch$$: lines of error"
[[ $err == "sluice: no group 'nosuch$$'"* ]] || fail "attach --group nosuch$$ said: $err"
ok "error: $err"
assert_eq "$(stat -c '%n %a %U:%G' "$SLUICE_PIN_ROOT" "$DIR" "$DIR"/*)" "$before" \
	"pins after the refused attach"
assert_eq "$(sluice_jq '.interfaces[0].prog_id' status)" "$prog" "program after the refused attach"
