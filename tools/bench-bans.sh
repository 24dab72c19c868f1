#!/usr/bin/env bash
# tools/bench-bans.sh: how long `sluice ban load` takes for 100000 and
# 1000000 prefixes (a fresh list, then the same list replaced by a file of
# the same size, half of it new), `ban add` and `ban del` one at a time
# (what fail2ban and CrowdSec call), and the ban table's memory per prefix.
# sluice runs on a veth inside a namespace this script makes and removes;
# no traffic is sent. Medians of BENCH_ROUNDS (default 3) runs.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=SCRIPTDIR/../tests/lib/netns.sh
. tests/lib/netns.sh

case ${1:-} in
-h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
'') ;;
*) echo "bench-bans.sh: takes no arguments (see --help): '$1'" >&2; exit 2 ;;
esac
ROUNDS=${BENCH_ROUNDS:-3}

netns_init bb
netns_setup
sluice_attach >/dev/null

# N prefixes, one a line: /32s of 198.18.0.0/15, then IPv6 /96s from
# OFFSET on (so two files can share half their lines).
gen() { # N OFFSET FILE
	awk -v n="$1" -v o="$2" 'BEGIN {
		for (i = o; i < o + n; i++)
			if (i < 131072) printf "198.%d.%d.%d\n", 18 + int(i / 65536), int(i / 256) % 256, i % 256
			else printf "2001:2:0:0:%x:%x::/96\n", int(i / 65536), i % 65536
	}' >"$3"
}
secs() { # CMD...: wall seconds
	local t0
	t0=$(now)
	"$@" >/dev/null 2>&1 || fail "$* failed"
	calc "$(now) - $t0" %.3f
}
median() { tr ' ' '\n' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# The live trie's memlock: slot 0 of ban_trie holds its id (4 bytes, little
# endian, as bpftool dumps an array of maps).
trie_memlock() {
	local id
	id=$(bpftool -j map dump pinned "$SLUICE_PIN_ROOT/$IF_RX/ban_trie" |
		jq -r '.[0].value | map(ltrimstr("0x")) | reverse | join("")') || return 0
	[[ -n $id ]] && bpftool -j map show id "$((16#$id))" | jq -r '.bytes_memlock // 0'
}

echo "== sluice ban load / add / del, medians of $ROUNDS runs =="
declare -A mem
for n in 100000 1000000; do
	a=$(netns_tmp "a$n") b=$(netns_tmp "b$n")
	gen "$n" 0 "$a"
	gen "$n" $((n / 2)) "$b"
	fresh=() replace=()
	for ((r = 0; r < ROUNDS; r++)); do
		sluice_rx ban load /dev/null --list feed --allow-empty >/dev/null 2>&1
		fresh+=("$(secs sluice_rx ban load "$a" --list feed)")
		replace+=("$(secs sluice_rx ban load "$b" --list feed)")
	done
	mem[$n]=$(trie_memlock)
	printf '%-8s prefixes: load %6.2f s, replace (half new) %6.2f s\n' "$n" \
		"$(median <<<"${fresh[*]}")" "$(median <<<"${replace[*]}")"
done
sluice_rx ban load /dev/null --list feed --allow-empty >/dev/null 2>&1
add=() del=()
for ((r = 0; r < 20; r++)); do
	add+=("$(secs sluice_rx ban add "198.19.9.$r" --for 1h --list f2b)")
	del+=("$(secs sluice_rx ban del "198.19.9.$r" --list f2b)")
done
printf 'ban add, one prefix: %.3f s; ban del: %.3f s (medians of 20, the command start included)\n' \
	"$(median <<<"${add[*]}")" "$(median <<<"${del[*]}")"
if [[ -n ${mem[100000]:-} && -n ${mem[1000000]:-} ]]; then
	printf 'ban table memory: %s bytes at 100000 prefixes, %s at 1000000: %s bytes a prefix\n' \
		"${mem[100000]}" "${mem[1000000]}" \
		"$(calc "(${mem[1000000]} - ${mem[100000]}) / 900000" %.1f)"
fi
