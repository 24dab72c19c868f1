# shellcheck shell=bash
# Helpers for the policy model v2 end-to-end tests, on top of netns.sh
# (source that first): byte counts of the nftables counters behind sluice,
# before/after deltas of `sluice stats -j`, one rule's row of
# `limit list -j`, and the bound GCRA puts on what passes.
#
#   nft_rx_bytes NAME            # bytes of that counter (the IP packet's length)
#   nft_rx_frame_bytes NAME      # the same as Ethernet frame bytes (what sluice counts)
#   stats_snap                   # stats -j now (JSON), for stats_delta
#   stats_delta BEFORE AFTER packets|bytes pass|drop REASON
#   rule_row CIDR [JQ_CONDITION] # the limit list -j row of CIDR (and the condition)
#   rule_field CIDR FIELD [JQ_CONDITION]
#   gcra_max BURST RATE SECONDS  # most a fresh bucket admits over SECONDS
#   flood_wait                   # wait for the flood_bg flood, forget its PID
#
# nftables at the netdev ingress hook sees the packet after the Ethernet
# header was pulled: its counters count IP packet bytes, 14 fewer per packet
# than the frame sluice counts (the veth carries no VLAN tag and no FCS).

NFT_ETH_HLEN=14

nft_rx_bytes() {
	ip netns exec "$NS_RX" nft -j list counter netdev "$NFT_TABLE" "$1" |
		jq -er '.nftables[] | select(.counter) | .counter.bytes' ||
		fail "cannot read nftables counter $1"
}

nft_rx_frame_bytes() {
	echo $(($(nft_rx_bytes "$1") + NFT_ETH_HLEN * $(nft_rx_packets "$1")))
}

stats_snap() {
	sluice_rx -j stats || fail "sluice stats -j failed"
}

# A counter's growth between two stats_snap outputs (absent reason: 0).
stats_delta() { # BEFORE AFTER packets|bytes pass|drop REASON
	local before after
	before=$(jq -er ".$3.$4.$5 // 0" <<<"$1") || fail "bad stats JSON: $1"
	after=$(jq -er ".$3.$4.$5 // 0" <<<"$2") || fail "bad stats JSON: $2"
	echo $((after - before))
}

# The one row of `limit list -j` with this cidr for which the jq condition
# holds (default: true). Fails unless there is exactly one.
rule_row() { # CIDR [JQ_CONDITION]
	local rows n
	rows=$(sluice_rx -j limit list) || fail "sluice limit list -j failed"
	rows=$(jq -c --arg c "$1" "[.[] | select(.cidr == \$c and (${2:-true}))]" <<<"$rows") ||
		fail "bad limit list JSON or condition '${2:-true}'"
	n=$(jq length <<<"$rows")
	[[ $n == 1 ]] || fail "limit list -j: $n rows for $1 with ${2:-true}: $rows"
	jq -c '.[0]' <<<"$rows"
}

rule_field() { # CIDR FIELD [JQ_CONDITION]
	local row
	row=$(rule_row "$1" "${3:-true}")
	jq -e --arg k "$2" 'has($k)' <<<"$row" >/dev/null || fail "limit list -j row of $1 has no .$2: $row"
	jq -r --arg k "$2" '.[$k]' <<<"$row"
}

# GCRA: a fresh bucket admits its burst at once, then RATE per second; over
# SECONDS (first to last packet) that is BURST + RATE x SECONDS, and one more
# for a token that came due during the last packet's trip. Printed rounded
# down to whole packets (or bytes).
gcra_max() { # BURST RATE SECONDS
	calc "$1 + $2 * $3 + 1" %d
}

# Wait for the flood_bg flood and forget its PID, so the cleanup never
# signals a PID the system may have reused since.
flood_wait() {
	local rc=0 pid keep=()
	wait "$FLOOD_PID" || rc=$?
	for pid in "${NETNS_PIDS[@]}"; do
		[[ $pid == "$FLOOD_PID" ]] || keep+=("$pid")
	done
	NETNS_PIDS=("${keep[@]}")
	return "$rc"
}
