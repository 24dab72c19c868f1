#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# pkg/deb: `dpkg-buildpackage -us -uc -b` on a clean copy of the tree
# builds sluice_VERSION_ARCH.deb (VERSION the tree's, and debian/changelog's
# the same), lintian finds no error in it, and, extracted into a scratch
# root: every file doc/install.md lists is there, each /etc file is a
# conffile, the binary runs (--version, --help, policy check of the example
# policy it ships), every unit passes systemd-analyze verify in that root
# with the binary at the path the units name, and the maintainer scripts,
# run against stand-ins for systemctl, addgroup and adduser, create the
# group sluice, the system users sluice-exporter and sluice-check and the
# group sluice-check-clients when they are missing (and leave www-data out
# of it) and, on upgrade only, reload each running
# interface and restart the daemons, with nothing stopped before (prerm
# stops them all on removal); pkg/box_lifecycle runs them under systemd.
#
# usage: tests/pkg/deb.sh [TREE]
#   TREE  the source tree to build (default: the repository as it is now,
#         edits included); pass a broken copy to see the test fail.
# shellcheck disable=SC2015 # A && pass || fail: pass never fails
set -euo pipefail
# shellcheck source=tests/pkg/lib.sh
. "$(dirname "$0")/lib.sh"

pkg_init deb dpkg-buildpackage dh lintian fakeroot systemd-analyze unshare rst2man
SRC=$TMP/src
pkg_copy_tree "${1:-}" "$SRC"
echo "--- build"
pkg_build_deb "$SRC"

echo "--- lintian"
lintian "$DEB" >"$TMP/lintian.log" 2>&1 || true
grep -v '^running with root privileges' "$TMP/lintian.log" || true
if grep -q '^E:' "$TMP/lintian.log"; then fail "lintian reports errors"; else pass "lintian: no error"; fi

