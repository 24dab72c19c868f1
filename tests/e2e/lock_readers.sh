#!/usr/bin/env bash
# e2e/lock_readers: only writers may block writers. A process of uid nobody
# in the pins' group (a reader, as the exporter is) takes and holds every
# lock it can open under the pins (the pin root, the interface's directory)
# and tries the writers' lock itself, which it cannot open; meanwhile
# `limit set`, `ban add` and a re-attach each finish within seconds and
# take effect. The writers' lock still works between writers: held by
# root, it keeps `limit set` waiting until it is let go.
# Shown to fail against the build that locked the interface's directory
# (readable by the group): `limit set` hung behind the reader's lock.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

WAIT=5		# seconds an edit is given; it needs well under one
ATTACH_WAIT=120	# an attach verifies the program first: slow on a busy machine

netns_init lk
for cmd in setpriv flock timeout; do
	command -v "$cmd" >/dev/null || skip "$cmd not installed"
done
getent passwd nobody >/dev/null || skip "no user nobody"
netns_setup
sluice_attach >/dev/null
GROUP=$(stat -c %G "$SLUICE_PIN_ROOT/$IF_RX")
NOGROUP=$(id -gn nobody)
DIR=$SLUICE_PIN_ROOT/$IF_RX

# Holds an exclusive flock on PATH as nobody in the pins' group, until the
# cleanup stops it; prints "held" or "denied" into FILE.
hold_as_reader() { # PATH FILE
	setpriv --reuid nobody --regid "$NOGROUP" --groups "$GROUP" --inh-caps=-all \
		--bounding-set=-all bash -c '
			if ! { exec 9<"$1"; } 2>/dev/null; then echo denied; exit 3; fi
			flock -x -n 9 || { echo busy; exit 4; }
			echo held
			exec sleep 60' _ "$1" >"$2" 2>&1 &
	netns_track_pid $!
}

held() { # N: what holder N said, once it said it
	for _ in $(seq 50); do [[ -s $(netns_tmp "hold$1") ]] && break; sleep 0.1; done
	cat "$(netns_tmp "hold$1")"
}
hold_as_reader "$SLUICE_PIN_ROOT" "$(netns_tmp hold1)"
hold_as_reader "$DIR" "$(netns_tmp hold2)"
assert_eq "$(held 1)" held "a reader's lock on the pin root"
assert_eq "$(held 2)" held "a reader's lock on $IF_RX's pin directory"

# Each writer finishes while the reader holds on.
timed() { # WAIT WHAT CMD...
	local wait=$1 what=$2 t0 rc=0 out
	shift 2
	t0=$(now)
	out=$(timeout "$wait" "$@" 2>&1) || rc=$?
	[[ $rc != 124 ]] || fail "$what hung behind a reader's lock (killed after $wait s)"
	assert_eq "$rc" 0 "$what: exit code ($out)"
	assert_le "$(calc "$(now) - $t0" %.1f)" "$wait" "$what: seconds taken"
}
timed "$WAIT" "limit set" nsenter --net="/run/netns/$NS_RX" "$SLUICE" -i "$IF_RX" \
	limit set 198.18.5.0/24 --rate 10 --burst 5
timed "$WAIT" "ban add" nsenter --net="/run/netns/$NS_RX" "$SLUICE" -i "$IF_RX" ban add 198.18.6.6
timed "$ATTACH_WAIT" "a re-attach" nsenter --net="/run/netns/$NS_RX" "$SLUICE" -i "$IF_RX" \
	attach --mode native "$IF_RX"
sluice_rx policy show | grep -q '^limit set 198.18.5.0/24 ' ||
	fail "the rule is not in the live policy: $(sluice_rx policy show)"
sluice_rx ban list | grep -q '198.18.6.6' || fail "the ban is not listed: $(sluice_rx ban list)"
ok "limit set, ban add and a re-attach finish while a reader holds its locks"

[[ -d $DIR/lock ]] || fail "no writers' lock at $DIR/lock after attach"
assert_eq "$(stat -c '%a %U:%G' "$DIR/lock")" "700 root:root" "the writers' lock's owner and mode"
hold_as_reader "$DIR/lock" "$(netns_tmp hold3)"
assert_eq "$(held 3)" denied "a reader opening the writers' lock"
ok "a reader cannot open the writers' lock"

# Between writers the lock holds: root's flock keeps limit set waiting.
exec 8<"$DIR/lock"
flock -x 8
rc=0
timeout 2 nsenter --net="/run/netns/$NS_RX" "$SLUICE" -i "$IF_RX" \
	limit set 198.18.7.0/24 --rate 10 --burst 5 >/dev/null 2>&1 || rc=$?
assert_eq "$rc" 124 "limit set while a writer holds the lock (124: still waiting)"
exec 8<&-
timed "$WAIT" "limit set after the writer let go" nsenter --net="/run/netns/$NS_RX" "$SLUICE" \
	-i "$IF_RX" limit set 198.18.7.0/24 --rate 10 --burst 5
ok "a writer's lock still keeps other writers waiting"
