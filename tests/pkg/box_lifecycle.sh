#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# pkg/box_lifecycle: the package's whole life under a real systemd, in one
# boot of systemd-box (this machine's Debian in a container, its own
# network namespace, the host's bpffs), with one build of the .deb:
#   install   the units are there and none is started; sluice-attach@ on a
#             veth of the box, the exporter, the check server and the
#             cluster agent (on the box's Redis, set up as doc/cluster.md's
#             Production setup says: ACL user, password file, settings
#             file) start: active, READY and STATUS= seen by systemd, no
#             restart;
#   journald  attach's line, each daemon's start line and a ban's line carry
#             the priorities of doc/logging.md (PRIORITY of journalctl -o json);
#   sandbox   systemd-analyze security scores every unit at or below the
#             exporter's (the scores are printed);
#   watchdog  a SIGSTOPped exporter and check server are killed and
#             restarted by systemd (a drop-in shortens WatchdogSec);
#   upgrade   dpkg -i of the same package with a higher version, everything
#             running: every daemon still runs, restarted onto the new
#             binary, the interface still attached with a source's state
#             (query -j: its bucket and counters) and a ban kept, a stopped
#             unit still stopped;
#   remove    no XDP program left on any interface, one attached by hand
#             included, and dpkg says which it detached;
#   purge     nothing of sluice on disk: none of the package's files,
#             /etc/sluice, unit links or drop-ins under /etc/systemd, the
#             deb-systemd-helper state.
#
# usage: tests/pkg/box_lifecycle.sh [TREE]
#   TREE  the source tree to build (default: the repository as it is now);
#         pass a copy of an older tree to see the test fail.
# Skips (77) where systemd-box or systemd-nspawn is missing or cannot boot.
# shellcheck disable=SC2015 # A && pass || fail: pass never fails
set -euo pipefail
# shellcheck source=tests/pkg/lib.sh
. "$(dirname "$0")/lib.sh"

BOXT=$ROOT/../shared/tools/systemd-box
[[ -x $BOXT ]] || BOXT=/work/shared/tools/systemd-box
[[ -x $BOXT ]] || skip "no systemd-box (../shared/tools/systemd-box)"
command -v systemd-nspawn >/dev/null || skip "no systemd-nspawn (tools/install-deps.sh: systemd-container)"
[[ $(id -u) -eq 0 ]] || skip "systemd-box needs root"
pkg_init box_lifecycle dpkg-buildpackage dh fakeroot rst2man dpkg-deb

BOX=slbox$$
IF=sb$$a        # sluice-attach@ on it; its peer in a namespace of the box
PEER=sb$$b
HAND=sb$$c      # attached by hand, no unit
HANDPEER=sb$$d
NS=sbns$$
SRC_IP=198.18.0.2
cleanup() {
	"$BOXT" stop "$BOX" >/dev/null 2>&1 || true
	# The box's bpffs is the host's: pins a failed test left behind.
	rm -rf "/sys/fs/bpf/sluice/$IF" "/sys/fs/bpf/sluice/$HAND"
	rm -rf "$TMP"
}
trap cleanup EXIT

echo "--- build"
SRC=$TMP/src
pkg_copy_tree "${1:-}" "$SRC"
pkg_build_deb "$SRC"
# The upgrade: the same package under a higher version (what changes on
# disk is every file, as from any new version; the build is not repeated).
UP=$TMP/up
dpkg-deb -R "$DEB" "$UP"
sed -i "s/^Version: .*/Version: $VERSION+box1/" "$UP/DEBIAN/control"
DEB2=$TMP/sluice_${VERSION}+box1.deb
dpkg-deb -b "$UP" "$DEB2" >/dev/null
pass "repacked as $VERSION+box1"

echo "--- boot"
"$BOXT" start "$BOX" --bind "$TMP" >"$TMP/box.log" 2>&1 ||
	skip "systemd-box cannot boot here: $(tail -1 "$TMP/box.log")"
