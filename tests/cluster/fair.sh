#!/usr/bin/env bash
# cluster/fair: busy hosts share a --cluster rule's limit evenly, whatever
# their sync phases. One source floods a rule of R = 1000/s, B = 500,
# S = 100 ms through H hosts (default 3) joined to one real Redis: host 1
# alone first, then host 2 joins the flood, then (H = 3) host 3. The agents
# are started together, so their syncs fall a few ms apart: the case in
# which first come, first served grants hand the bucket's refill to
# whichever script runs first after it.
#
# "Holds" is the rate each host admits (sluice's passes, counted by an
# nftables counter behind sluice), over a window of W = 3 s that starts
# 2 S after the newest host became busy (its first flood packet). The test
# asserts, per window:
#   - host 1 alone holds at least 0.9 R (a lone busy host has the whole limit);
#   - with K busy hosts, each holds at least 0.9 R / K;
#   - once the others stop, host 1 holds at least 0.9 R again (from 0.5 s
#     after they stopped: they leave the split when they ask for 0).
# It prints, for the record, the time to share: from the first packet of a
# newly busy host to the first moment from which it admits 0.9 R / K over
# the next 0.5 s (counters polled every 50 ms, so to about 50 ms).
#
# usage: fair.sh [H]   (2 or 3, default 3)
# CLUSTER_AGENT_BIN=FILE runs FILE's `cluster join` as the agent:
# build/tests/sluice-fcfs-cluster (grants first come, first served) fails
# here, its newer busy hosts held to about their local share.
set -euo pipefail
# shellcheck source=tests/cluster/lib.sh
. "$(dirname "$0")/lib.sh"

RATE=1000
BURST=500
SYNC_MS=100
PPS=5000	# per busy host: 5 R, far above any fair share
ALONE=4		# s that host 1 floods alone
WIN=3		# s, the measuring window
STEP=4		# s between one host's start and the next's
AFTER=4		# s that host 1 floods alone again after the others stop
SRC=198.18.0.1
NH=${1:-3}
[[ $NH =~ ^[23]$ ]] || fail "host count '$NH': give 2 or 3"
AGENT_BIN=${CLUSTER_AGENT_BIN:-$SLUICE}

cluster_init cf "$NH"
cluster_setup
redis_start
set_rule "$RATE" "$BURST"
for ((n = 1; n <= NH; n++)); do
	agent_start "$n" "$AGENT_BIN"
done
wait_cluster up "$NH" 10
ok "$NH agents up with $NH peers"
failed0=$(for ((n = 1; n <= NH; n++)); do printf 'h%s=%s ' "$n" "$(cfield "$n" sync_failures)"; done)
nft_count_add fair "$SRC"

# Host N's counter, read without jq (the poller runs every 50 ms).
nft_packets() { # N
	local out re='packets ([0-9]+)'
	out=$(nsenter --net="/run/netns/${NS_H[$1]}" nft list counter netdev sluice_cl fair) ||
		fail "cannot read the counter on host $1"
	[[ $out =~ $re ]] || fail "no packet count in host $1's counter: $out"
	echo "${BASH_REMATCH[1]}"
}

# Every 50 ms until END (now()'s clock): "TIME COUNT1 .. COUNTH" into FILE.
poll_counters() { # FILE END
	local line n
	while ! past "$2"; do
		line=$(now)
		for ((n = 1; n <= NH; n++)); do
			line+=" $(nft_packets "$n")"
		done
		echo "$line" >>"$1"
		sleep 0.05
	done
}

# Host n starts at START[n] (now()'s clock); hosts 2.. stop together at
# STOP, host 1 floods on alone for AFTER s. sluice-flood's --align counts
# on CLOCK_MONOTONIC: one offset between the two clocks, read once, places
# them (to a few ms).
base=$(mono)
off=$(calc "$(now) - $base")
STOP_AT=$(calc "1 + $ALONE + ($NH - 1) * $STEP")
END_ALL=$(calc "$STOP_AT + $AFTER")
STOP=$(calc "$base + $off + $STOP_AT")
START=()
for ((n = 1; n <= NH; n++)); do
	lead=$(calc "1 + ($n > 1) * ($ALONE + ($n - 2) * $STEP)" %.3f)
	START[n]=$(calc "$base + $off + $lead")
	secs=$(calc "($n > 1 ? $STOP_AT : $END_ALL) - $lead" %.0f)
	flood_at "$n" "$NETNS_TMP/flood.$n" --src "$SRC" --count $((PPS * secs)) --pps "$PPS" \
		--seconds $((secs + 2)) \
		--align "$(awk -v s="$base" -v l="$lead" 'BEGIN { s += l; printf "60+%.3f", s - 60 * int(s / 60) }')"
