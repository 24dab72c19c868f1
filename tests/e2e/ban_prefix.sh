#!/usr/bin/env bash
# e2e/ban_prefix: prefix bans by name and in lists, through real traffic.
#  1. `ban add 198.18.64.0/24` drops every packet from inside the /24 in XDP
#     (counted `banned`, to the entry and to its list), before the rule that
#     would pass it; a source outside passes; nftables behind sluice sees
#     exactly the outside source's packets; the exporter shows the ban
#     (sluice_bans, sluice_ban_dropped_packets_total, the capacity).
#  2. `ban add ADDR --for 2s`: banned, then after 2 s passing again, with no
#     command run in between (the datapath treats the expired entry as
#     absent); the next write sweeps it (a "ban expired" notice).
#  3. `ban load` replaces a list in one step: a file in every format it
#     reads (plain, ipset save, .netset, DROP) replaces the list, another
#     list is untouched; --merge adds; IPv6 and IPv4-mapped forms; an
#     ipset `nomatch` exception is no ban, a `timeout 0` inside a comment
#     is no timeout, and --set takes one set of two. A prefix in two lists
#     keeps each list's end (a 1 h ban stays 1 h when a list holding it
#     forever lets go).
#  4. `ban del` lifts; `ban del` of a prefix not banned exits 1; bad input
#     (a /33, a duration of 0, an unknown format, a missing file, a bad
#     list name) exits 2 with one line, and `ban list` is the same after.
#  5. A table full (attach --max-bans 1024) refuses the 1025th prefix with
#     exit 1, and a load that would overfill it changes nothing.
# BAN_PREFIX_BREAK=gate has the test expect bans to pass (how it was shown
# to be able to fail).
set -euo pipefail
# shellcheck source=tests/exporter/lib.sh
. "$(dirname "$0")/../exporter/lib.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"

BREAK=${BAN_PREFIX_BREAK:-}
[[ -z $BREAK || $BREAK == gate ]] || fail "BAN_PREFIX_BREAK must be gate or unset"

NET=198.18.64.0/24
IN=198.18.64.9
OUT=198.18.65.9
TIMED=198.18.66.7
N=40

exporter_init bp
netns_setup
sluice_attach --max-bans 1024
sluice_rx limit default --rate 100000 --burst 100000
nft_rx_init
nft_rx_counter c_in ip saddr "$IN"
nft_rx_counter c_out ip saddr "$OUT"
nft_rx_counter c_timed ip saddr "$TIMED"

send() { # SRC PORT: N packets, all sent
	local out
	out=$(flood --src "$1" --dport "$2" --count "$N" --pps 2000 --seconds 5)
	[[ $(flood_field "$out" .sent) == "$N" ]] || fail "flood from $1 sent $(flood_field "$out" .sent) of $N"
}
banned_now() { sluice_jq '.packets.drop.banned // 0' stats; }
bans_json() { sluice_rx -j ban list "$@" || fail "sluice ban list -j $* failed"; }
entry_of() { bans_json | jq -c --arg p "$1" '[.[] | select(.prefix == $p)] | .[0] // empty'; }
expect_pass=0
[[ $BREAK == gate ]] && expect_pass=$N

# --- 1. ban add a /24 --------------------------------------------------------
err=$(sluice_rx ban add "$NET" 2>&1 >/dev/null) || fail "ban add $NET failed: $err"
grep -q '^sluice: .*ban added: 198.18.64.0/24 (list default, forever' <<<"$err" ||
	fail "ban add logged no notice: $err"
b0=$(banned_now)
send "$IN" 5001
send "$OUT" 5002
sleep 0.2
assert_eq "$(nft_rx_packets c_in)" "$expect_pass" "packets from $IN past sluice"
assert_eq "$(nft_rx_packets c_out)" "$N" "packets from $OUT past sluice"
assert_eq "$(($(banned_now) - b0))" "$N" "banned drops"
e=$(entry_of "$NET")
[[ -n $e ]] || fail "ban list shows no $NET: $(bans_json)"
assert_eq "$(jq -r '.kind + " " + .list + " " + (.left_seconds|tostring) + " " + (.dropped|tostring)' <<<"$e")" \
	"added default null $N" "ban list entry of $NET"
