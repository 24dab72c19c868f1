#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# pkg/install: `make install` into a DESTDIR, for PREFIX=/usr, /opt/sluice
# and the default /usr/local, from a clean copy of the tree (built once):
# every file where doc/install.md says, the units' programs at the
# installed binary's path and nothing left of their templates, every unit
# passing systemd-analyze verify inside the DESTDIR, settings already there
# kept by a second install, and `make uninstall` leaving only them.
#
# usage: tests/pkg/install.sh [TREE]
#   TREE  the source tree to install from (default: the repository as it is
#         now); pass a broken copy to see the test fail.
# shellcheck disable=SC2015 # A && pass || fail: pass never fails
set -euo pipefail
# shellcheck source=tests/pkg/lib.sh
. "$(dirname "$0")/lib.sh"

pkg_init install make systemd-analyze rst2man
SRC=$TMP/src
pkg_copy_tree "${1:-}" "$SRC"
make -C "$SRC" -s -j2 all >"$TMP/build.log" 2>&1 || { tail -20 "$TMP/build.log"; die "make all failed"; }
mapfile -t UNITS < <(pkg_units "$SRC")
mapfile -t CONFS < <(pkg_confs "$SRC")
mapfile -t SHARES < <(pkg_shares "$SRC")
((${#UNITS[@]} >= 4)) || fail "the tree has ${#UNITS[@]} units, not the 4 of doc/install.md"

# check_layout DEST SBINDIR MANDIR DATADIR UNITDIR: what install put there.
check_layout() {
	local d=$1 sbin=$2 man=$3 data=$4 unitdir=$5 f u wrong
	[[ -x $d$sbin/sluice ]] && pass "$sbin/sluice" || fail "no $sbin/sluice"
	[[ -s $d$man/man8/sluice.8 ]] && pass "$man/man8/sluice.8" || fail "no $man/man8/sluice.8"
	[[ $("$d$sbin/sluice" --version) == "sluice $(cat "$SRC/VERSION")" ]] &&
		pass "sluice --version says $(cat "$SRC/VERSION")" || fail "sluice --version: wrong version"
	for f in "${CONFS[@]}"; do
		[[ -s $d/etc/sluice/$f ]] && pass "/etc/sluice/$f" || fail "no /etc/sluice/$f"
	done
	for f in "${SHARES[@]}"; do
		[[ -s $d$data/$f ]] && pass "$data/$f" || fail "no $data/$f"
	done
	for u in "${UNITS[@]}"; do
		f=$d$unitdir/$u
		[[ -s $f ]] || { fail "no $unitdir/$u"; continue; }
		! grep -nE '@[A-Z_]+@' "$f" || fail "$u: a template word left"
		wrong=$(unit_programs "$f" | grep '/sluice$' | grep -vxF "$sbin/sluice" | sort -u) || true
		if [[ -n $wrong ]]; then
			fail "$u runs $wrong, not $sbin/sluice"
		elif ! grep -q "^ExecStart=$sbin/sluice " "$f"; then
			fail "$u: no ExecStart=$sbin/sluice"
		else
			pass "$unitdir/$u runs $sbin/sluice"
		fi
	done
	# Nothing else: a file the lists above do not know is a file doc/install.md does not list.
	if find "$d" -type f | sed "s|^$d||" |
		grep -vE "^($sbin/sluice|$man/man8/sluice\.8|/etc/sluice/[^/]+|$data/[^/]+|$unitdir/sluice-[^/]+\.service)$" |
		sed 's/^/unexpected file: /' | grep .; then
		fail "install put files no list names"
	fi
}

# install_at NAME MAKEARGS...: make install into a fresh DESTDIR $TMP/NAME.
install_at() {
	local d=$TMP/$1
	shift
	make -C "$SRC" -s install DESTDIR="$d" "$@" >"$TMP/install.log" 2>&1 ||
		{ cat "$TMP/install.log"; die "make install $* failed"; }
}

# verify_at NAME MANDIR [LINKDIR]: the units of $TMP/NAME verified in a root
# of their own ($TMP/NAME.root: the host's units and programs, then the
# DESTDIR on top); with LINKDIR, they are linked from there into
# /etc/systemd/system first, as `systemctl link` does (relative links: the
# verify resolves an absolute one on the host, not in the root).
verify_at() {
	local r=$TMP/$1.root man=$2 link=${3:-} u
	verify_root "$r"
	cp -a "$TMP/$1/." "$r/"
	if [[ -n $link ]]; then
		for u in "${UNITS[@]}"; do ln -s "../../..$link/$u" "$r/etc/systemd/system/$u"; done
	fi
	verify_units "$r" "$r$man" "${INSTANCES[@]}"
}

mapfile -t INSTANCES < <(unit_instances "${UNITS[@]}")

echo "--- PREFIX=/usr"
install_at usr PREFIX=/usr
check_layout "$TMP/usr" /usr/sbin /usr/share/man /usr/share/sluice /lib/systemd/system
verify_at usr /usr/share/man

echo "--- PREFIX=/opt/sluice"
install_at opt PREFIX=/opt/sluice
check_layout "$TMP/opt" /opt/sluice/sbin /opt/sluice/share/man /opt/sluice/share/sluice \
	/opt/sluice/lib/systemd/system
# systemd does not look under /opt: doc/install.md links the units.
verify_at opt /opt/sluice/share/man /opt/sluice/lib/systemd/system

echo "--- PREFIX unset (/usr/local)"
install_at local
check_layout "$TMP/local" /usr/local/sbin /usr/local/share/man /usr/local/share/sluice \
	/usr/local/lib/systemd/system
verify_at local /usr/local/share/man

echo "--- settings kept, uninstall"
echo '# edited' >>"$TMP/usr/etc/sluice/exporter.env"
make -C "$SRC" -s install DESTDIR="$TMP/usr" PREFIX=/usr >"$TMP/install.log" 2>&1 || die "second make install failed"
grep -qx '# edited' "$TMP/usr/etc/sluice/exporter.env" &&
	pass "a second install keeps /etc/sluice/exporter.env as edited" ||
	fail "a second install overwrote the edited /etc/sluice/exporter.env"
make -C "$SRC" -s uninstall DESTDIR="$TMP/usr" PREFIX=/usr >"$TMP/uninstall.log" 2>&1 || die "make uninstall failed"
left=$(cd "$TMP/usr" && find . -type f ! -path './etc/sluice/*' | sort)
[[ -z $left ]] && pass "uninstall removed everything but /etc/sluice" || fail "uninstall left: $left"
[[ -d $TMP/usr/etc/sluice && ! -e $TMP/usr/usr/share/sluice ]] &&
	pass "uninstall kept /etc/sluice, removed /usr/share/sluice" || fail "uninstall: wrong directories left"

pkg_done