done
POLL=$NETNS_TMP/poll
poll_counters "$POLL" "$(calc "$base + $off + $END_ALL + 0.2")" &
CL_PIDS+=($!)
flood_wait
wait "${CL_PIDS[-1]}" || fail "the counter poller failed"
for ((n = 1; n <= NH; n++)); do
	echo "host $n flood: $(cat "$NETNS_TMP/flood.$n")"
done

# Host N's admitted rate over [A, B] (now()'s clock), from the polled
# counters, each end interpolated between the two polls around it.
rate_between() { # N A B
	awk -v col=$(($1 + 1)) -v a="$2" -v b="$3" '
		function at(x,   i) {
			for (i = 2; i <= k; i++)
				if (t[i] >= x)
					return c[i-1] + (c[i] - c[i-1]) * (x - t[i-1]) / (t[i] - t[i-1])
			return -1
		}
		{ k++; t[k] = $1; c[k] = $col }
		END {
			if (t[1] > a || t[k] < b) { print "nan"; exit }
			printf "%.1f\n", (at(b) - at(a)) / (b - a)
		}' "$POLL"
}

# From START of host N, ms until it first admits SHARE/s over the next 0.5 s.
time_to_share() { # N SHARE
	local t=${START[$1]} end
	end=$(calc "${START[$1]} + $STEP - 0.5")
	while ! awk -v a="$t" -v b="$end" 'BEGIN { exit !(a > b) }'; do
		r=$(rate_between "$1" "$t" "$(calc "$t + 0.5")")
		if [[ $r != nan ]] && awk -v r="$r" -v s="$2" 'BEGIN { exit !(r >= s) }'; then
			echo "$(calc "($t - ${START[$1]}) * 1000" %.0f) ms"
			return
		fi
		t=$(calc "$t + 0.05")
	done
	echo "never (> $(calc "($STEP - 0.5) * 1000" %.0f) ms)"
}

# Host N's admitted rate in each of the 6 sync intervals from T.
sync_trace() { # N T
	local i out=""
	for ((i = 0; i < 6; i++)); do
		out+=" $(rate_between "$1" "$(calc "$2 + $i * $SYNC_MS / 1000")" \
			"$(calc "$2 + ($i + 1) * $SYNC_MS / 1000")")"
	done
	echo "$out"
}

short=()
# Every host's rate over the window [A, A + WIN], hosts 1..K busy, each
# against 0.9 R / K: a shortfall is kept in short[], the rates printed
# (WHAT and the window's start FROM ms after the event that opened it).
RATES=""
check_window() { # WHAT A K FROM
	local what=$1 a=$2 k=$3 n share sum=0
	share=$(calc "0.9 * $RATE / $k" %.1f)
	RATES=""
	for ((n = 1; n <= NH; n++)); do
		RATE_OF[n]=$(rate_between "$n" "$a" "$(calc "$a + $WIN")")
		[[ ${RATE_OF[n]} != nan ]] || fail "$what: the polls do not cover the window"
		RATES+=" h$n=${RATE_OF[n]}"
		sum=$(calc "$sum + ${RATE_OF[n]}" %.1f)
	done
	RATES="admitted/s over ${WIN}s from $4 ms:$RATES (sum $sum)"
	for ((n = 1; n <= k; n++)); do
		if awk -v r="${RATE_OF[n]}" -v s="$share" 'BEGIN { exit !(r >= s) }'; then
			ok "$what: host $n admitted ${RATE_OF[n]}/s >= 0.9 R/K = $share"
		else
			short+=("$what: host $n admitted ${RATE_OF[n]}/s, want >= 0.9 R/K = $share")
		fi
	done
}

# The window after host K became busy (for K = 1, past the burst).
for ((k = 1; k <= NH; k++)); do
	from=$((k == 1 ? 500 : 2 * SYNC_MS))
	check_window "K=$k" "$(calc "${START[k]} + $from / 1000")" "$k" "$from"
	tts=""
	((k > 1)) && tts="; host $k's time to share (0.9 R/K over 0.5 s): $(time_to_share "$k" "$(calc "0.9 * $RATE / $k" %.1f)")"
	echo "RESULT fair K=$k busy: $RATES$tts"
	((k == 1)) || echo "RESULT   host $k's admitted/s in its first 6 syncs as busy:$(sync_trace "$k" "${START[k]}")"
done
# Hosts 2.. stopped: host 1, alone again, has the whole limit back.
check_window "alone again" "$(calc "$STOP + 0.5")" 1 500
echo "RESULT fair alone again (the others stopped): $RATES"
echo "RESULT   host 1's admitted/s in the first 6 syncs after:$(sync_trace 1 "$STOP")"
echo "RESULT fair: failed syncs per host: before the floods: $failed0; at the end: $(for ((n = 1; n <= NH; n++)); do printf 'h%s=%s ' "$n" "$(cstatus "$n" .sync_failures)"; done)"
# Every window is printed first; then each host short of its share fails.
((${#short[@]} == 0)) || fail "$(printf '%s; ' "${short[@]}")"
