#!/usr/bin/env bash
# e2e/algos: each algorithm applies on the wire as `sluice simulate`
# predicts. For token-bucket, fixed-window and sliding-window in turn, one
# source floods its own rule at 30 x its limit for 1.5 s; sluice-flood
# writes every packet's send time (--timestamps), and what the rule admitted
# (its pass count in `limit list -j`) must be within TOL % of what
# `sluice simulate --trace` predicts for that algorithm on those times, and
# more than 2 x TOL % away from what it predicts for the other two: the
# count on the wire tells which algorithm ran. Every packet sent must reach
# XDP (the rule's pass + drop grew by exactly what was sent), or the
# comparison would mean nothing.
#
# The limits (1000/s; burst 100; windows of 1 s) make the three differ by
# hundreds of packets on a 1.5 s flood that starts 0.7 s into a window
# (sluice-flood --align 1+0.7): the token bucket admits 100 + 1.5 x 1000,
# the fixed window 1000 in each of the three windows the flood touches, the
# sliding window 1000 + 1000 + 0.2 x 1000. At other phases two of them can
# meet (the sliding window's count meets the token bucket's when a flood
# starts just after a window boundary); should the machine start the flood
# that late, a flood whose trace cannot tell its algorithm from another is
# repeated, from a new source (a fresh bucket), up to TRIES times. The
# phase only decides whether the test can tell the algorithms apart; the
# prediction itself is from the trace, whatever the phase.
#
# Why TOL = 3 %: the simulator clocks a packet at its send time (one per
# sendmmsg batch of up to 32), sluice at XDP, microseconds later; both are
# CLOCK_MONOTONIC and the windows align to it alike, so only packets sent
# within those microseconds of a window boundary or of a token's refill
# can be judged differently: a packet or two of ~1600-3000. Measured here:
# 0 or 1 packet of difference (the token bucket), 0 for the windows.
#
# SIM_RATE=N runs the simulator with another rate than the rules' (to show
# that the test fails when the prediction is for another limit).
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"

RATE=1000	# per second, every rule
BURST=100	# the token bucket's
WINDOW=1s	# the windows': budget RATE x WINDOW = 1000
PPS=30000	# the flood: far above the limit, well below what the veth drops
ALIGN=1+0.7	# starts 0.7 s into a 1 s window
COUNT=45000	# 1.5 s at PPS; --seconds bounds it anyway
TOL=3		# percent
TRIES=3
SIM_RATE=${SIM_RATE:-$RATE}

netns_init alg
netns_setup
sluice_attach
nft_rx_init

# One rule, source and nftables counter per algorithm: 198.18.21.0/24 for
# the first, .22 for the second, ...
algos=(token-bucket fixed-window sliding-window)
for i in "${!algos[@]}"; do
	net=198.18.$((21 + i)).0/24
	if [[ ${algos[i]} == token-bucket ]]; then
		sluice_rx limit set "$net" --rate "$RATE" --burst "$BURST"
	else
		sluice_rx limit set "$net" --rate "$RATE" --algo "${algos[i]}" --window "$WINDOW"
	fi
	rule=$(rule_field "$net" rule)
	if [[ ${algos[i]} == token-bucket ]]; then
		[[ $rule != *--algo* || $rule == *"--algo token-bucket"* ]] ||
			fail "rule $net is not a token bucket: $rule"
	else
		[[ $rule == *"--algo ${algos[i]}"* ]] || fail "rule $net is not ${algos[i]}: $rule"
	fi
	ok "rule $net: $rule"
	nft_rx_counter "a$i" ip saddr "$net"
done

# |a - b| > pct % of b
apart() { awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d > b * p / 100) }'; }

