#!/usr/bin/env bash
# check/prefix_share: one network's many addresses cannot take the source
# table from everyone else. --max-sources 256, a per-/64 rule on
# 2001:2::/48 (1/m, burst 1): 300 checks from 300 /64s of that one /48 get
# exactly 32 admissions (its share, 256 / 8) and 268 answers of 429
# table_full, counted in sluice_check_table_refusals_total{reason=
# "prefix_share"} and said in one warning that names 2001:2::/48; an IPv4
# client checked after them is still admitted (200). A prefix at its share
# takes the room of its own idle entries: in 198.18.7.0/24, 31 sources of a
# 1/m rule and one of a 1/s rule fill its share; a second later (the 1/s
# bucket full again, idle) a new address of the /24 is admitted, and the
# next one is refused again.
# Shown to fail on the build without the share: the /48 takes the whole
# table (256 admitted) and the IPv4 client gets 429: the test stops at
# "checks from 300 /64s of one /48: admitted".
set -euo pipefail
# The ASan/UBSan build: a leak or overflow on any path here fails the test.
SLUICE_CHECK=${SLUICE_CHECK:-$(dirname "$0")/../../build/asan/sluice}
. "$(dirname "$0")/lib.sh"

check_init ckf
sluice_rx limit set 2001:2::/48 --requests 1/m --burst 1 --per /64 >/dev/null
sluice_rx limit set 198.18.7.0/25 --requests 1/m --burst 1 >/dev/null
sluice_rx limit set 198.18.7.128/25 --requests 1/s --burst 1 >/dev/null
sluice_rx limit set 198.18.0.0/16 --requests 1/m --burst 1 >/dev/null
check_start --max-sources 256

# One curl for many checks: one status per line, in order.
checks() { # ADDR...
	local cfg a sep=
	cfg=$(netns_tmp batch.cfg)
	for a in "$@"; do
		printf '%surl = "%s/check"\nheader = "X-Real-IP: %s"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\n' \
			"$sep" "$CHECK_URL" "$a"
		sep=$'next\n'
	done >"$cfg"
	in_rx curl -sS --max-time 10 -K "$cfg"
}
tally() { sort | uniq -c | awk '{ printf "%s%s:%s", sep, $2, $1; sep = " " }'; }
m() { metric "sluice_check_$1{interface=\"$IF_RX\"${2:+,$2}}"; }

addrs=()
for ((i = 1; i <= 300; i++)); do
	addrs+=("$(printf '2001:2:0:%x::1' "$i")")
done
got=$(checks "${addrs[@]}" | tally)
assert_eq "$got" "200:32 429:268" "checks from 300 /64s of one /48: admitted and refused"
assert_eq "$(checks 198.18.1.1)" 200 "an IPv4 client after them"
assert_eq "$(m table_refusals_total 'reason="prefix_share"')" 268 "refusals for the prefix's share"
assert_eq "$(m table_refusals_total 'reason="full"')" 0 "refusals for a full table"
assert_eq "$(m answers_total 'outcome="table_full"')" 268 "answers counted as table_full"
assert_eq "$(m tracked_sources)" 33 "sources tracked"
assert_eq "$(grep -c 'the addresses of 2001:2::/48 hold their share of the source table' "$CHECK_LOG")" 1 \
	"warnings naming 2001:2::/48 (said once a minute at most)"
ok "said: $(grep -m 1 'hold their share' "$CHECK_LOG")"

# A prefix at its share reuses its own idle entries.
addrs=(198.18.7.200)
for ((i = 1; i <= 31; i++)); do
	addrs+=("198.18.7.$i")
done
assert_eq "$(checks "${addrs[@]}" | tally)" "200:32" "32 sources of 198.18.7.0/24"
assert_eq "$(checks 198.18.7.100)" 429 "a 33rd source of 198.18.7.0/24 (its share is full, none idle)"
sleep 1.1	# 198.18.7.200's 1/s bucket is full again: idle
assert_eq "$(checks 198.18.7.101)" 200 "a new source of 198.18.7.0/24 once one of its entries is idle"
assert_eq "$(checks 198.18.7.102)" 429 "and the next one (its share is full again)"
assert_eq "$(m table_refusals_total 'reason="prefix_share"')" 270 "refusals for the prefix's share"
check_stop
ok "SIGTERM: exit 0"
