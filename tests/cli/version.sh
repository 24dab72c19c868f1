#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# cli/version: the version a build says. From a git checkout it names the
# commit, VERSION+git.SHORT, and .dirty while tracked files differ from it;
# from a tree without a .git of its own (a release tarball, the Debian
# package's clean copy) it is VERSION alone. Checked on build/sluice (and
# `version -j`) against this checkout, and on `make print-version` in a
# scratch copy of the tree made a repository, edited, and stripped of .git.
#
# It can fail: before the Makefile named the commit, build/sluice of a
# checkout said plain VERSION (the first check), and so did the scratch
# repository.
# shellcheck disable=SC2015 # A && ok || bad: ok never fails
set -uo pipefail
ROOT=${SLUICE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
SLUICE=${SLUICE_BIN:-$ROOT/build/sluice}
fails=0
ok() { echo "ok - $*"; }
bad() {
	echo "FAIL - $*"
	fails=$((fails + 1))
}
command -v git >/dev/null || { echo "SKIP: no git"; exit 77; }
[[ -x $SLUICE ]] || { echo "cli/version: no $SLUICE: run make all" >&2; exit 1; }
VERSION=$(cat "$ROOT/VERSION")
TMP=$(mktemp -d "/tmp/sluice-version.$$.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT

# The version `make print-version` gives in DIR.
make_version() { make -s -C "$1" print-version 2>/dev/null; }

# This checkout, as the binary was built from it.
if [[ -e $ROOT/.git ]]; then
	want="$VERSION+git.$(git -C "$ROOT" rev-parse --short=7 HEAD)"
	git -C "$ROOT" diff --quiet HEAD -- || want+=.dirty
	got=$("$SLUICE" version)
	[[ $got == "sluice $want" ]] && ok "sluice version: $got" ||
		bad "sluice version says '$got', want 'sluice $want' (rebuild after a commit: make all)"
	got=$("$SLUICE" --version)
	[[ $got == "sluice $want" ]] && ok "sluice --version: $got" || bad "sluice --version says '$got'"
	got=$("$SLUICE" -j version | jq -r .version 2>/dev/null)
	[[ $got == "$want" ]] && ok "sluice -j version: {\"version\": \"$got\"}" ||
		bad "sluice -j version: $("$SLUICE" -j version 2>&1 | head -c 200)"
else
	echo "# $ROOT is not a git checkout: its binary is checked by the copy below only"
fi

# A scratch copy of the tree as it is now (what git would track): a
# repository of its own, then edited, then a plain directory.
COPY=$TMP/tree
mkdir -p "$COPY"
(cd "$ROOT" && git ls-files -z -co --exclude-standard | tar --null -T - -cf - 2>/dev/null) |
	tar -C "$COPY" -xf - || { echo "FAIL - cannot copy the tree"; exit 1; }
got=$(make_version "$COPY")
[[ $got == "$VERSION" ]] && ok "a tree without .git (a tarball): $got" ||
	bad "a tree without .git says '$got', want '$VERSION'"
git -C "$COPY" init -q && git -C "$COPY" add -A &&
	git -C "$COPY" -c user.name=t -c user.email=t@example.invalid commit -qm t ||
	{ echo "FAIL - cannot make the scratch repository"; exit 1; }
sha=$(git -C "$COPY" rev-parse --short=7 HEAD)
got=$(make_version "$COPY")
[[ $got == "$VERSION+git.$sha" ]] && ok "a clean checkout: $got" ||
	bad "a clean checkout says '$got', want '$VERSION+git.$sha'"
echo '# edited' >>"$COPY/README.md"
got=$(make_version "$COPY")
[[ $got == "$VERSION+git.$sha.dirty" ]] && ok "a checkout with an edit: $got" ||
	bad "a checkout with an edit says '$got', want '$VERSION+git.$sha.dirty'"
rm -rf "$COPY/.git"
got=$(make_version "$COPY")
[[ $got == "$VERSION" ]] && ok "the same tree without .git: $got" ||
	bad "the tree without .git says '$got', want '$VERSION'"

((fails)) && { echo "cli/version: $fails failed"; exit 1; }
echo "cli/version: ok"
