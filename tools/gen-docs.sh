#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Writes the copies in the docs of facts kept once elsewhere, so that no
# copy is written by hand:
#   - a synopsis block after a line `.. synopsis: WORD...` (an .rst page)
#     or `<!-- synopsis: WORD... -->` (a Markdown page): the usage lines of
#     `sluice help` whose command is one of the WORDs (`global` is the
#     first line, `all` every line), wrapped before an option group as
#     doc/synopsis.awk wraps the man page's SYNOPSIS;
#   - HACKING.md's layers of user/lib, from tests/lint/layers.sh's LAYERS;
#   - HACKING.md's suites, from the `# ---- SUITE: ...` comments of
#     tests/list.
# `make docs` runs it; tests/docs/generated.sh runs it with --check.
#
# usage: tools/gen-docs.sh [--check] [ROOT]
#   --check  write nothing; print what differs and exit 1 if anything does
#   ROOT     the tree to write or check (default: this repository); its
#            build/sluice (or $SLUICE_BIN) gives the usage lines
set -euo pipefail

check=0
if [[ ${1:-} == --check ]]; then
	check=1
	shift
fi
ROOT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
SLUICE=${SLUICE_BIN:-$ROOT/build/sluice}
[[ -x $SLUICE ]] || { echo "gen-docs: no $SLUICE: run make first" >&2; exit 2; }

TMP=$(mktemp -d /tmp/sluice-gen-docs.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

"$SLUICE" help >"$TMP/help.txt"
# The layers: "LAYER MODULE COMMENT", by layer, in LAYERS' order within one.
sed -n "/^LAYERS=\$(cat <<'END'\$/,/^END\$/p" "$ROOT/tests/lint/layers.sh" | sed '1d;$d' |
	awk '{ c = $0; sub(/^[^#]*#[ \t]*/, "", c); printf "%s\t%06d\t%s\t%s\n", $2, NR, $1, c }' |
	sort -n -k1,1 -k2,2 | cut -f1,3,4 >"$TMP/layers.txt"
[[ -s $TMP/layers.txt ]] || { echo "gen-docs: no LAYERS table in tests/lint/layers.sh" >&2; exit 2; }
# The parts of each module: user/lib/NAME_PART.c beside NAME.c, as
# layers.sh assigns them ("MODULE<TAB>FILE FILE...").
declare -A parts=()
while IFS=$'\t' read -r _ mod _; do parts[$mod]=""; done <"$TMP/layers.txt"
for f in "$ROOT"/user/lib/*.c; do
	b=${f##*/}
	b=${b%.c}
	[[ -n ${parts[$b]+x} ]] && continue
	m=$b
	while [[ -z ${parts[$m]+x} && $m == *_* ]]; do m=${m%_*}; done
	[[ -n ${parts[$m]+x} ]] && parts[$m]+=" ${f##*/}"
done
for m in "${!parts[@]}"; do
	[[ -n ${parts[$m]} ]] && printf '%s\t%s\n' "$m" "${parts[$m]# }"
done >"$TMP/parts.txt"
# The suites: each `# ---- SUITE: TEXT` of tests/list and the comment lines
# under it indented past the `#`, as "SUITE<TAB>TEXT" on one line.
awk '
	/^# ---- / { if (s != "") print s; s = substr($0, 8); sub(/: /, "\t", s); inhdr = 1; next }
	inhdr && /^#   +[^ ]/ { t = $0; sub(/^# +/, "", t); s = s " " t; next }
	{ inhdr = 0 }
	END { if (s != "") print s }
' "$ROOT/tests/list" >"$TMP/suites.txt"