# `sluice query` of SRC right after its flood, under a window algorithm: the
# window it shows is the one the flood's last packet fell in (else the
# machine took a whole window to get here: said, not failed), a fixed
# window's count is the whole budget with nothing left and a retry-after
# that ends the window; a sliding window's previous count is the whole
# budget (within the 2 units its rounding may leave) and its estimate is the count plus that count weighed by what is
# left of the window (rounded up), with what is left of the budget beside it.
query_window() { # ALGO SRC TRACE
	local algo=$1 src=$2 trace=$3 q last_w w0 el cnt prev est tok ret share gap_ms slack
	q=$(sluice_rx -j query "$src") || fail "sluice query $src failed"
	last_w=$(tail -n 1 "$trace" | cut -d. -f1)	# 1 s windows: the whole seconds
	w0=$(jq -r '.window.start_ns' <<<"$q")
	[[ $w0 =~ ^[0-9]+$ ]] || fail "$algo: query -j has no window: $q"
	if [[ $((w0 / 1000000000)) != "$last_w" ]]; then
		echo "$algo: query came a window after the flood's last packet: its state not checked"
		return 0
	fi
	el=$(jq -r .window.elapsed_ns <<<"$q")
	cnt=$(jq -r .window.count <<<"$q")
	tok=$(jq -r .tokens <<<"$q")
	ret=$(jq -r .retry_after_ns <<<"$q")
	assert_eq "$(jq -r .window.budget <<<"$q")" "$RATE" "$algo: query: the window's budget"
	if [[ $algo == fixed-window ]]; then
		assert_eq "$cnt" "$RATE" "$algo: query: the flood's last window is spent"
		assert_eq "$tok" 0 "$algo: query: nothing left"
		assert_eq $((ret + el)) 1000000000 "$algo: query: retry-after is the window's end"
		return 0
	fi
	prev=$(jq -r .window.previous <<<"$q")
	est=$(jq -r .window.estimate <<<"$q")
	# spent: the previous window's share, rounded up, may leave 1 or 2
	# unused; and the count there only reaches the budget as the window
	# before it weighs less, so frames the sender did not send in its last
	# moments (a busy machine stalls it; 1.5 s of flood can also begin
	# there) leave up to RATE x that gap unspent. The gap is the trace's:
	# from the last frame sent in that window to the window's end.
	gap_ms=$(awk -F. -v w=$((last_w - 1)) '$1 == w { f = "0." $2; if (f + 0 > m) m = f + 0; n++ }
		END { printf "%d", n ? (1 - m) * 1000 + 0.999 : 1000 }' "$trace")
	slack=$((2 + (RATE * gap_ms + 999) / 1000))
	[[ $prev -le $RATE && $prev -ge $((RATE - slack)) ]] ||
		fail "$algo: query: the window before the flood's last holds $prev, not its budget $RATE (within $slack: the trace's last frame in it ${gap_ms} ms before its end)"
	ok "$algo: query: the window before the flood's last was spent ($prev, within $slack)"
	share=$(((prev * (1000000000 - el) + 999999999) / 1000000000))
	# the weight is rounded up to 2^-20 of the window first: one unit more at most
	[[ $est -ge $((cnt + share)) && $est -le $((cnt + share + 1)) ]] ||
		fail "$algo: query: estimate $est, count $cnt + previous $prev x $((1000000000 - el)) ns left = $((cnt + share))"
	ok "$algo: query: estimate $est = count $cnt + the previous window's $share"
	assert_eq "$tok" $((est >= RATE ? 0 : RATE - est)) "$algo: query: what is left beside the estimate"
	if ((est >= RATE)); then
		[[ $ret -gt 0 ]] || fail "$algo: query: over the budget and no retry-after"
	else
		assert_eq "$ret" 0 "$algo: query: room left, so no retry-after"
	fi
}

# One flood from SRC against rule NET of algorithm ALGO (index I); TELLS=0
# when the trace could not tell ALGO from another algorithm (flood again).
# (Called as a plain command, so errexit holds inside it.)
flood_one() { # I ALGO NET SRC
	local i=$1 algo=$2 net=$3 src=$4 trace out sent p0 d0 n0 passed dropped sim predicted other o
	trace=$(netns_tmp "trace-$algo-${src##*.}")
	p0=$(rule_field "$net" passed)
	d0=$(rule_field "$net" dropped)
	n0=$(nft_rx_packets "a$i")
	out=$(flood --src "$src" --count "$COUNT" --pps "$PPS" --seconds 3 \
		--align "$ALIGN" --timestamps "$trace")
	echo "flood $algo from $src: $out"
	[[ $algo == token-bucket ]] || query_window "$algo" "$src" "$trace"
	sent=$(flood_field "$out" .sent)
	[[ $sent -ge $((COUNT * 9 / 10)) ]] ||
		fail "flood $algo sent only $sent of $COUNT packets: the machine is too slow for this test"
	assert_eq "$(wc -l <"$trace")" "$sent" "$algo: trace lines (one per packet sent)"
	sleep 0.2 # the last frames leave the veth's ring

	passed=$(($(rule_field "$net" passed) - p0))
	dropped=$(($(rule_field "$net" dropped) - d0))
	[[ $((passed + dropped)) == "$sent" ]] ||
		fail "$algo: XDP saw $((passed + dropped)) of the $sent packets sent (the veth dropped some before XDP?): the comparison with the simulator would mean nothing"
	ok "$algo: every packet sent reached XDP ($sent)"
	assert_eq $(($(nft_rx_packets "a$i") - n0)) "$passed" "$algo: nftables behind sluice counts its passes"


	sim=$("$SLUICE" simulate --trace "$trace" --rate "$SIM_RATE" --burst "$BURST" \
		--window "$WINDOW" -j) || fail "sluice simulate --trace failed"
	assert_eq "$(jq -r .arrivals <<<"$sim")" "$sent" "$algo: the simulator's arrivals"
	predicted=$(jq -er --arg a "$algo" '.algorithms[] | select(.name == $a) | .admitted' \
		<<<"$sim") || fail "no $algo in sluice simulate -j: $sim"
	echo "$algo: sluice admitted $passed; the simulator predicts $(jq -r \
		'[.algorithms[] | "\(.name) \(.admitted)"] | join(", ")' <<<"$sim")"
	assert_near "$passed" "$predicted" "$TOL" "$algo: admitted on the wire vs simulated"
	for o in "${algos[@]}"; do
		[[ $o != "$algo" ]] || continue
		other=$(jq -er --arg a "$o" '.algorithms[] | select(.name == $a) | .admitted' \
			<<<"$sim") || fail "no $o in sluice simulate -j: $sim"
		if ! apart "$passed" "$other" $((2 * TOL)); then
			echo "this trace does not tell $algo from $o ($passed vs $other predicted)"
			TELLS=0
			return 0
		fi
	done
	ok "$algo: more than $((2 * TOL))% away from what the other algorithms would admit"
	TELLS=1
}

for i in "${!algos[@]}"; do
	algo=${algos[i]}
	net=198.18.$((21 + i)).0/24
	for ((try = 1; ; try++)); do
		flood_one "$i" "$algo" "$net" "198.18.$((21 + i)).$((6 + try))"
		((TELLS == 0)) || break
		((try < TRIES)) || fail "$algo: $TRIES floods in a row could not tell it from another algorithm"
	done
done
