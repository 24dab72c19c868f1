#!/usr/bin/env bash
# e2e/allow_deny: real traffic from denied sources is all dropped as
# "denied", from allowed ones all passed as "allowed", the most specific
# prefix winning, for IPv4 and IPv6 alike.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

COUNT=1000
DPORT=5001
# source  expected-action  expected-policy
CASES=(
	"198.18.2.10 deny 198.18.2.0/24"
	"198.18.2.20 allow 198.18.2.16/28"
	"2001:2:0:d::10 deny 2001:2:0:d::/64"
	"2001:2:0:a::10 allow 2001:2:0:a::/64"
)

netns_init ad
netns_setup
sluice_attach
# A tight default, so anything that fell through to it would show.
sluice_rx limit default --rate 10 --burst 10
sluice_rx deny 198.18.2.0/24
sluice_rx allow 198.18.2.16/28	# inside the denied /24: more specific wins
sluice_rx deny 2001:2:0:d::/64
sluice_rx allow 2001:2:0:a::/64
nft_rx_init
for i in "${!CASES[@]}"; do
	read -r src _ _ <<<"${CASES[$i]}"
	if [[ $src == *:* ]]; then
		nft_rx_counter "c$i" ip6 saddr "$src" udp dport "$DPORT"
	else
		nft_rx_counter "c$i" ip saddr "$src" udp dport "$DPORT"
	fi
done

allowed0=$(sluice_stat pass allowed)
denied0=$(sluice_stat drop denied)

for i in "${!CASES[@]}"; do
	read -r src action policy <<<"${CASES[$i]}"
	if [[ $src == *:* ]]; then dst=$RX6; else dst=$RX4; fi
	# The veth pushes back on the sender rather than drop, so all arrive.
	out=$(flood --src "$src" --dst "$dst" --dport "$DPORT" --count "$COUNT" --pps 10000 --seconds 5)
	assert_eq "$(flood_field "$out" .sent)" "$COUNT" "$src: flood sent all its packets"
	q=$(sluice_rx -j query "$src")
	assert_eq "$(jq -r .action <<<"$q")" "$action" "$src: action"
	assert_eq "$(jq -r .policy <<<"$q")" "$policy" "$src: policy"
	# Allow and deny need no bucket, so the source takes no table entry.
	assert_eq "$(jq -r .tracked <<<"$q")" false "$src: tracked"
	if [[ $action == deny ]]; then
		assert_eq "$(nft_rx_packets "c$i")" 0 "$src: packets the stack saw"
	else
		assert_eq "$(nft_rx_packets "c$i")" "$COUNT" "$src: packets the stack saw"
	fi
done

# Only these floods fall under allow or deny (the kernel's own packets from
# the tx end come from 198.18.0.1, 2001:2::1 and fe80::/10: the default).
assert_eq $(($(sluice_stat pass allowed) - allowed0)) $((2 * COUNT)) "stats: passed as allowed"
assert_eq $(($(sluice_stat drop denied) - denied0)) $((2 * COUNT)) "stats: dropped as denied"
assert_eq "$(sluice_jq '.[] | select(.cidr == "198.18.2.0/24") | .dropped' limit list)" "$COUNT" \
	"policy counter of 198.18.2.0/24"
assert_eq "$(sluice_jq '.[] | select(.cidr == "198.18.2.16/28") | .passed' limit list)" "$COUNT" \
	"policy counter of 198.18.2.16/28"
