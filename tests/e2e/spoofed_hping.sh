#!/usr/bin/env bash
# e2e/spoofed_hping: a spoofed flood from Debian's hping3 (--flood
# --rand-source --udp), a generator nobody on this project wrote, for
# FLOOD_SECONDS against ten clients over their rate, on the smallest source
# table (--max-sources 1024), everyone under `limit default --rate 10
# --burst 5`, no new-source budget.
#
# A flood source sends one packet now and then, so it stays on probation
# (it never comes back to its slot an emission interval later) and the
# flood makes room from its own sources; a client sending 50/s came back
# within its first packets, so it is established and none of its slots may
# be taken. Checks: each client's passed count (top -j) never goes down
# from before the flood to after it, grows between every two samples, grows
# during the flood by at least GROW_MIN_PCT% of what its limit allows, and
# ends equal to its nftables counter behind sluice (its slot survived);
# status -j never shows more slots held than the table's slots, and says
# under_pressure during the flood; the flood's churn is counted (slots
# reclaimed from probation), no established slot is reclaimed; the flood was
# real (at least FLOOD_MIN_SENT frames out of the sender namespace, as many
# seen by XDP).
#
# Network safety: hping3 --rand-source draws sources from all of IPv4, so
# it runs only inside the sender namespace the test makes, whose frames an
# nftables rule there rewrites into 198.18.0.0-198.19.254.255 and a guard
# on the veth's egress holds to 198.18.0.0/15 (tests/lib/hping.sh says
# how). The test asserts that the guard dropped nothing, that every frame
# it counted had been rewritten, that sluice tracks no source outside
# 198.18.0.0/15 and that the receiver saw none pass. `timeout -s KILL`
# bounds hping3 in time; the trap deletes both namespaces.
#
# SPOOFED_HPING_BREAK=evict runs sluice built with an eviction that takes
# established sources as probation ones (make build/tests/sluice-evict):
# the flood reclaims the clients' slots, and the checks must fail (how the
# test was shown to be able to fail).
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"
# shellcheck source=tests/lib/hping.sh
. "$(dirname "$0")/../lib/hping.sh"

BREAK=${SPOOFED_HPING_BREAK:-}
[[ -z $BREAK || $BREAK == evict ]] || fail "SPOOFED_HPING_BREAK must be evict or unset"
if [[ $BREAK == evict ]]; then
	SLUICE=$SLUICE_ROOT/build/tests/sluice-evict
	[[ -x $SLUICE ]] || fail "$SLUICE not built: run make build/tests/sluice-evict"
fi

MAX_SOURCES=1024	# the least sluice attach takes
RATE=10
BURST=5
CLIENTS=10	# 198.19.255.1 .. .10, in a /24 the flood's sources stay out of
CLIENT_PPS=50
CLIENT_PORT=5301
FLOOD_PORT=5302
FLOOD_SECONDS=4
# The flood's sources: the 130 816 addresses from 198.18.0.0 (3323068416),
# the /15 up to the clients' /24.
FLOOD_FIRST=3323068416
FLOOD_SPAN=130816
FLOOD_MIN_SENT=50000
LEAD=1.5	# clients alone before the flood, and after it
GROW_MIN_PCT=80
SAMPLE_GAP=0.4

netns_init hp
netns_setup
sluice_attach --max-sources "$MAX_SOURCES"
sluice_rx limit default --rate "$RATE" --burst "$BURST"

# --- The sender: hping3's frames rewritten into 198.18.0.0/15, a guard ---
hping_sender "$FLOOD_PORT" "$FLOOD_FIRST" "$FLOOD_SPAN"

# --- The receiver: counters behind sluice -----------------------------------
nft_rx_init
nft_rx_counter rx_outside ip saddr != 198.18.0.0/15
for ((c = 1; c <= CLIENTS; c++)); do
	echo "add counter netdev $NFT_TABLE c$c"
	echo "add rule netdev $NFT_TABLE ingress ip saddr 198.19.255.$c udp dport $CLIENT_PORT counter name c$c drop"
done | ip netns exec "$NS_RX" nft -f - || fail "cannot add the clients' nftables counters"
nft_rx_counter flood udp dport "$FLOOD_PORT"

status_field() { sluice_jq ".interfaces[] | select(.interface == \"$IF_RX\") | $1" status; }
stats_sum() { jq '[.packets[] | .[]] | add' <<<"$1"; }
no_bucket() { jq '[.packets[] | .no_bucket // 0] | add' <<<"$1"; }

