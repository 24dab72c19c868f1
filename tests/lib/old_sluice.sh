# shellcheck shell=bash
# An "old" sluice for tests of what a new version says and does over pins
# an older one made. Source it after tests/lib/netns.sh and netns_init, then:
#   old_sluice_build VERSION   # sets OLD, the old build's sluice
#   tree_copy DIR              # this tree copied into DIR, to patch and build
# The old one is this tree, copied into the test's scratch directory, with
# struct sluice_meta one field longer (so its meta map's pins differ from
# this version's, as any change of a map's layout makes them) and VERSION
# saying VERSION, which it records in the pins it writes.
# This tree's files (tracked, and untracked ones git does not ignore; no
# build/) copied into DIR: the old version's tree, before its patch.
tree_copy() { # DIR
	mkdir -p "$1"
	(cd "$SLUICE_ROOT" && git ls-files -co --exclude-standard | grep -v '^build/' |
		tar -cf - -T -) | tar -xf - -C "$1"
}

old_sluice_build() { # VERSION
	local version=$1 tree log
	tree=$(netns_tmp old)
	log=$(netns_tmp old-build.log)
	tree_copy "$tree"
	python3 - "$tree/include/sluice/counters.h" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
meta = "\t__u64 attached_at;\t/* CLOCK_REALTIME seconds */\n};"
if meta not in s:
    sys.exit("old_sluice: counters.h changed: struct sluice_meta's patch no longer applies")
open(p, "w").write(s.replace(meta, meta[:-3] + "\n\t__u64 old_extra;\n};"))
PY
	echo "$version" >"$tree/VERSION"
	make -s -C "$tree" -j2 build/sluice >"$log" 2>&1 ||
		fail "the old sluice does not build: $(tail -5 "$log")"
	OLD=$tree/build/sluice
	[[ $("$OLD" version 2>/dev/null || "$OLD" --version 2>/dev/null) == *"$version"* ]] ||
		fail "the old build does not say version $version"
}