bx() { "$BOXT" run "$BOX" "$@"; }
# prop UNIT PROP: one property's value
prop() { bx systemctl show -P "$2" "$1"; }
# wait_for SECONDS CMD...: until CMD succeeds (a wide margin, not a timing)
wait_for() {
	local n=$(($1 * 5))
	shift
	while ((n-- > 0)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	return 1
}
DAEMONS=(sluice-exporter.service sluice-check-server.service "sluice-cluster@$IF.service")

echo "--- install"
bx dpkg -i "$DEB" >"$TMP/install.log" 2>&1 || { cat "$TMP/install.log"; die "dpkg -i failed"; }
units=$(bx systemctl list-unit-files --no-legend 'sluice-*' | awk '{print $1}' | sort | tr '\n' ' ')
[[ $units == "sluice-attach@.service sluice-check-server.service sluice-cluster@.service sluice-exporter.service " ]] &&
	pass "units installed: $units" || fail "units installed: $units"
running=$(bx systemctl list-units --no-legend --state=active,activating 'sluice-*')
[[ -z $running ]] && pass "none is started" || fail "started by installing: $running"

# The interface: a veth of the box, its peer in a namespace of the box.
bx sh -ec "ip netns add $NS
	ip link add $IF type veth peer name $PEER
	ip link add $HAND type veth peer name $HANDPEER
	ip link set $PEER netns $NS
	ip addr add 198.18.0.1/24 dev $IF; ip link set $IF up; ip link set $HAND up
	ip -n $NS addr add $SRC_IP/24 dev $PEER; ip -n $NS link set $PEER up; ip -n $NS link set lo up
	ip link set $HANDPEER up
	printf '%s\n' 'limit default --rate 200 --burst 400' \
		'limit set 198.18.0.0/24 --rate 1000 --burst 2000 --cluster' >/etc/sluice/$IF.policy
	echo 'SLUICE_CHECK_OPTS=\"-i $IF\"' >>/etc/sluice/check-server.env"
# The cluster agent as doc/cluster.md's Production setup writes it: its
# ACL user (step 1's line, as written) on the box's Redis, the password
# file (step 3's commands, as written) and the unit's settings file (step
# 4's form, the box's Redis without TLS); PASSWORD replaced by a test one.
DOC=$ROOT/doc/cluster.md
PW=box-$$-password
acl=$(grep -m1 '^ACL SETUSER sluice ' "$DOC") || fail "no 'ACL SETUSER sluice' line in $DOC"
pwcmds=$(awk '/^\*\*3\. The password file\*\*/ { on = 1 } on && /^```$/ { n++; next }
	on && n == 1 { print } n == 2 { exit }' "$DOC")
[[ $pwcmds == *redis-password* ]] || fail "no password file commands under step 3 of $DOC"
wait_for 30 bx redis-cli PING >/dev/null || fail "the box's redis-server does not answer"
# shellcheck disable=SC2086 # the ACL line: one word each, as redis-cli takes it
[[ $(bx redis-cli ${acl//>PASSWORD/>$PW}) == OK ]] || fail "ACL SETUSER from $DOC refused"
bx sh -ec "${pwcmds//PASSWORD/$PW}"
bx sh -ec "printf '%s\n' 'SLUICE_REDIS=redis://sluice@127.0.0.1:6379/0' \
	'SLUICE_JOIN_OPTS=--node box1 --redis-password-file /etc/sluice/redis-password' \
	>/etc/sluice/$IF.cluster.env"
# The box has no udev (its /sys is read-only), so systemd supports no
# .device unit there and a BindsTo= one fails at once: a runtime copy of
# the installed unit without the interface's device (nothing else differs).
bx sh -ec "sed '/sys-subsystem-net-devices/d' /lib/systemd/system/sluice-attach@.service \
	>/run/systemd/system/sluice-attach@.service; systemctl daemon-reload"
# The interface first: the servers need it attached (at boot, attach runs
# before network-pre.target, they after network.target).
for u in "sluice-attach@$IF.service" "${DAEMONS[*]}"; do
	# shellcheck disable=SC2086 # the daemons: one word each
	bx systemctl enable --now $u >"$TMP/enable.log" 2>&1 || fail "enable --now $u failed: $(cat "$TMP/enable.log")"
done
for u in "sluice-attach@$IF.service" "${DAEMONS[@]}"; do
	wait_for 60 bx systemctl is-active -q "$u" && pass "$u active" ||
		fail "$u is $(prop "$u" ActiveState): $(bx journalctl -n 5 --no-pager -u "$u")"
done
for u in "${DAEMONS[@]}"; do
	# Type=notify: active only once READY=1 came.
	[[ $(prop "$u" Type) == notify ]] || fail "$u is not Type=notify"
	wait_for 30 test -n "$(prop "$u" StatusText)" || true
	st=$(prop "$u" StatusText)
	[[ -n $st ]] && pass "$u READY, STATUS: $st" || fail "$u: no STATUS= seen by systemd"
	[[ $(prop "$u" NRestarts) == 0 ]] && pass "$u: NRestarts=0" || fail "$u restarted $(prop "$u" NRestarts) times"
done
bx ip link show "$IF" | grep -q 'xdp' && pass "$IF has an XDP program" || fail "no XDP program on $IF"

# A tracked source with state to keep: a few pings from the peer.
bx ip netns exec "$NS" bash -c 'for i in 1 2 3 4 5; do echo x >/dev/udp/198.18.0.1/9; sleep 0.2; done' ||
	fail "UDP through $IF failed"
# Its state, what must survive an upgrade: its bucket and its counters
# (not its tokens, which refill, nor the cluster agent's share of them).
query() {
	bx sluice -i "$IF" -j query "$SRC_IP" | jq -c '{tracked, bucket, passed, dropped, would_drop, error}'
}
before=$(query) || fail "query $SRC_IP failed"
grep -q '"tracked":true.*"passed":[1-9]' <<<"$before" && pass "$SRC_IP tracked: $before" ||
	fail "$SRC_IP not tracked: $before"

echo "--- journald"
bx systemd-run --wait --quiet -u "sluice-test-ban$$" sluice -i "$IF" ban add 198.18.0.77 --for 1h ||
	fail "ban add in a unit failed"
# prio UNIT REGEX: the PRIORITY of UNIT's first journal line matching REGEX
prio() {
	bx journalctl -o json --no-pager -u "$1" | jq -r --arg re "$2" \
		'select(.MESSAGE | type == "string" and test($re)) | .PRIORITY' | head -1
}
# doc/logging.md: a change (attach, an agent up, a ban) is a notice, a server serving is info.
check_prio() {
	local unit=$1 re=$2 want=$3 got
	got=$(prio "$unit" "$re")
	[[ $got == "$want" ]] && pass "$unit: '$re' logged at priority $want" ||
		fail "$unit: '$re' at priority '${got:-none}', doc/logging.md says $want"
}
check_prio "sluice-attach@$IF.service" "$IF: attached in" 5
check_prio sluice-exporter.service "sluice exporter .*: serving" 6
check_prio sluice-check-server.service "sluice check-server .*: serving" 6
check_prio "sluice-cluster@$IF.service" "cluster: $IF: up" 5
[[ $(bx redis-cli CLIENT LIST | grep -c ' user=sluice ') -ge 1 ]] &&
	pass "sluice-cluster@$IF.service is connected as doc/cluster.md's ACL user, its password from the file" ||
	fail "no connection of user sluice on the box's Redis: $(bx redis-cli CLIENT LIST)"
check_prio "sluice-test-ban$$.service" "$IF: ban added: 198.18.0.77" 5

echo "--- systemd-analyze security"
declare -A score
for u in sluice-exporter.service sluice-check-server.service "sluice-cluster@$IF.service" "sluice-attach@$IF.service"; do
	score[$u]=$(bx systemd-analyze security --no-pager "$u" | sed -nE 's/.*Overall exposure level for .*: ([0-9.]+) .*/\1/p')
	echo "score: $u ${score[$u]}"
done
ref=${score[sluice-exporter.service]}
for u in "${!score[@]}"; do
	awk -v a="${score[$u]}" -v b="$ref" 'BEGIN { exit !(a != "" && a <= b) }' &&
		pass "$u: ${score[$u]}, at most the exporter's $ref" ||
		fail "$u: exposure ${score[$u]}, above the exporter's $ref"
done

echo "--- watchdog"
for u in sluice-exporter.service sluice-check-server.service; do
	bx sh -ec "mkdir -p /run/systemd/system/$u.d
		printf '[Service]\nWatchdogSec=3s\n' >/run/systemd/system/$u.d/test-watchdog.conf"
done
bx systemctl daemon-reload
bx systemctl restart sluice-exporter.service sluice-check-server.service
declare -A stopped
for u in sluice-exporter.service sluice-check-server.service; do
	wait_for 60 bx systemctl is-active -q "$u" || fail "$u not active after its restart"
	stopped[$u]=$(prop "$u" MainPID)
	bx kill -STOP "${stopped[$u]}"
done
restarted() { # UNIT OLDPID: restarted by systemd, running again
	[[ $(prop "$1" NRestarts) -ge 1 && $(prop "$1" MainPID) != "$2" && $(prop "$1" MainPID) != 0 ]] &&
		bx systemctl is-active -q "$1"
}
for u in sluice-exporter.service sluice-check-server.service; do
	if wait_for 90 restarted "$u" "${stopped[$u]}"; then
		pass "$u: SIGSTOPped, killed by the watchdog and restarted ($(prop "$u" NRestarts) restart)"
	else
		fail "$u: not restarted after SIGSTOP (NRestarts $(prop "$u" NRestarts), MainPID $(prop "$u" MainPID))"
	fi
	bx journalctl --no-pager -u "$u" | grep -q 'Watchdog timeout' && pass "$u: systemd says 'Watchdog timeout'" ||
		fail "$u: no watchdog timeout in the journal"
	bx rm -rf "/run/systemd/system/$u.d"
done
bx systemctl daemon-reload
bx systemctl restart sluice-exporter.service sluice-check-server.service

echo "--- upgrade"
wait_for 60 bx systemctl is-active -q sluice-exporter.service sluice-check-server.service || true
declare -A pid
for u in "${DAEMONS[@]}"; do pid[$u]=$(prop "$u" MainPID); done
bx sh -c "dpkg -i $DEB2" >"$TMP/upgrade.log" 2>&1 || { cat "$TMP/upgrade.log"; fail "dpkg -i (upgrade) failed"; }
# shellcheck disable=SC2016 # dpkg-query's format
[[ $(bx dpkg-query -W -f '${Version}' sluice) == "$VERSION+box1" ]] && pass "upgraded to $VERSION+box1" ||
	fail "not upgraded"
for u in "${DAEMONS[@]}"; do
	if ! wait_for 60 bx systemctl is-active -q "$u"; then
		fail "$u is $(prop "$u" ActiveState) after the upgrade (was running)"
		continue
	fi
	p=$(prop "$u" MainPID)
	exe=$(bx readlink "/proc/$p/exe")
	[[ $p != "${pid[$u]}" && $exe == /usr/sbin/sluice ]] &&
		pass "$u still running, restarted onto the new binary (pid ${pid[$u]} -> $p, $exe)" ||
		fail "$u: pid ${pid[$u]} -> $p, exe '$exe'"
done
bx systemctl is-active -q "sluice-attach@$IF.service" && pass "sluice-attach@$IF still active" ||
	fail "sluice-attach@$IF is $(prop "sluice-attach@$IF.service" ActiveState) after the upgrade"
bx ip link show "$IF" | grep -q 'xdp' && pass "$IF still has its XDP program" || fail "no XDP program on $IF after the upgrade"
after=$(query) || fail "query after the upgrade failed"
[[ $after == "$before" ]] && pass "$SRC_IP's state kept across the upgrade: $after" ||
	fail "$SRC_IP's state changed: before $before; after $after"
bx sluice -i "$IF" ban list | grep -q '198\.18\.0\.77' && pass "the ban of 198.18.0.77 kept" ||
	fail "the ban of 198.18.0.77 is gone after the upgrade"
# A stopped daemon stays stopped.
bx systemctl stop sluice-check-server.service
bx dpkg -i "$DEB2" >"$TMP/reinstall.log" 2>&1 || fail "dpkg -i (again) failed: $(cat "$TMP/reinstall.log")"
state=$(prop sluice-check-server.service ActiveState)
[[ $state == inactive ]] && pass "a stopped check server stays stopped across an upgrade" ||
	fail "the stopped check server is $state after an upgrade"

echo "--- remove"
bx sluice attach "$HAND" >/dev/null 2>&1 || fail "attach $HAND by hand failed"
bx ip link show "$HAND" | grep -q 'xdp' || fail "no XDP program on $HAND after attach"
bx dpkg-query -L sluice | sort >"$TMP/files"
bx dpkg -r sluice >"$TMP/remove.log" 2>&1 || { cat "$TMP/remove.log"; fail "dpkg -r failed"; }
cat "$TMP/remove.log"
left=$(bx sh -c 'ip -o link show; ip -n '"$NS"' -o link show' | grep -E 'xdp|prog/xdp' || true)
[[ -z $left ]] && pass "no XDP program left on any interface" || fail "XDP programs left after remove: $left"
[[ ! -e /sys/fs/bpf/sluice/$IF && ! -e /sys/fs/bpf/sluice/$HAND ]] && pass "no pins left" ||
	fail "pins left: $(ls /sys/fs/bpf/sluice)"
grep -q "$HAND" "$TMP/remove.log" && pass "dpkg -r says it detached $HAND" ||
	fail "dpkg -r said nothing of $HAND"

echo "--- purge"
bx rm -f /run/systemd/system/sluice-attach@.service
bx dpkg -P sluice >"$TMP/purge.log" 2>&1 || { cat "$TMP/purge.log"; fail "dpkg -P failed"; }
# shellcheck disable=SC2016 # expanded in the box
left=$(bx sh -c 'while read -r f; do case $f in *sluice*) [ -e "$f" ] && echo "$f";; esac; done' <"$TMP/files" || true)
[[ -z $left ]] && pass "none of the package's files left" || fail "left after purge: $left"
left=$(bx sh -c "ls -d /etc/sluice 2>/dev/null; find /etc/systemd /var/lib/systemd/deb-systemd-helper-enabled \
	/var/lib/systemd/deb-systemd-helper-masked -name '*sluice*' 2>/dev/null" || true)
[[ -z $left ]] && pass "no /etc/sluice, no unit links or state left" || fail "left after purge: $left"

pkg_done
