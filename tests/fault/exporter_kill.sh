#!/usr/bin/env bash
# fault/exporter_kill: the exporter killed with SIGKILL while scrapes are
# being served (4 clients reading at 100 KB/s a scrape of ~60 KB, started
# together, the kill 10-490 ms later: some scrapes are cut off), KILLS
# times (FAULT_EXPORTER_KILLS, default 12), restarted after each kill, while
# a bounded flood runs through the program:
#   - the next scrape after each restart is a 200 that promtool accepts,
#     and no counter went backwards from the scrape before the kill;
#   - traffic never notices: every frame of the flood is counted by the
#     program (its source's passed + dropped equals the frames sent), and
#     once the flood is over the scraped packet counters equal `stats -j`.
# Only its own interface is scraped (-i), so interfaces other tests attach
# and detach meanwhile cannot come and go in its series.
# (tests/exporter/robust.sh covers interfaces detached while scraped.)
#
# Can fail: by an exporter that
# resets the counters it exports at startup (a zeroing write at start: the
# scrape after the restart goes backwards).
# shellcheck disable=SC2153 # FLOOD_PID is lib's
set -euo pipefail
# shellcheck source=tests/exporter/lib.sh
. "$(dirname "$0")/../exporter/lib.sh"
# shellcheck source=tests/fault/policy_files.sh
. "$(dirname "$0")/policy_files.sh"

KILLS=${FAULT_EXPORTER_KILLS:-12}
SLOW=4
SRC=198.18.5.1

exporter_init fe
command -v promtool >/dev/null || skip "promtool not installed (Debian package prometheus)"
netns_setup
sluice_attach >/dev/null
POL=$(netns_tmp pol)
mkdir -p "$POL"
policy_files "$POL"
# The old policy (60 rules: a scrape of some size) and a limit on the flood.
echo "limit set 198.18.5.0/24 --rate 2000 --burst 100" >>"$POL/old"
sluice_rx policy apply "$POL/old" >/dev/null

# Each scrape's counters, as "series value" lines, sorted.
counters_of() { grep -E '^sluice_(packets|bytes|policy_packets)_total' "$1" | sort; }
# Every series of PREV is in NEXT with a value at least as large.
not_backwards() { # PREV NEXT
	awk 'NR == FNR { prev[$1] = $2; next }
	     ($1 in prev) { seen[$1] = 1; if ($2 + 0 < prev[$1] + 0) { print "backwards: " $1 " " prev[$1] " -> " $2; bad = 1 } }
	     END { for (s in prev) if (!(s in seen)) { print "gone: " s; bad = 1 } exit bad }' "$1" "$2"
}

prev=$(netns_tmp prev)
next=$(netns_tmp next)
body=$(netns_tmp body)
exporter_start -i "$IF_RX" >/dev/null
scrape /metrics >"$body" || fail "first scrape"
counters_of "$body" >"$prev"
[[ -s $prev ]] || fail "no counters in the first scrape"
size=$(wc -c <"$body")
ok "a scrape is $size bytes"

FLOOD_OUT=$(netns_tmp flood)
flood_bg "$FLOOD_OUT" --src "$SRC" --count 30000 --pps 3000 --seconds 20
flood_pid=$FLOOD_PID

cut=0 whole=0 early=0
# Past KILLS, more kills (at most 3 x KILLS, sooner after the scrapes
# start) until one lands mid-scrape: the page fits in the socket buffers,
# so a kill after the server wrote it cuts nothing, and 12 random kills
# once all came late.
for ((k = 1; k <= KILLS || (cut == 0 && k <= 4 * KILLS); k++)); do
	dir=$(netns_tmp "k$k")
	mkdir "$dir"
	pids=()
	for ((c = 0; c < SLOW; c++)); do
		in_rx curl -sS --max-time 10 --limit-rate 100k -o "$dir/$c.body" -w '%{http_code}' \
			"$EXPORTER_URL/metrics" >"$dir/$c.code" 2>/dev/null &
		pids+=($!)
		netns_track_pid "$!"
	done
	if ((k <= KILLS)); then
		sleep "$(printf '0.%03d' $((RANDOM % 481 + 10)))"
	else
		sleep "$(printf '0.%03d' $((RANDOM % 50 + 5)))"
	fi
	kill -KILL "$EXPORTER_PID"
	wait "$EXPORTER_PID" 2>/dev/null || true
	for ((c = 0; c < SLOW; c++)); do
		rc=0
		wait "${pids[$c]}" || rc=$?
		# curl: 0 done, 7 refused (not yet listening), 18 partial
		# body, 52 no reply, 56 reset: the last three cut off by the kill.
		case $rc in
		0) whole=$((whole + 1)) ;;
		7) early=$((early + 1)) ;;
		18 | 52 | 56) cut=$((cut + 1)) ;;
		*) fail "kill $k: slow client $c: curl exit $rc" ;;
		esac
	done
	exporter_start -i "$IF_RX" >/dev/null
	scrape /metrics >"$body" || fail "kill $k: the scrape after the restart failed"
	out=$(promtool check metrics <"$body" 2>&1) || fail "kill $k: promtool: $out"
	[[ -z $out ]] || fail "kill $k: the scrape after the restart does not lint clean: $out"
	counters_of "$body" >"$next"
	bad=$(not_backwards "$prev" "$next") || fail "kill $k: $bad"
	mv "$next" "$prev"
done
ok "$((k - 1)) exporter kills: $cut scrapes cut off by the kill, $whole finished before it, $early not yet accepted; every scrape after a restart a clean 200, no counter backwards"
((cut > 0)) || fail "no kill landed while a scrape was in flight"

wait "$flood_pid" || fail "sluice-flood failed"
sent=$(flood_field "$(cat "$FLOOD_OUT")" .sent)
sleep 0.2
q=$(sluice_rx -j query "$SRC")
counted=$(jq '.passed + .dropped' <<<"$q")
assert_eq "$counted" "$sent" "frames of $SRC counted by the program (passed $(jq .passed <<<"$q"), dropped $(jq .dropped <<<"$q")) against frames sent"
scrape /metrics >"$body" || fail "last scrape"
stats=$(sluice_rx -j stats)
for action in pass drop; do
	for reason in $(jq -r ".packets.$action | keys[]" <<<"$stats"); do
		want=$(jq -r ".packets.$action.$reason" <<<"$stats")
		got=$(series "$body" "sluice_packets_total{interface=\"$IF_RX\",action=\"$action\",reason=\"$reason\"}")
		[[ $got == "$want" ]] || fail "scraped $action/$reason $got, stats -j $want"
	done
done
ok "the scrape's packet counters equal stats -j"
exporter_stop TERM
echo "FIGURES exporter_kill kills=$((k - 1)) cut=$cut whole=$whole sent=$sent"
