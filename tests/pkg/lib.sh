# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Helpers of the pkg suite: a scratch directory, a clean copy of the source
# tree, the files a package or `make install` must hold, and
# `systemd-analyze verify` of installed units inside a scratch root.
#
# Source it under set -euo pipefail, then:
#   pkg_init NAME           # $TMP (removed on exit), checks, fails counted
#   pkg_copy_tree [TREE] DIR  # TREE (default: the repository's tracked and
#                           # untracked-but-not-ignored files, as they are
#                           # now, edits included) copied to DIR
#   pkg_build_deb SRC       # the .deb of the copy SRC: $DEB, $VERSION
#   pkg_units, pkg_confs, pkg_shares TREE   # the names a tree installs
#   verify_root ROOT        # ROOT made ready for systemd-analyze --root
#   verify_units ROOT MANDIR UNIT...   # each UNIT verified in ROOT
#   pass MSG, fail MSG, pkg_done   # checks; pkg_done exits 1 if any failed

ROOT=${SLUICE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
fails=0

pass() { echo "ok: $*"; }
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}
die() {
	echo "FAIL: $*"
	exit 1
}
skip() {
	echo "SKIP: $*"
	exit 77
}

pkg_init() {
	local name=$1 tool
	shift
	for tool in "$@"; do
		command -v "$tool" >/dev/null || skip "no $tool (tools/install-deps.sh)"
	done
	# Run from `make test`, a make of ours must not join that one's jobs.
	unset MAKEFLAGS MFLAGS MAKELEVEL
	TMP=$(mktemp -d "/tmp/sluice-pkg-$name.XXXXXX") || die "cannot make a scratch directory"
	# shellcheck disable=SC2064 # $TMP is fixed now
	trap "rm -rf '$TMP'" EXIT
}

pkg_copy_tree() {
	local tree=${1:-} dir=$2
	mkdir -p "$dir"
	if [[ -n $tree ]]; then
		tar -C "$tree" --exclude=./build --exclude=./.git -cf - . | tar -C "$dir" -xf -
		return
	fi
	# Files deleted but not yet committed are skipped.
	git -C "$ROOT" ls-files -z -co --exclude-standard |
		(cd "$ROOT" && while IFS= read -r -d '' f; do [[ -e $f ]] && printf '%s\0' "$f"; done) |
		tar -C "$ROOT" --null -T - -cf - | tar -C "$dir" -xf -
}

# pkg_build_deb SRC: `dpkg-buildpackage -us -uc -b` in SRC (a copy in
# $TMP: the package and its .changes land in its parent); sets VERSION (the
# tree's), and DEB, the package built. Checks debian/changelog's version.
pkg_build_deb() {
	local src=$1 deb_version
	VERSION=$(cat "$src/VERSION")
	DEB=$(dirname "$src")/sluice_${VERSION}_$(dpkg --print-architecture).deb
	deb_version=$(cd "$src" && dpkg-parsechangelog -S Version)
	# shellcheck disable=SC2015 # A && pass || fail: pass never fails
	[[ $deb_version == "$VERSION" ]] && pass "debian/changelog is version $VERSION, as VERSION" ||
		fail "debian/changelog says $deb_version, VERSION $VERSION"
	(cd "$src" && dpkg-buildpackage -us -uc -b) >"$TMP/build.log" 2>&1 ||
		{ tail -30 "$TMP/build.log"; die "dpkg-buildpackage failed (log above)"; }
	[[ -s $DEB ]] || die "no $(basename "$DEB"): $(ls "$(dirname "$src")")"
	pass "built $(basename "$DEB")"
}

# What a tree installs: its units (contrib/systemd/*.service.in), its
# settings (contrib/etc/*) and its shared files (the dashboard, and the
# alert rules when the tree has them), one name a line.
pkg_units() {
	local f
	for f in "$1"/contrib/systemd/*.service.in; do basename "$f" .in; done
}
pkg_confs() {
	local f
	for f in "$1"/contrib/etc/*; do basename "$f"; done
}
pkg_shares() {
	local f
	echo sluice-dashboard.json
	for f in "$1"/contrib/prometheus/*.yml; do [[ -e $f ]] && basename "$f"; done
	return 0
}

# systemd-analyze verify --root=ROOT resolves every path inside ROOT: the
# targets and slices the units name, /bin/sh and groupadd of their
# ExecStartPre lines, and sluice itself, at the path the unit names, as
# installed there. The host's own units (but any sluice-* of its own) and
# those two programs are copied in first; install what is under test after.
verify_root() {
	local r=$1
	mkdir -p "$r/lib/systemd/system" "$r/etc/systemd/system"
	cp -a /lib/systemd/system/. "$r/lib/systemd/system/"
	rm -rf "$r"/lib/systemd/system/sluice[-@]*
	install -D /bin/sh "$r/bin/sh"
	install -D /usr/sbin/groupadd "$r/usr/sbin/groupadd"
}

# Each UNIT (instances for templates: sluice-attach@eth0.service) loaded
# from ROOT's unit directories; Documentation=man:sluice(8) is looked up in
# MANDIR (ROOT's). Any output is a finding.
verify_units() {
	local r=$1 man=$2 u out
	shift 2
	for u in "$@"; do
		if out=$(MANPATH=$man systemd-analyze verify --root="$r" "$u" 2>&1) && [[ -z $out ]]; then
			pass "systemd-analyze verify $u"
		else
			fail "systemd-analyze verify $u: ${out:-failed}"
		fi
	done
}

# The units' instances to verify: templates as IFACE eth0.
unit_instances() {
	local u
	for u in "$@"; do echo "${u/@./@eth0.}"; done
}

# The programs of every Exec*= line of a unit file, without systemd's
# prefixes (-, +, !, @, :).
unit_programs() {
	sed -nE 's/^Exec[A-Za-z]+=[-+!@:]*([^ ]+).*/\1/p' "$1"
}

pkg_done() {
	if ((fails)); then
		echo "$fails check(s) failed"
		exit 1
	fi
	echo "all checks passed"
}
