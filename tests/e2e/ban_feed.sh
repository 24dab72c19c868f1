#!/usr/bin/env bash
# e2e/ban_feed: a feed that fails never empties its list. A 200,000-prefix
# list (131,072 IPv4 /32s of 198.18.0.0/15 and 68,928 IPv6 /128s of
# 2001:2::/48) is loaded, then `ban load - --list big` is given what a
# failed download gives, and each time exits non-zero with one line on
# stderr and the list is whole:
#  - empty input (curl -fsS with no network): exit 2;
#  - comments only (a feed's header, its prefixes cut away): exit 2;
#  - input cut mid-prefix, its last line without a newline: exit 2;
#  - no memory for one line (a 300 MB line under ulimit -v 100 MB): exit 1;
#  - no memory for the entries (5,000,000 lines under ulimit -v 100 MB): 1.
# --merge of empty input changes nothing and is no error; the README's
# last-good-copy recipe (download to a temp file, load it, then move it over
# the last good copy) keeps the copy when the download fails; and
# --allow-empty empties the list (exit 0).
# Shown to fail against the build before the refusal: empty input exited 0
# with "0 prefixes (200000 before)", and the 300 MB line under ulimit read
# as the end of the input and emptied the list too.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

netns_init bf
netns_setup
sluice_attach >/dev/null
N=200000
feed=$(netns_tmp feed.txt)
awk -v n="$N" 'BEGIN {
	for (i = 0; i < 131072; i++)
		printf "198.%d.%d.%d\n", 18 + int(i / 65536), int(i / 256) % 256, i % 256
	for (i = 0; i < n - 131072; i++)
		printf "2001:2::%x:%x\n", int(i / 65536), i % 65536
}' >"$feed"
sluice_rx ban load "$feed" --list big >/dev/null 2>&1 || fail "loading $N prefixes failed"
sluice_rx ban add 198.18.0.0/16 --list other >/dev/null 2>&1 || fail "ban add in list other failed"
# The list as a digest of its sorted prefixes, and their count.
list_of() { # LIST
	local n rest
	read -r n rest < <(sluice_rx -j ban list --list "$1" |
		jq -r 'map(.prefix) | sort | "\(length) \(tostring)"')
	echo "$n $(sha256sum <<<"$rest" | cut -c1-16)"
}
before=$(list_of big)
assert_eq "${before%% *}" "$N" "prefixes of list big"

# load_fails RC WHAT MATCH [OPTIONS...]: stdin into `ban load - --list big`
# (under ulimit -v $LIMIT_KB when set) exits RC with one line on stderr
# matching MATCH, nothing on stdout, and list big as it was.
load_fails() {
	local want=$1 what=$2 match=$3 rc=0 out err
	shift 3
	out=$(
		[[ -n ${LIMIT_KB:-} ]] && ulimit -v "$LIMIT_KB"
		sluice_rx ban load - --list big "$@" 2>"$(netns_tmp err)"
	) || rc=$?
	err=$(cat "$(netns_tmp err)")
	assert_eq "$rc" "$want" "$what: exit status ($err)"
	[[ -z $out ]] || fail "$what: printed on stdout: $out"
	assert_eq "$(wc -l <<<"$err")" 1 "$what: lines on stderr"
	[[ $err =~ $match ]] || fail "$what: said '$err', not /$match/"
	assert_eq "$(list_of big)" "$before" "$what: list big after it"
	ok "$what: $err"
}
load_fails 2 "empty input" "holds no prefix while list big holds $N .*--allow-empty" </dev/null
# Process substitution, not a pipe: load_fails runs in this shell, and a
# producer that sluice stops reading (SIGPIPE) is no failure.
load_fails 2 "comments only" "holds no prefix while list big holds $N " \
	< <(printf '; Spamhaus DROP List 2026/12/07\n; Last-Modified: ...\n')
load_fails 2 "input cut mid-prefix" '\(stdin\):1001: the last line has no newline' \
	< <(head -n 1000 "$feed"; printf '198.18.5.1')
LIMIT_KB=100000 load_fails 1 "no memory for a line" 'cannot read \(stdin\): Cannot allocate memory' \
	< <(head -c 300M /dev/zero | tr '\0' 7)
LIMIT_KB=100000 load_fails 1 "no memory for the entries" \
	'out of memory at \(stdin\):[0-9]+; nothing was changed' < <(yes 198.18.0.1 | head -n 5000000)

# --merge of nothing adds nothing: no error, nothing changed.
sluice_rx ban load - --list big --merge </dev/null >/dev/null 2>&1 || fail "ban load --merge of nothing failed"
assert_eq "$(list_of big)" "$before" "list big after --merge of nothing"
ok "--merge of empty input: exit 0, list big unchanged"

# The last good copy (README, doc/commands/ban.rst): a failed download
# leaves it, a good one replaces it once loaded.
good=$(netns_tmp good.txt)
cp "$feed" "$good"
fetch_and_load() { # SOURCE: the recipe, with cat SOURCE for curl -fsS URL
	local tmp
	tmp=$(mktemp "$good.XXXXXX")
	if cat "$1" >"$tmp" 2>/dev/null && sluice_rx ban load "$tmp" --list big; then
		mv "$tmp" "$good"
	else
		rm -f "$tmp"
		return 1
	fi
}
! fetch_and_load /nonexistent/feed >/dev/null 2>&1 || fail "the recipe succeeded on a failed download"
cmp -s "$feed" "$good" || fail "a failed download touched the last good copy"
assert_eq "$(list_of big)" "$before" "list big after a failed download in the recipe"
ok "the last-good-copy recipe: a failed download keeps the copy and the list"

# --allow-empty empties it, and list other stays.
out=$(sluice_rx ban load - --list big --allow-empty </dev/null 2>/dev/null) ||
	fail "ban load --allow-empty of nothing failed"
[[ $out == "list big: 0 prefixes ($N before), loaded in "* ]] || fail "--allow-empty said: $out"
assert_eq "$(sluice_rx -j ban list --list big | jq length)" 0 "prefixes of list big after --allow-empty"
assert_eq "$(sluice_rx -j ban list --list other | jq -r '.[].prefix')" 198.18.0.0/16 "list other beside it"
ok "--allow-empty: $out"
# An empty list takes empty input as it is: nothing to lose.
sluice_rx ban load - --list big </dev/null >/dev/null 2>&1 || fail "empty input for an empty list failed"
ok "empty input for an empty list: exit 0"