echo "--- contents"
PKG=$TMP/root
verify_root "$PKG"
dpkg -x "$DEB" "$PKG"
CTL=$TMP/control
dpkg -e "$DEB" "$CTL"
mapfile -t UNITS < <(pkg_units "$SRC")
mapfile -t CONFS < <(pkg_confs "$SRC")
mapfile -t SHARES < <(pkg_shares "$SRC")
((${#UNITS[@]} >= 4)) || fail "the tree has ${#UNITS[@]} units, not the 4 of doc/install.md"
files=(/usr/sbin/sluice /usr/share/man/man8/sluice.8.gz /usr/share/doc/sluice/copyright)
for u in "${UNITS[@]}"; do files+=("/lib/systemd/system/$u"); done
for f in "${CONFS[@]}"; do files+=("/etc/sluice/$f"); done
for f in "${SHARES[@]}"; do files+=("/usr/share/sluice/$f"); done
for f in "${files[@]}"; do
	[[ -s $PKG$f ]] && pass "$f" || fail "the package has no $f"
done
for f in "${CONFS[@]}"; do
	grep -qx "/etc/sluice/$f" "$CTL/conffiles" 2>/dev/null && pass "/etc/sluice/$f is a conffile" ||
		fail "/etc/sluice/$f is not in DEBIAN/conffiles"
done
for u in "${UNITS[@]}"; do
	wrong=$(unit_programs "$PKG/lib/systemd/system/$u" | grep '/sluice$' | grep -vx /usr/sbin/sluice | sort -u) || true
	[[ -z $wrong ]] && pass "$u runs /usr/sbin/sluice" || fail "$u runs $wrong"
done

echo "--- the binary"
BIN=$PKG/usr/sbin/sluice
[[ $("$BIN" --version) == "sluice $VERSION" ]] && pass "sluice --version: sluice $VERSION" ||
	fail "sluice --version says '$("$BIN" --version)'"
"$BIN" --help >/dev/null && pass "sluice --help" || fail "sluice --help failed"
"$BIN" policy check "$PKG/etc/sluice/example.policy" && pass "policy check of the example policy" ||
	fail "the shipped example policy does not check"
grep -q "sluice $VERSION" < <(zcat "$PKG/usr/share/man/man8/sluice.8.gz") &&
	pass "the manual page is of version $VERSION" || fail "the manual page does not say sluice $VERSION"

echo "--- units"
mapfile -t INSTANCES < <(unit_instances "${UNITS[@]}")
verify_units "$PKG" "$PKG/usr/share/man" "${INSTANCES[@]}"

echo "--- maintainer scripts"
# Stand-ins on PATH log each call; the real deb-systemd-invoke runs (it
# calls systemctl, the stand-in), with no policy-rc.d under its DPKG_ROOT.
# getent says every group and user is missing when $TMP/no-group exists;
# deb-systemd-helper, that no unit was enabled before.
STUBS=$TMP/stubs
LOG=$TMP/calls
mkdir -p "$STUBS" "$TMP/dpkgroot"
# sluice too: prerm remove detaches every interface with pins under
# /sys/fs/bpf/sluice, which are the host's here.
for s in systemctl addgroup adduser deb-systemd-helper sluice; do
	printf '#!/bin/sh\necho "%s $*" >>%s\n' "$s" "$LOG" >"$STUBS/$s"
done
echo 'exit 1' >>"$STUBS/deb-systemd-helper"
printf '#!/bin/sh\n[ -e %s ] && exit 2\necho "$2:x:999:"\n' "$TMP/no-group" >"$STUBS/getent"
chmod +x "$STUBS"/*

# run_script SYSTEMD SCRIPT ARGS...: SYSTEMD yes runs it in a mount
# namespace of its own with /run/systemd/system present, as on a host that
# booted with systemd (this one need not have).
run_script() {
	local systemd=$1 script=$2
	shift 2
	: >"$LOG"
	if [[ $systemd == yes ]]; then
		unshare -m sh -c 'mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/system && exec "$@"' \
			sh env PATH="$STUBS:$PATH" DPKG_ROOT="$TMP/dpkgroot" sh -e "$CTL/$script" "$@"
	else
		env PATH="$STUBS:$PATH" DPKG_ROOT="$TMP/dpkgroot" sh -e "$CTL/$script" "$@"
	fi
}
called() { grep -qxF -- "$1" "$LOG"; }

touch "$TMP/no-group"
run_script yes postinst configure || fail "postinst configure (a first install) failed"
called "addgroup --system sluice" && pass "a first install creates the group sluice" ||
	fail "postinst did not run 'addgroup --system sluice': $(cat "$LOG")"
for u in sluice-exporter sluice-check; do
	called "adduser --system --group --no-create-home --home /nonexistent --shell /usr/sbin/nologin $u" &&
		pass "a first install creates the system user $u" ||
		fail "postinst did not create the user $u: $(cat "$LOG")"
done
called "addgroup --system sluice-check-clients" &&
	pass "a first install creates the check server's socket group sluice-check-clients" ||
	fail "postinst did not create the group sluice-check-clients: $(cat "$LOG")"
! grep -q 'www-data' "$LOG" && pass "www-data (PHP-FPM's user too) is not added to it" ||
	fail "postinst touched www-data: $(cat "$LOG")"
! grep -qE 'systemctl (try-|stop|start|restart)' "$LOG" && pass "a first install starts nothing" ||
	fail "a first install touched units: $(cat "$LOG")"
rm "$TMP/no-group"
run_script yes postinst configure 0.0.1 || fail "postinst configure 0.0.1 (an upgrade) failed"
! grep -qE '^add(group|user)' "$LOG" && pass "existing groups and users are left alone" ||
	fail "postinst ran addgroup or adduser with them there: $(cat "$LOG")"
called "systemctl try-reload-or-restart sluice-attach@*.service" &&
	pass "an upgrade reloads each running sluice-attach@" ||
	fail "no try-reload-or-restart of sluice-attach@*.service: $(cat "$LOG")"
called "systemctl try-restart sluice-exporter.service sluice-check-server.service sluice-cluster@*.service" &&
	pass "an upgrade restarts the running exporter, check server and agents" ||
	fail "no try-restart of the daemons: $(cat "$LOG")"
awk '/daemon-reload/ { d = 1 } /try-reload/ { ok = d } END { exit !ok }' "$LOG" &&
	pass "daemon-reload before the reloads" || fail "no daemon-reload before the reloads: $(cat "$LOG")"
run_script no postinst configure 0.0.1 || fail "postinst without systemd failed"
! grep -q '^systemctl' "$LOG" && pass "without systemd, postinst calls no systemctl" ||
	fail "postinst called systemctl without systemd: $(cat "$LOG")"
run_script yes prerm remove || fail "prerm remove failed"
called "systemctl stop sluice-cluster@*.service sluice-check-server.service sluice-exporter.service" &&
	called "systemctl stop sluice-attach@*.service" &&
	awk '/stop sluice-cluster/ { d = 1 } /stop sluice-attach/ { ok = d } END { exit !ok }' "$LOG" &&
	pass "removal stops every unit, the daemons first, then each interface (detached) while the binary is there" ||
	fail "prerm remove did not stop the units: $(cat "$LOG")"
# debhelper's preinst acts only without DPKG_ROOT and policy-rc.d: read it.
! grep -qs 'deb-systemd-invoke stop' "$CTL/preinst" &&
	pass "an upgrade's preinst stops nothing (nothing would start a stopped daemon again)" ||
	fail "the preinst stops units on upgrade: $(grep 'deb-systemd-invoke stop' "$CTL/preinst")"
run_script yes prerm upgrade 0.1.1 || fail "prerm upgrade failed"
! grep -q 'systemctl stop' "$LOG" && pass "an upgrade's prerm stops nothing" ||
	fail "prerm upgrade stopped units: $(cat "$LOG")"

pkg_done