# Every client's passed count, one line in client order (0 when not
# tracked). One top -j reads them all at once: with ten queries a sample,
# a 4 s flood that loads both CPUs was sampled once only (seen on a busy
# 2-CPU machine), and the check of growth between samples needs two.
client_counts() {
	local top
	top=$(sluice_rx -j top -n 100000) || fail "sluice top -j failed"
	jq -er --argjson n "$CLIENTS" '
		(map(select(.source | startswith("198.19.255."))
		     | {key: .source, value: .passed}) | from_entries) as $p
		| [range(1; $n + 1) | $p["198.19.255.\(.)"] // 0] | map(tostring) | join(" ")' \
		<<<"$top" || fail "bad top -j output"
}

budget=$(status_field '.new_sources.rate // "none"')
assert_eq "$budget" none "new-source budget"
SLOTS=$(status_field .slots)
CAPACITY=$(status_field .capacity)
REFUSED0=$(status_field .refused_sources)
RECL0=$(status_field .reclaimed_sources)
ESTR0=$(status_field .reclaimed_established)
ADM0=$(status_field .new_sources.admitted)

# --- Clients, then the flood, then clients alone -----------------------------
cl_out=$(netns_tmp clients)
samples=()
flood_bg "$cl_out" --src 198.19.255.1 --sources "$CLIENTS" --dport "$CLIENT_PORT" \
	--pps $((CLIENTS * CLIENT_PPS)) --count $((CLIENTS * CLIENT_PPS * 60)) --seconds 60
CLIENTS_PID=$FLOOD_PID
sleep "$LEAD"
samples+=("$(client_counts)")
STATS0=$(stats_snap)
t_before=$(now)
hping_flood_bg "$FLOOD_SECONDS" "$(netns_tmp hping3)"
t_flood=$(now)
max_live=0
max_tracked=0
pressure=false
during=0
while kill -0 "$HPING_PID" 2>/dev/null; do
	sleep "$SAMPLE_GAP"
	st=$(sluice_rx -j status) || fail "sluice status -j failed"
	row=$(jq -c ".interfaces[] | select(.interface == \"$IF_RX\")" <<<"$st")
	live=$(jq -er .slots_live <<<"$row")
	tracked=$(jq -er .tracked_sources <<<"$row")
	((live > max_live)) && max_live=$live
	((tracked > max_tracked)) && max_tracked=$tracked
	[[ $(jq -r .under_pressure <<<"$row") == true ]] && pressure=true
	kill -0 "$HPING_PID" 2>/dev/null || break
	samples+=("$(client_counts)")
	during=$((during + 1))
done
hping_wait
t_end=$(now)
sleep 0.2	# the last frames through the rx queue
t_after=$(now)
samples+=("$(client_counts)")
STATS1=$(stats_snap)
sleep "$LEAD"
kill -TERM "$CLIENTS_PID"
FLOOD_PID=$CLIENTS_PID
flood_wait || fail "sluice-flood (clients) failed: $(cat "$cl_out")"
CL=$(cat "$cl_out")
echo "clients: $CL"
sleep 0.2
samples+=("$(client_counts)")

# --- Safety ---------------------------------------------------------------
hping_check_guard
outside=$(hping_counter netdev sluice_hping_guard outside)
other=$(hping_counter netdev sluice_hping_guard other)
fsent=$(hping_counter netdev sluice_hping_guard flood_out)
rewritten=$(hping_counter ip sluice_hping rewritten)
assert_eq "$(nft_rx_packets rx_outside)" 0 "frames sluice passed from outside 198.18.0.0/15"
TOP=$(sluice_rx -j top -n 100000) || fail "sluice top -j failed"
stray=$(jq -r '[.[] | .source | select(test("^198\\.1[89]\\.") | not)] | length' <<<"$TOP")
assert_eq "$stray" 0 "sources in sluice's table outside 198.18.0.0/15"

# --- The clients -------------------------------------------------------------
# Resets: a passed count that went down between two samples (the client's
# slot taken, its count started again); stalls: one that did not grow
# (samples SAMPLE_GAP or more apart, a token every 1/RATE s). The last
# sample comes after the clients stopped: it counts for resets only.
resets=0
stalls=0
reset_clients=()
for ((c = 0; c < CLIENTS; c++)); do
	r=0
	for ((i = 1; i < ${#samples[@]}; i++)); do
		read -r -a prev <<<"${samples[i - 1]}"
		read -r -a cur <<<"${samples[i]}"
		if ((cur[c] < prev[c])); then
			r=$((r + 1))
		elif ((cur[c] == prev[c] && i < ${#samples[@]} - 1)); then
			stalls=$((stalls + 1))
		fi
	done
	resets=$((resets + r))
	((r == 0)) || reset_clients+=("198.19.255.$((c + 1))")
done
echo "clients' passed counts at each sample (before, during, after the flood, after the clients):"
printf '  %s\n' "${samples[@]}"
assert_eq "$resets" 0 "clients' passed counts that went down between samples (resets: ${reset_clients[*]:-none})"
assert_eq "$stalls" 0 "samples in which a client's passed count did not grow"
assert_ge "$during" 2 "samples of the clients during the flood"
read -r -a last <<<"${samples[-1]}"
for ((c = 1; c <= CLIENTS; c++)); do
	got=$(nft_rx_packets "c$c")
	[[ $got == "${last[c - 1]}" ]] ||
		fail "client 198.19.255.$c: top -j passed ${last[c - 1]}, nftables behind sluice $got (its slot was taken)"
done
ok "each client's passed count (top -j) equals its nftables counter: every slot survived"
# Growth over the flood: from the sample before hping3 started to the one
# after it stopped, at least GROW_MIN_PCT% of RATE x the least time between
# the two samples' reads (from the end of the first to the start of the
# second).
read -r -a s0 <<<"${samples[0]}"
read -r -a s1 <<<"${samples[-2]}"
span=$(calc "$t_after - $t_before")
grow_min=$(calc "$GROW_MIN_PCT * $RATE * $span / 100" %d)
worst=
for ((c = 0; c < CLIENTS; c++)); do
	g=$((s1[c] - s0[c]))
	[[ -z $worst || $g -lt $worst ]] && worst=$g
done
assert_ge "$worst" "$grow_min" \
	"least a client passed during the flood ($(calc "$span" %.2f) s between samples, $GROW_MIN_PCT% of its limit)"
# Over the whole run: within what the limit allows a client sending above
# its rate for the clients' send time.
csecs=$(flood_field "$CL" .seconds)
most=$(calc "$BURST + $RATE * $csecs + 1" %d)
for ((c = 0; c < CLIENTS; c++)); do
	((last[c] <= most)) || fail "client 198.19.255.$((c + 1)): passed ${last[c]}, its limit allows $most in $csecs s"
done
ok "no client passed more than its limit allows ($most in $csecs s)"

# --- The table and the flood -------------------------------------------------
assert_le "$max_live" "$SLOTS" "slots held at the samples during the flood (most; capacity $CAPACITY)"
assert_le "$max_tracked" "$SLOTS" "tracked sources at the samples during the flood (most)"
refused=$(($(status_field .refused_sources) - REFUSED0))
nobucket=$(($(no_bucket "$STATS1") - $(no_bucket "$STATS0")))
reclaimed=$(($(status_field .reclaimed_sources) - RECL0))
est_reclaimed=$(($(status_field .reclaimed_established) - ESTR0))
assert_ge "$reclaimed" "$SLOTS" "slots reclaimed from the flood's own sources on probation (the churn, counted)"
assert_eq "$est_reclaimed" 0 "slots of established sources reclaimed during the flood"
assert_ge "$nobucket" "$refused" "no_bucket drops (one per refused new source, at least)"
assert_eq "$pressure" true "status -j said under_pressure during the flood"
seen=$(($(stats_sum "$STATS1") - $(stats_sum "$STATS0")))
assert_ge "$fsent" "$FLOOD_MIN_SENT" "hping3 frames out of the sender (nftables at its egress)"
assert_ge "$seen" "$FLOOD_MIN_SENT" "frames XDP saw during the flood (stats -j, all reasons)"
admitted=$(($(status_field .new_sources.admitted) - ADM0))
fpassed=$(nft_rx_packets flood)
frows=$(jq '[.[] | select(.source | startswith("198.19.255.") | not)] | length' <<<"$TOP")

cat <<EOF

=== e2e/spoofed_hping summary: --max-sources $MAX_SOURCES ($SLOTS slots), default $RATE/s burst $BURST, no budget ===
flood (hping3)   $fsent frames in $(calc "$t_end - $t_flood" %.1f) s ($(calc "$fsent / ($t_end - $t_flood)" %.0f)/s), sources rewritten into $FLOOD_SPAN addresses
XDP saw          $seen frames during the flood; $fpassed flood frames passed
table            $admitted new entries, $reclaimed slots reclaimed ($est_reclaimed established), $refused new sources refused, $nobucket no_bucket drops;
                 at most $max_live slots held, $max_tracked tracked of $SLOTS; $frows flood sources in it at the end
clients          $CLIENTS x $CLIENT_PPS pkt/s: $(flood_field "$CL" .sent) frames in $csecs s; passed ${last[*]}
                 least growth during the flood $worst (at least $grow_min wanted), resets $resets, stalls $stalls
safety           guard drops: $outside outside 198.18.0.0/15, $other other; rewritten $rewritten
EOF
