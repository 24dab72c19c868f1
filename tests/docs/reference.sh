#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# docs/reference: the manual page, made from doc/ as `make man` makes it,
# documents every command and every option of the CLI's tables (`sluice
# help`, `sluice CMD --help`) outside its SYNOPSIS (which is generated from
# them), and documents nothing the CLI refuses: every --option it names is
# one the CLI knows (or one of another program's, listed below), and every
# command line it shows (`sluice ...`, `# sluice ...`) is a command the CLI
# has, with options that command takes. The command lines of README.md's
# code blocks (the walkthrough, the cheat sheet) are checked the same way.
#
# usage: tests/docs/reference.sh [DOC_DIR]
#   DOC_DIR  the doc/ tree to check (default the repository's); pass an
#            edited copy to see the test fail ($README: another README.md).
set -uo pipefail

ROOT=${SLUICE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
SLUICE=${SLUICE_BIN:-$ROOT/build/sluice}
DOC=${1:-$ROOT/doc}
# Options of other programs that the pages show (groupadd, nsenter, curl,
# rst2man, nginx's and systemd's words are not sluice's).
FOREIGN=(--system --net --unix-socket --halt --strip-elements-with-class)

fails=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

[[ -x $SLUICE ]] || { echo "docs/reference: no $SLUICE: run make all" >&2; exit 1; }
for tool in rst2man man col awk; do
	command -v "$tool" >/dev/null || { echo "docs/reference: SKIP: no $tool (tools/install-deps.sh)"; exit 77; }
done

TMP=$(mktemp -d /tmp/sluice-docs-ref.XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT

# The page, rendered as the Makefile renders it, from a copy of DOC_DIR.
mkdir -p "$TMP/doc" "$TMP/build/man"
cp -r "$DOC/." "$TMP/doc/"
"$SLUICE" help >"$TMP/help.txt" || { echo "FAIL: sluice help exits $?"; exit 1; }
awk -f "$TMP/doc/synopsis.awk" "$TMP/help.txt" >"$TMP/build/man/synopsis.rst"
echo '.. |version| replace:: sluice test' >"$TMP/build/man/version.rst"
if ! rst2man --halt=warning --strip-elements-with-class=no-man \
	"$TMP/doc/sluice.8.rst" "$TMP/sluice.8" 2>"$TMP/rst2man.err"; then
	cat "$TMP/rst2man.err"
	echo "FAIL: rst2man refuses doc/sluice.8.rst"
	exit 1
fi
# No hyphenation, so that no option is split at a line's end.
MANROFFOPT=-rHY=0 MANWIDTH=100 man -l "$TMP/sluice.8" 2>/dev/null | col -bx >"$TMP/man.txt"
# Everything but NAME and SYNOPSIS: what was written by hand.
sed -n '/^DESCRIPTION/,$p' "$TMP/man.txt" >"$TMP/body.txt"
[[ -s $TMP/body.txt ]] || { echo "FAIL: the page has no DESCRIPTION"; exit 1; }
# The same on one line with single spaces, for words a line break splits.
tr -s ' \n\t' '   ' <"$TMP/body.txt" >"$TMP/flat.txt"

# Options in a help text: the Options table's first column and the usage
# lines' [--opt and [-x.
help_opts() {
	{
		sed -n '/^Options:/,$p' "$1" | sed -nE 's/^  (-[a-zA-Z], )?(--?[a-zA-Z][a-z0-9-]*).*/\1\2/p' |
			tr ',' '\n' | tr -d ' '
		grep -E '^(Usage:| ) *sluice' "$1" | grep -oE '\[--?[a-zA-Z][a-z0-9-]*' | tr -d '['
	} | sort -u
}

# word_in FILE WORD: WORD stands alone in FILE (not part of --ban-after
# when looking for --ban, nor of limits when looking for limit).
word_in() {
	grep -qE -- "(^|[^A-Za-z0-9_-])$(printf '%s' "$2" | sed 's/[.[\*^$/]/\\&/g')([^A-Za-z0-9_-]|$)" "$1"
}

# The commands: `sluice help`'s usage lines, one or two words each.
mapfile -t cmds < <(sed -nE 's/^(Usage:| ) *sluice ([a-z][a-z-]*)( ([a-z][a-z-]*))?.*/\2 \4/p' "$TMP/help.txt" |
	sed 's/ *$//' | sort -u)
((${#cmds[@]} >= 20)) || { echo "FAIL: sluice help lists only: ${cmds[*]}"; exit 1; }
echo "# ${#cmds[@]} commands from sluice help"

known=$TMP/known.txt	# every option some command takes, and the global ones
help_opts "$TMP/help.txt" >"$known"
for o in -h --help -V --version; do	# main's own, outside the tables
	"$SLUICE" "$o" >/dev/null 2>&1 && echo "$o" >>"$known"
done
declare -A cmd_opts
for c in "${cmds[@]}"; do
	# shellcheck disable=SC2086 # c is one or two words
	"$SLUICE" $c --help >"$TMP/cmd.txt" 2>&1 || fail "sluice $c --help exits $?"
	cmd_opts[$c]=$(help_opts "$TMP/cmd.txt" | tr '\n' ' ')
	help_opts "$TMP/cmd.txt" >>"$known"
	word_in "$TMP/flat.txt" "$c" || fail "command '$c' (sluice help) is not in sluice(8)"
	for o in ${cmd_opts[$c]}; do
		word_in "$TMP/flat.txt" "$o" || fail "option $o of 'sluice $c' (its --help) is not in sluice(8)"
	done
done
sort -u -o "$known" "$known"
echo "# $(wc -l <"$known") options from the commands' --help"

# Every --option the page names is one the CLI takes.
while read -r o; do
	grep -qxF -- "$o" "$known" && continue
	[[ " ${FOREIGN[*]} " == *" $o "* ]] && continue
	fail "sluice(8) names $o, which no sluice command takes: $(grep -m1 -nE -- "$o([^a-z0-9-]|$)" "$TMP/body.txt")"
done < <(grep -oE -- '(^|[^A-Za-z0-9_-])--[a-z][a-z0-9-]*' "$TMP/body.txt" | sed -E 's/^[^-]//' | sort -u)

# Every command line the page shows is a command with its own options.
# lines: "sluice ...", "# sluice ...", "$ sluice ...", "sudo sluice ...".
check_line() {
	local -a w=() opts=()
	local i=0 c="" line=$1	# $2: the whole line, indent and prompt
	line=${line%% |*}	# a pipe, not the | of native|skb|auto
	line=${line%%[;&\`#]*}
	read -ra w <<<"$line"
	# global options first: -j, -v, -i IFACE, --bpffs DIR
	while ((i < ${#w[@]})); do
		case ${w[i]} in
		-j | --json | -v | -vv | --verbose) i=$((i + 1)) ;;
		-i | --interface | --bpffs) i=$((i + 2)) ;;
		--interface=* | --bpffs=*) i=$((i + 1)) ;;
		*) break ;;
		esac
	done
	((i < ${#w[@]})) || return 0
	c=${w[i]}
	if [[ -n ${cmd_opts[$c]+x} ]]; then
		i=$((i + 1))
	elif [[ -n ${cmd_opts["$c ${w[i + 1]:-}"]+x} ]]; then
		c="$c ${w[i + 1]}"
		i=$((i + 2))
	elif [[ $2 =~ ^\ *(#|\$|sudo)\ +sluice || ($2 =~ ^\ {10} && ${w[i + 1]:--} =~ ^[-[A-Z0-9]) ]]; then
		# a prompt, or a literal block's command line: a command to run
		fail "$WHERE shows a command sluice does not have: 'sluice $line'"
		return 0
	else
		return 0	# prose that starts with the word sluice
	fi
	for ((; i < ${#w[@]}; i++)); do
		[[ ${w[i]} =~ ^[[(]*(--?[a-zA-Z][a-z0-9-]*)(=.*|[])]*)$ ]] || continue
		opts+=("${BASH_REMATCH[1]}")
	done
	for o in "${opts[@]}"; do
		case " ${cmd_opts[$c]} -j --json -v -vv --verbose -i --interface --bpffs -h --help " in
		*" $o "*) ;;
		*) fail "$WHERE shows 'sluice $line', but 'sluice $c' takes no $o" ;;
		esac
	done
}
n=0
WHERE="sluice(8)"
while IFS= read -r l; do
	check_line "${l#*sluice }" "$l"
	n=$((n + 1))
done < <(grep -E '^ *((#|\$|sudo) +)?sluice +[-a-z]' "$TMP/body.txt")
echo "# $n command lines checked"

# The same for the command lines of README.md's code blocks (its cheat
# sheet has two commands on some lines).
n=0
WHERE=README.md
while IFS= read -r l; do
	check_line "${l#*sluice }" "# $l"
	n=$((n + 1))
done < <(awk '/^```/ { code = !code; next } code' "${README:-$ROOT/README.md}" |
	sed -E 's/ {2,}(sluice )/\n\1/g' | sed -E 's/^ *(sudo +)?//' | grep -E '^sluice +[-a-z]' |
	grep -vE '^sluice (COMMAND|OBJECT)')
echo "# $n command lines of README.md checked"

# Links render as links: no Markdown [text](url) written into an .rst page
# survives as it was typed.
while IFS= read -r l; do
	fail "sluice(8) shows a raw Markdown link (write \`text <url>\`__): $l"
done < <(grep -nE '\[[^]]+\]\([^)]+\)' "$TMP/man.txt")

# Nothing the CLI takes is called unsupported.
while IFS= read -r s; do
	while read -r o; do
		grep -qxF -- "$o" "$known" && fail "sluice(8) calls $o, which sluice takes, not supported: $s"
	done < <(grep -oE -- '--[a-z][a-z0-9-]*' <<<"$s")
done < <(tr '\n' ' ' <"$TMP/body.txt" | tr -s ' ' | grep -oiE '[^.]*(not (yet )?supported|unsupported)[^.]*')

if ((fails)); then
	echo "docs/reference: $fails failures"
	exit 1
fi
echo "docs/reference: ok"