exporter_start -i "$IF_RX"
m=$(netns_tmp metrics.txt)
scrape /metrics >"$m" || fail "scrape failed"
exporter_stop
assert_eq "$(series "$m" "sluice_bans{interface=\"$IF_RX\",kind=\"added\",list=\"default\"}")" 1 "sluice_bans of list default"
assert_eq "$(series "$m" "sluice_ban_dropped_packets_total{interface=\"$IF_RX\",list=\"default\"}")" "$((N - expect_pass))" "sluice_ban_dropped_packets_total of list default"
assert_eq "$(series "$m" "sluice_ban_table_capacity{interface=\"$IF_RX\"}")" 1024 "sluice_ban_table_capacity"
ok "ban add $NET: $N of $N dropped as banned, counted to the entry and its list; $OUT passes"

# --- 2. ban add --for: expires in the datapath, swept by the next write -----
sluice_rx ban add "$TIMED" --for 2s --list timed 2>/dev/null || fail "ban add --for failed"
left=$(entry_of "$TIMED/32" | jq -r .left_seconds)
awk -v l="$left" 'BEGIN { exit !(l > 1 && l <= 2) }' || fail "left_seconds $left, not within (1, 2]"
send "$TIMED" 5003
sleep 2.3
send "$TIMED" 5004
sleep 0.2
assert_eq "$(nft_rx_packets c_timed)" "$((N + expect_pass))" "packets from $TIMED past sluice (banned, then expired)"
[[ -z $(entry_of "$TIMED/32") ]] || fail "ban list still shows the expired ban"
err=$(sluice_rx ban add 198.18.67.0/24 --list other 2>&1 >/dev/null) || fail "ban add failed: $err"
grep -q 'ban expired: 198.18.66.7/32 (list timed' <<<"$err" || fail "no sweep line for the expired ban: $err"
ok "ban add --for 2s: dropped, then passing after 2 s with no command run; swept by the next write"

# --- 3. ban load: every format, replace and merge ----------------------------
tmp=$(netns_tmp feed)
cat >"$tmp" <<-'EOF'
	# a plain list with durations
	198.18.70.0/24
	198.18.71.5 1h

	create feed hash:net family inet hashsize 1024 maxelem 65536
	add feed 198.18.72.0/24
	add feed 198.18.73.0/25 timeout 600
	add feed 198.18.72.128/25 nomatch
	add feed 198.18.76.0/24 timeout 600 comment "timeout 0; # not a comment"
	198.18.74.0/23 ; SBL123456
	2001:2:0:9::/64
	::ffff:198.18.75.1
EOF
sluice_rx ban load "$tmp" --list feed 2>/dev/null >/dev/null || fail "ban load failed"
got=$(bans_json --list feed | jq -r '[.[].prefix] | sort | join(" ")')
assert_eq "$got" "198.18.70.0/24 198.18.71.5/32 198.18.72.0/24 198.18.73.0/25 198.18.74.0/23 198.18.75.1/32 198.18.76.0/24 2001:2:0:9::/64" "list feed (no nomatch exception)"
assert_eq "$(entry_of 198.18.73.0/25 | jq -r '.left_seconds > 590 and .left_seconds <= 600')" true "ipset timeout"
assert_eq "$(entry_of 198.18.76.0/24 | jq -r '.left_seconds > 590 and .left_seconds <= 600')" true \
	"ipset timeout beside a comment that says 'timeout 0'"
# ipset save of two sets: --set takes one.
printf 'create allow hash:net\nadd allow 198.18.77.0/24\ncreate block hash:net\nadd block 198.18.78.0/24\n' >"$tmp"
sluice_rx ban load "$tmp" --list sets --set block >/dev/null 2>&1 || fail "ban load --set block failed"
assert_eq "$(bans_json --list sets | jq -r '[.[].prefix] | join(" ")')" "198.18.78.0/24" "ban load --set block of two sets"
assert_eq "$(entry_of 198.18.70.0/24 | jq -r .kind)" loaded "kind of a loaded ban"
printf '198.18.80.0/24\n' | sluice_rx ban load - --list feed >/dev/null 2>&1 || fail "ban load - failed"
assert_eq "$(bans_json --list feed | jq -r '[.[].prefix] | join(" ")')" "198.18.80.0/24" "list feed replaced"
[[ -n $(entry_of "$NET") ]] || fail "replacing list feed lifted list default's $NET"
printf '198.18.81.0/24\n' | sluice_rx ban load - --list feed --merge >/dev/null 2>&1 || fail "ban load --merge failed"
assert_eq "$(bans_json --list feed | jq -r '[.[].prefix] | sort | join(" ")')" "198.18.80.0/24 198.18.81.0/24" "list feed merged"
# A prefix in two lists stays banned until both let it go.
sluice_rx ban add 198.18.80.0/24 2>/dev/null || fail "ban add into a second list failed"
sluice_rx ban del 198.18.80.0/24 --list feed >/dev/null 2>&1 || fail "ban del --list feed failed"
assert_eq "$(entry_of 198.18.80.0/24 | jq -r '.lists | join(",")')" default "lists of a prefix after one let go"
# Each list keeps its own end: a list's 1 h ban stays 1 h when a list that
# held the prefix forever lets it go.
sluice_rx ban add 198.18.82.0/24 --list f2b --for 1h 2>/dev/null || fail "ban add --for 1h failed"
sluice_rx ban add 198.18.82.0/24 --list feed 2>/dev/null || fail "ban add in feed failed"
assert_eq "$(entry_of 198.18.82.0/24 | jq -r '(.left_seconds == null) and (.left_by_list.f2b > 3500)')" true \
	"a prefix in f2b (1 h) and feed (forever)"