# gen FILE: FILE with every generated part written anew, on stdout.
gen() {
	awk -v helpf="$TMP/help.txt" -v layersf="$TMP/layers.txt" -v suitesf="$TMP/suites.txt" \
		-v partsf="$TMP/parts.txt" '
	function wrap(line, ind, cont, width,    n, part, out, cur, i, w) {
		n = split(line, part, / \[/)
		cur = ind part[1]
		out = ""
		for (i = 2; i <= n; i++) {
			w = "[" part[i]
			if (length(cur) + 1 + length(w) > width) {
				out = out cur "\n"
				cur = cont w
			} else {
				cur = cur " " w
			}
		}
		return out cur
	}
	function synopsis(words, ind, cont, width,    i, want, k, n, w) {
		n = split(words, w, " ")
		for (i = 1; i <= n; i++) want[w[i]] = 1
		for (i = 1; i <= nu; i++) {
			k = key[i]
			if ("all" in want || k in want) print wrap(usage[i], ind, cont, width)
		}
	}
	BEGIN {
		while ((getline l < helpf) > 0) {
			# a usage line wrapped by sluice help: joined again
			if (nu && l ~ /^ +[[(]/ && prev) { sub(/^ +/, " ", l); usage[nu] = usage[nu] l; continue }
			prev = (l ~ /^(Usage:| ) *sluice /)
			if (!prev) continue
			sub(/^(Usage:)? */, "", l)
			usage[++nu] = l
			split(l, f, " ")
			key[nu] = (f[2] ~ /^[a-z]/) ? f[2] : "global"
		}
	}
	# An .rst synopsis: the literal block after the marker.
	/^\.\. synopsis: / {
		print; words = $0; sub(/^\.\. synopsis: /, "", words); sub(/ \(.*$/, "", words)
		getline; print		# the blank line
		getline
		if ($0 != "::") { print "gen-docs: " FILENAME ":" NR ": no :: after the synopsis marker" > "/dev/stderr"; exit 3 }
		print; print ""
		synopsis(words, "    ", "        ", 78)
		print ""; print ""
		# skip the old block: blank or indented lines
		while ((getline) > 0 && ($0 == "" || $0 ~ /^[ \t]/)) ;
		print
		next
	}
	# A Markdown synopsis: the fenced block after the marker.
	/^<!-- synopsis: .* -->$/ {
		print; words = $0; sub(/^<!-- synopsis: /, "", words); sub(/ -->$/, "", words); sub(/ \(.*$/, "", words)
		getline
		if ($0 !~ /^```/) { print "gen-docs: " FILENAME ":" NR ": no ``` after the synopsis marker" > "/dev/stderr"; exit 3 }
		print
		synopsis(words, "", "    ", 100)
		while ((getline) > 0 && $0 !~ /^```/) ;
		print
		next
	}
	# HACKING.md: the layers, under the lib/ line of the picture, each
	# module with its parts (NAME_PART.c).
	/^  lib\/ .*tests\/lint\/layers.sh/ {
		print
		while ((getline l < partsf) > 0) {
			split(l, f, "\t")
			part[f[1]] = f[2]
		}
		while ((getline l < layersf) > 0) {
			split(l, f, "\t")
			printf "    %-2s %-14s%s\n", f[1], f[2], f[3]
			if (f[2] in part) printf "                      and %s\n", part[f[2]]
		}
		while ((getline) > 0 && ($0 ~ /^    [0-9]/ || $0 ~ /^                      and /)) ;
		print
		next
	}
	# HACKING.md: the suites, after the marker line.
	/^<!-- suites: tests\/list -->$/ {
		print
		print ""
		while ((getline l < suitesf) > 0) {
			split(l, f, "\t")
			printf "- **%s**: %s\n", f[1], f[2]
		}
		print ""
		while ((getline) > 0 && ($0 == "" || $0 ~ /^(- |  )/)) ;
		print
		next
	}
	{ print }
	' "$1"
}

files=()
for f in README.md HACKING.md doc/commands/README.md doc/commands/*.rst; do
	[[ -f $ROOT/$f ]] && files+=("$f")
done
stale=0
for f in "${files[@]}"; do
	gen "$ROOT/$f" >"$TMP/out"
	if cmp -s "$TMP/out" "$ROOT/$f"; then continue; fi
	if ((check)); then
		echo "gen-docs: $f is stale (run tools/gen-docs.sh, or make docs):"
		{ diff -u "$ROOT/$f" "$TMP/out" || true; } | sed -n "3,40p"
		stale=1
	else
		cat "$TMP/out" >"$ROOT/$f"
		echo "gen-docs: wrote $f"
	fi
done
exit "$stale"
