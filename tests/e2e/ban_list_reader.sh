#!/usr/bin/env bash
# e2e/ban_list_reader: `ban list` run by a member of the pins' group (uid
# nobody in group sluice, no capabilities) never claims there are no bans
# while there are. It may read the rule bans and the lists' sizes but not
# the prefix trie (getting a map by its id needs CAP_SYS_ADMIN):
#  - with no ban at all it says "no bans" (-j: []), which is true;
#  - with 16 prefix bans in list spamhaus (root sees them) it exits 1 with
#    one line on stderr naming the list and its count, nothing on stdout
#    (-j: one error object, no array);
#  - --list of a list that holds no prefix: [] (it can tell);
#  - with a rule's ban beside 16 prefix bans it still fails; once the
#    prefixes are gone it shows the rule ban, as root does.
# Shown to fail against the build before the fix: the reader got "no bans
# on IFACE" and -j [] with exit 0 while root listed 16 prefix bans (the
# trie's -EPERM, which is -1, was taken for "no trie").
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

netns_init blr
need_nobody
netns_setup
sluice_attach >/dev/null
reader() { as_nobody sluice "$SLUICE" -i "$IF_RX" "$@"; }

# reads_ok WHAT WANT_JSON ARGS...: the reader's -j ban list ARGS exits 0
# and prints WANT_JSON (jq -c of its prefixes and sources).
reads_ok() {
	local what=$1 want=$2 out
	shift 2
	out=$(reader -j ban list "$@") || fail "$what: reader's ban list -j $* failed: $out"
	assert_eq "$(jq -c 'map(.prefix // .source)' <<<"$out")" "$want" "$what: reader's ban list -j $*"
}
# reads_refused WHAT: the reader's ban list (text and -j) exits 1, one line
# naming list spamhaus and its 16 prefixes, and claims nothing.
reads_refused() {
	local what=$1 rc=0 out err
	out=$(reader ban list 2>"$(netns_tmp err)") || rc=$?
	err=$(cat "$(netns_tmp err)")
	assert_eq "$rc" 1 "$what: exit status of the reader's ban list"
	assert_eq "$out" "" "$what: the reader's ban list on stdout"
	assert_eq "$(wc -l <<<"$err")" 1 "$what: lines on stderr"
	[[ $err == "sluice: $IF_RX has prefix bans (list spamhaus 16) that only root can read"*"sudo sluice ban list'" ]] ||
		fail "$what: the reader was told: $err"
	ok "$what: $err"
	rc=0
	out=$(reader -j ban list 2>/dev/null) || rc=$?
	assert_eq "$rc" 1 "$what: exit status of the reader's ban list -j"
	assert_eq "$(jq -c '[type, (.error | test("list spamhaus 16")), .hint]' <<<"$out")" \
		'["object",true,"run '"'"'sudo sluice ban list'"'"'"]' "$what: the reader's ban list -j"
}

reads_ok "no bans" '[]'
assert_eq "$(reader ban list)" "no bans on $IF_RX" "the reader's ban list with no bans"

seq 1 16 | awk '{ printf "198.18.%d.0/24\n", $1 }' | sluice_rx ban load - --list spamhaus >/dev/null 2>&1 ||
	fail "ban load of 16 prefixes failed"
assert_eq "$(sluice_rx -j ban list | jq length)" 16 "root's ban list"
reads_refused "16 prefix bans"
reads_ok "--list of a list without prefixes" '[]' --list other

# A rule's ban: 198.18.0.1 over 1 packet an hour is banned for an hour.
sluice_rx limit set 198.18.0.0/24 --rate 1/h --burst 1 --ban 1h >/dev/null 2>&1 || fail "limit set failed"
flood --src "$TX4" --count 20 --pps 1000 --seconds 10 >/dev/null
assert_eq "$(sluice_rx -j ban list | jq -c 'map(select(.kind == "rule")) | map(.source)')" \
	'["198.18.0.1"]' "root's rule bans"
reads_refused "16 prefix bans and a rule's ban"
sluice_rx ban load - --list spamhaus --allow-empty </dev/null >/dev/null 2>&1 || fail "emptying list spamhaus failed"
reads_ok "a rule's ban, no prefix left" '["198.18.0.1"]'