sluice_rx ban del 198.18.82.0/24 --list feed >/dev/null 2>&1 || fail "ban del --list feed failed"
assert_eq "$(entry_of 198.18.82.0/24 | jq -r '.left_seconds > 3500 and .left_seconds <= 3600')" true \
	"f2b's 1 h ban after feed let the prefix go"
sluice_rx ban del 198.18.82.0/24 >/dev/null 2>&1 || fail "ban del 198.18.82.0/24 failed"
ok "ban load: plain, ipset, .netset, DROP, IPv6 and mapped lines; replace, merge, two lists"

# --- 4. ban del, and bad input changes nothing -------------------------------
sluice_rx ban del "$NET" >/dev/null 2>&1 || fail "ban del $NET failed"
send "$IN" 5005
sleep 0.2
assert_eq "$(nft_rx_packets c_in)" "$((N + expect_pass))" "packets from $IN past sluice after ban del"
rc=0
out=$(sluice_rx ban del "$NET" 2>&1) || rc=$?
assert_eq "$rc" 1 "exit status of ban del of a prefix not banned"
assert_eq "$(wc -l <<<"$out")" 1 "lines of ban del's error"
before=$(bans_json | jq -S 'map(del(.left_seconds, .left_ms, .left_by_list))')
bad() { # EXPECTED_RC ARGS...: one line on stderr, nothing on stdout, no change
	local want=$1 rc=0 o e
	shift
	o=$(sluice_rx "$@" 2>"$(netns_tmp err)") || rc=$?
	e=$(cat "$(netns_tmp err)")
	assert_eq "$rc" "$want" "exit status of sluice $*"
	[[ -z $o && $(wc -l <<<"$e") == 1 ]] || fail "sluice $*: want one line on stderr, got: $o / $e"
}
bad 2 ban add 198.18.0.0/33
bad 2 ban add 198.18.0.1 --for 0s
bad 2 ban add 198.18.0.1 --list 'no spaces'
bad 2 ban load /nonexistent/feed
printf '198.18.90.0/24\nfoo bar baz\n' >"$tmp"
bad 2 ban load "$tmp"
printf '198.18.90.0/24\n198.18.91.0/24 0s\n' >"$tmp"
bad 2 ban load "$tmp"
after=$(bans_json | jq -S 'map(del(.left_seconds, .left_ms, .left_by_list))')
assert_eq "$after" "$before" "ban list after bad input"
ok "ban del lifts; not banned exits 1; bad input exits 2 with one line and changes nothing"

# --- 5. a full table ---------------------------------------------------------
have=$(bans_json | jq 'map(select(.prefix)) | length')
seq 0 $((1024 - have - 1)) | awk '{ printf "198.19.%d.%d\n", int($1 / 256), $1 % 256 }' >"$tmp"
sluice_rx ban load "$tmp" --list fill >/dev/null 2>&1 || fail "filling the table to 1024 failed"
assert_eq "$(bans_json | jq 'map(select(.prefix)) | length')" 1024 "prefixes in a full table"
bad 1 ban add 198.18.99.1
echo 198.19.200.1 >>"$tmp"
bad 1 ban load "$tmp" --list fill
assert_eq "$(bans_json --list fill | jq length)" "$((1024 - have))" "list fill after an overfull load"
sluice_rx ban del 198.19.0.5 >/dev/null 2>&1 || fail "ban del in a full table failed"
sluice_rx ban add 198.18.99.1 2>/dev/null >/dev/null || fail "ban add after a ban del in a full table failed"
ok "a full table (--max-bans 1024) refuses one more prefix (exit 1), an overfull load changes nothing, ban del works in it"
