#!/usr/bin/env bash
# What the CLI must do right, one check set per name:
#   help        every command and subcommand has --help: exit 0, "Usage:"
#   noargs      bare `sluice` (and `sluice limit`): usage on stderr, exit 2
#   json        stats -j and limit list -j have the shapes doc/commands/README.md gives
#   roundtrip   policy show, re-applied, gives the same policy back
#   precedence  the most specific prefix wins in query, IPv4 and IPv6
#   v6-not-v4   an IPv6 rule, even ::/0, never catches an IPv4 source
#   v4-mapped   query ::ffff:a.b.c.d answers for IPv4 source a.b.c.d
#   limit-del   deleting a rule falls back to the next shorter prefix
#   attach-opts attach IFACE --mode skb --max-sources N, as documented
#   write-error output that cannot be written is an error (exit 1)
#   stats-watch stats -j --watch 1 prints a report a second, stops cleanly
#               on SIGINT (exit 0, nothing on stderr, no leak report)
#   roundtrip-v2 policy show round trip of a policy using every v2 option;
#               limit list -j and query -j carry the new keys
#   identity    a rule is its CIDR and match: set replaces, del names it
#   ban-empty   ban list and ban del on a source table without bans
#   apply-message policy apply names the default it set, and the rules
#   save-diff   policy save writes the live policy (to FILE, or to
#               /etc/sluice/IFACE.policy) as policy show prints it; policy
#               diff names each rule apply would add, remove or change, the
#               default and the budget too, in text and -j; bad input exits
#               2 (a bad file, a directory), an unwritable place 1
# usage: tests/cli/positive.sh NAME
# The t_* functions are called by name; jq programs are in single quotes.
# shellcheck disable=SC2317,SC2016
set -uo pipefail

# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

name=${1:-}

# The policy JSON without counters, one rule a line, for comparisons.
rules_of() { jq -c '.[] | {cidr, action, rate, burst}' "$1"; }

# query ADDR -j on $IF: "POLICY ACTION".
query_is() { # ADDR POLICY ACTION
	sl -i "$IF" -j query "$1"
	local got
	if ((RC != 0)); then
		fail_check "query $1" "exit $RC: $(head -c 300 "$ERR")"
		return
	fi
	got=$(jq -r '"\(.policy) \(.action)"' "$OUT")
	if [[ $got == "$2 $3" ]]; then
		pass_check "query $1 -> $got"
	else
		fail_check "query $1 -> $got, want $2 $3" "$(head -c 300 "$OUT")"
	fi
}

# RC, stdout and stderr of the last sl, as a check; stderr "-" takes the
# notices of a change (quiet_err).
expect() { # MSG WANT_RC STDOUT_RE|- STDERR_RE|-
	local msg=$1 want=$2 ore=$3 ere=$4 bad=()
	((RC == want)) || bad+=("exit $RC, want $want")
	if [[ $ore == - ]]; then
		[[ -s $OUT ]] && bad+=("stdout not empty: $(head -c 200 "$OUT")")
	elif ! grep -qE -e "$ore" "$OUT"; then
		bad+=("stdout does not match /$ore/: $(head -c 200 "$OUT")")
	fi
	if [[ $ere == - ]]; then
		quiet_err || bad+=("stderr not empty (but notices): $(head -c 200 "$ERR")")
	elif ! grep -qE -e "$ere" "$ERR"; then
		bad+=("stderr does not match /$ere/: $(head -c 200 "$ERR")")
	fi
	if ((${#bad[@]})); then
		fail_check "$msg" "${bad[@]}"
	else
		pass_check "$msg"
	fi
}

t_help() {
	local cmds=() c
	# Every command `sluice help` lists, so new ones are covered too.
	sl_ok help
	mapfile -t cmds < <(sed -nE 's/^ *(Usage: )?sluice +(\[[^]]*\] +)*([a-z][a-z-]*).*/\3/p' "$OUT" |
		grep -vx OBJECT | sort -u)
	((${#cmds[@]} >= 10)) || die "sluice help lists only: ${cmds[*]}"
	echo "# commands from 'sluice help': ${cmds[*]}"
	for c in "${cmds[@]}" "limit default" "limit set" "limit del" "limit list" \
		"policy apply" "policy check" "policy show" "policy save" "policy diff"; do
		# shellcheck disable=SC2086 # c holds one or two words
		sl $c --help
		expect "sluice $c --help" 0 '^Usage: ' -
	done
	for c in --help -h help; do
		sl "$c"
		expect "sluice $c" 0 '^Usage: ' -
	done
}

t_noargs() {
	sl
	expect "sluice with no arguments: exit 2, usage on stderr" 2 - '^Usage: '
	sl -j
	expect "sluice -j alone: exit 2, usage on stderr" 2 - '^Usage: '
	sl limit
	expect "sluice limit alone: exit 2, usage on stderr" 2 - '^Usage: '
}

t_json() {
	cli_attach "$IF" --max-sources 4096
	sl_ok -i "$IF" limit default --rate 100 --burst 150
	sl_ok -i "$IF" limit set 198.18.0.0/16 --rate 10
	sl_ok -i "$IF" allow 198.18.5.0/24
	sl_ok -i "$IF" deny 2001:2::/48

	sl_ok -i "$IF" stats -j
	cp "$OUT" "$CLI_TMP/stats.json"
	check "stats -j is one JSON object" jq -e 'type == "object"' "$CLI_TMP/stats.json"
	check "stats -j .interface is the interface" \
		jq -e --arg i "$IF" '.interface == $i' "$CLI_TMP/stats.json"
	local u a r
	for u in packets bytes; do
		for r in within_limit allowed non_ip malformed; do
			check "stats -j .$u.pass.$r is a number" \
				jq -e ".$u.pass.$r | type == \"number\"" "$CLI_TMP/stats.json"
		done
		for r in rate_limited denied; do
			check "stats -j .$u.drop.$r is a number" \
				jq -e ".$u.drop.$r | type == \"number\"" "$CLI_TMP/stats.json"
		done
		for a in pass drop; do
			check "stats -j .$u.$a holds only numbers" \
				jq -e ".$u.$a | type == \"object\" and all(.[]; type == \"number\")" \
				"$CLI_TMP/stats.json"
		done
		check "stats -j .$u has exactly pass and drop" \
			jq -e ".$u | keys == [\"drop\", \"pass\"]" "$CLI_TMP/stats.json"
	done
	check "stats -j: no reason is both pass and drop" \
		jq -e '(.packets.pass | keys) - (.packets.drop | keys) == (.packets.pass | keys)' \
		"$CLI_TMP/stats.json"
	check "stats -j: bytes has the reasons of packets" \
		jq -e '(.bytes.pass | keys) == (.packets.pass | keys) and (.bytes.drop | keys) == (.packets.drop | keys)' \
		"$CLI_TMP/stats.json"
	check "stats -j .tracked_sources is a number" \
		jq -e '.tracked_sources | type == "number" and . >= 0' "$CLI_TMP/stats.json"

	sl_ok -j -i "$IF" stats
	check "sluice -j -i IF stats: same keys as stats -j" \
		cmp -s <(jq -S 'paths | map(tostring) | join(".")' "$OUT") \
		<(jq -S 'paths | map(tostring) | join(".")' "$CLI_TMP/stats.json")

	sl_ok -i "$IF" limit list -j
	cp "$OUT" "$CLI_TMP/list.json"
	check "limit list -j is an array of objects" \
		jq -e 'type == "array" and length == 4 and all(.[]; type == "object")' "$CLI_TMP/list.json"
	check "limit list -j: every entry has cidr, action, rate, burst" \
		jq -e 'all(.[]; (.cidr | type == "string") and (.action | IN("limit", "allow", "deny"))
			and (.rate | type == "number") and (.burst | type == "number"))' "$CLI_TMP/list.json"
	check "limit list -j: exactly one default, {cidr: default, limit, 100, 150}" \
		jq -e '[.[] | select(.cidr == "default")] == [.[] | select(.cidr == "default")][:1]
			and ([.[] | select(.cidr == "default") | {cidr, action, rate, burst}]
			== [{cidr: "default", action: "limit", rate: 100, burst: 150}])' "$CLI_TMP/list.json"
	check "limit list -j: 198.18.0.0/16 limit 10, burst defaults to the rate" \
		jq -e 'any(.[]; {cidr, action, rate, burst} == {cidr: "198.18.0.0/16", action: "limit", rate: 10, burst: 10})' \
		"$CLI_TMP/list.json"
	check "limit list -j: 198.18.5.0/24 allow" \
		jq -e 'any(.[]; .cidr == "198.18.5.0/24" and .action == "allow")' "$CLI_TMP/list.json"
	check "limit list -j: 2001:2::/48 deny" \
		jq -e 'any(.[]; .cidr == "2001:2::/48" and .action == "deny")' "$CLI_TMP/list.json"

	# Before any `limit default`, the default is allow.
	cli_attach "$NA"
	sl_ok -i "$NA" limit list -j
	check "limit list -j on a fresh attach: [{cidr: default, action: allow}]" \
		jq -e 'length == 1 and .[0].cidr == "default" and .[0].action == "allow"' "$OUT"
	sl_ok detach "$NA"

	sl_ok -i "$IF" query 198.18.9.9 -j
	check "query -j: policy, action, tokens, retry_after_seconds" \
		jq -e '.policy == "198.18.0.0/16" and .action == "limit" and (.tokens | type == "number")
			and (.retry_after_seconds | type == "number")' "$OUT"
	sl_ok -i "$IF" top -j
	check "top -j is an array" jq -e 'type == "array"' "$OUT"
	sl_ok -i "$IF" status -j
	check "status -j is one JSON document naming the interface" \
		jq -e --arg i "$IF" '[.. | strings] | index($i) != null' "$OUT"
}

t_roundtrip() {
	cli_attach "$IF" --max-sources 4096
	cat >"$CLI_TMP/a.pol" <<-'EOF'
		limit default --rate 500 --burst 900
		limit set 198.18.0.0/15 --rate 1000000000 --burst 1000000000
		limit set 198.18.7.0/24 --rate 1 --burst 1
		allow 198.18.7.128/25
		deny 198.18.7.200/32
		deny 198.19.0.0/16
		limit set 2001:2::/48 --rate 30 --burst 7
		allow 2001:2:0:1::/64
		deny 2001:2:0:1::1/128
		limit set 0.0.0.0/0 --rate 3
	EOF
	cat >"$CLI_TMP/b.pol" <<-'EOF'
		limit default --rate 1
		deny 198.18.0.0/16
	EOF
	local i
	for i in 1 2; do
		if ((i == 1)); then
			sl_ok -i "$IF" policy apply "$CLI_TMP/a.pol"
		else
			# No default: the default is "not limited" and must stay so.
			grep -v default "$CLI_TMP/a.pol" >"$CLI_TMP/a2.pol"
			sl_ok -i "$IF" policy apply "$CLI_TMP/a2.pol"
		fi
		sl_ok -i "$IF" limit list -j
		rules_of "$OUT" >"$CLI_TMP/list1"
		sl_ok -i "$IF" policy show
		cp "$OUT" "$CLI_TMP/show1"
		sl_ok -i "$IF" policy apply "$CLI_TMP/b.pol"
		sl_ok -i "$IF" limit list -j
		rules_of "$OUT" >"$CLI_TMP/list-b"
		check "pass $i: applying another policy changes limit list" \
			bash -c "! cmp -s '$CLI_TMP/list1' '$CLI_TMP/list-b'"
		sl "-i" "$IF" policy apply "$CLI_TMP/show1"
		expect "pass $i: policy apply of policy show's output" 0 . -
		sl_ok -i "$IF" limit list -j
		rules_of "$OUT" >"$CLI_TMP/list2"
		if cmp -s "$CLI_TMP/list1" "$CLI_TMP/list2"; then
			pass_check "pass $i: limit list -j after the round trip is identical ($(wc -l <"$CLI_TMP/list1") entries)"
		else
			fail_check "pass $i: limit list -j after the round trip differs" \
				"$(diff "$CLI_TMP/list1" "$CLI_TMP/list2" | head -n 10)"
		fi
		sl_ok -i "$IF" policy show
		check "pass $i: policy show after the round trip is identical" \
			cmp -s "$CLI_TMP/show1" "$OUT"
		check "pass $i: policy show's output passes policy check" \
			nsenter --net="/run/netns/$NS_RX" "$SLUICE" policy check "$CLI_TMP/show1"
	done
	sl_ok -i "$IF" limit list -j
	check "no default in the file: the default is allow" \
		jq -e '.[0] | .cidr == "default" and .action == "allow"' "$OUT"
}

precedence_rules() {
	sl_ok -i "$IF" limit default --rate 1000
	sl_ok -i "$IF" limit set 198.18.0.0/16 --rate 10
	sl_ok -i "$IF" allow 198.18.5.0/24
	sl_ok -i "$IF" deny 198.18.5.128/25
	sl_ok -i "$IF" limit set 2001:2::/48 --rate 20
	sl_ok -i "$IF" allow 2001:2:0:5::/64
	sl_ok -i "$IF" deny 2001:2:0:5:8000::/65
}

t_precedence() {
	cli_attach "$IF" --max-sources 4096
	precedence_rules
	query_is 198.18.5.200 198.18.5.128/25 deny
	query_is 198.18.5.128 198.18.5.128/25 deny
	query_is 198.18.5.127 198.18.5.0/24 allow
	query_is 198.18.5.1 198.18.5.0/24 allow
	query_is 198.18.9.9 198.18.0.0/16 limit
	query_is 198.18.255.255 198.18.0.0/16 limit
	query_is 198.19.0.1 default limit
	query_is 198.17.255.255 default limit
	query_is 2001:2:0:5:8000::1 2001:2:0:5:8000::/65 deny
	query_is 2001:2:0:5:ffff:ffff:ffff:ffff 2001:2:0:5:8000::/65 deny
	query_is 2001:2:0:5::1 2001:2:0:5::/64 allow
	query_is 2001:2:0:5:7fff:ffff:ffff:ffff 2001:2:0:5::/64 allow
	query_is 2001:2:0:9::9 2001:2::/48 limit
	query_is 2001:2:1::1 default limit
	query_is 2001:3::1 default limit
	# The order rules were added in does not matter: broadest last.
	sl_ok -i "$IF" policy apply /dev/null
	sl_ok -i "$IF" deny 198.18.5.128/25
	sl_ok -i "$IF" allow 198.18.5.0/24
	sl_ok -i "$IF" limit set 198.18.0.0/16 --rate 10
	query_is 198.18.5.200 198.18.5.128/25 deny
	query_is 198.18.5.1 198.18.5.0/24 allow
	query_is 198.18.9.9 198.18.0.0/16 limit
	query_is 198.19.0.1 default allow
}

t_v6_not_v4() {
	cli_attach "$IF" --max-sources 4096
	sl_ok -i "$IF" limit default --rate 1000
	sl_ok -i "$IF" deny ::/0
	query_is 2001:2::1 ::/0 deny
	query_is 198.18.0.1 default limit
	sl_ok -i "$IF" policy apply /dev/null
	sl_ok -i "$IF" limit set ::/1 --rate 5
	query_is 2001:2::1 ::/1 limit
	query_is ::1 ::/1 limit
	query_is 198.18.0.1 default allow
	# And an IPv4 rule never catches IPv6.
	sl_ok -i "$IF" policy apply /dev/null
	sl_ok -i "$IF" deny 0.0.0.0/0
	query_is 198.18.0.1 0.0.0.0/0 deny
	query_is 2001:2::1 default allow
}

# A dual-stack gateway's name for an IPv4 client, ::ffff:a.b.c.d, is that
# IPv4 source to query (and to ban del): the IPv4 rule decides, not ::/0.
t_v4_mapped() {
	cli_attach "$IF" --max-sources 4096
	sl_ok -i "$IF" deny ::/0
	sl_ok -i "$IF" limit set 198.18.0.0/16 --rate 5
	query_is ::ffff:198.18.0.1 198.18.0.0/16 limit
	query_is ::FFFF:c612:0001 198.18.0.0/16 limit
	query_is 2001:2::1 ::/0 deny
	sl -i "$IF" query ::ffff:198.18.0.1
	expect "query ::ffff:198.18.0.1 names the IPv4 source" 0 '^198\.18\.0\.1 on ' -
	sl -i "$IF" ban del ::ffff:198.18.0.1
	expect "ban del ::ffff:198.18.0.1 without a ban" 1 - 'no ban on ::ffff:198\.18\.0\.1'
}

t_limit_del() {
	cli_attach "$IF" --max-sources 4096
	precedence_rules
	sl -i "$IF" limit del 198.18.5.128/25
	expect "limit del 198.18.5.128/25" 0 . -
	query_is 198.18.5.200 198.18.5.0/24 allow
	sl -i "$IF" limit del 198.18.5.0/24
	expect "limit del 198.18.5.0/24" 0 . -
	query_is 198.18.5.200 198.18.0.0/16 limit
	sl -i "$IF" limit del 198.18.0.0/16
	expect "limit del 198.18.0.0/16" 0 . -
	query_is 198.18.5.200 default limit
	sl -i "$IF" limit del 2001:2:0:5:8000::/65
	expect "limit del 2001:2:0:5:8000::/65" 0 . -
	query_is 2001:2:0:5:8000::1 2001:2:0:5::/64 allow
	sl -i "$IF" limit del 2001:2:0:5::/64
	expect "limit del 2001:2:0:5::/64" 0 . -
	query_is 2001:2:0:5:8000::1 2001:2::/48 limit
	sl_ok -i "$IF" limit list -j
	check "limit list -j: the deleted rules are gone, the rest stays" \
		jq -e '[.[].cidr] == ["default", "2001:2::/48"]' "$OUT"
	sl -i "$IF" limit del 198.18.0.0/16
	expect "limit del of a rule already deleted: exit 2" 2 - '^sluice: .*198\.18\.0\.0/16'
}

t_attach_opts() {
	cli_attach "$IF" --max-sources 4096
	# The documented order: options after the interface.
	sl attach "$NA" --mode skb --max-sources 2048
	expect "attach IFACE --mode skb --max-sources 2048" 0 'skb' -
	if ((RC == 0)); then
		sl_ok -i "$NA" status -j
		check "status -j: mode skb" jq -e '.interfaces[0].mode == "skb"' "$OUT"
		check "status -j: capacity 2048" jq -e '.interfaces[0].capacity == 2048' "$OUT"
		# Two attached (at least): a command without -i cannot tell which.
		sl limit list
		expect "limit list without -i, two attached: exit 2, asks for -i" 2 - '^sluice: .*-i'
		sl attach "$NA" --mode skb --max-sources 2048
		expect "attach again with the same options: state kept" 0 'kept|state' -
		sl detach "$NA"
		expect "detach $NA" 0 . -
	fi
	check "detach removed $NA's pins" test ! -e "$SLUICE_PIN_ROOT/$NA"
	check "detach left no XDP program on $NA" \
		bash -c "! ip -n '$NS_RX' -d link show dev '$NA' | grep -q 'prog/xdp'"
	sl attach --max-sources 2048 --mode skb "$NA"
	expect "attach --max-sources 2048 --mode skb IFACE (options first)" 0 'skb' -
	sl detach "$NA"
	expect "detach $NA again" 0 . -
}

t_write_error() {
	local c
	cli_attach "$IF" --max-sources 4096
	sl_ok -i "$IF" allow 198.18.5.0/24
	for c in "limit list -j" "limit list" "stats -j" "stats" "policy show" "query 198.18.5.1" \
		"status -j" "top -j"; do
		# shellcheck disable=SC2086 # c holds the words
		nsenter --net="/run/netns/$NS_RX" "$SLUICE" -i "$IF" $c >/dev/full 2>"$ERR"
		RC=$?
		: >"$OUT"
		expect "sluice $c >/dev/full: exit 1, one error line" 1 - '^sluice: '
	done
	nsenter --net="/run/netns/$NS_RX" "$SLUICE" help >/dev/full 2>"$ERR"
	RC=$?
	expect "sluice help >/dev/full: exit 1" 1 - '^sluice: '
}

t_stats_watch() {
	cli_attach "$IF" --max-sources 4096
	# nsenter execs sluice in place, so the signal reaches sluice itself.
	timeout --preserve-status -k 5 -s INT 3.5 nsenter --net="/run/netns/$NS_RX" "$SLUICE" -i "$IF" stats -j --watch 1 \
		>"$OUT" 2>"$ERR" </dev/null
	RC=$?
	if grep -qE 'Sanitizer|runtime error:' "$ERR"; then
		SANITIZER_REPORTS=$((SANITIZER_REPORTS + 1))
		sed 's/^/    | /' "$ERR" | head -n 40
	fi
	expect "stats -j --watch 1, SIGINT after 3.5 s: exit 0, quiet stderr" 0 '^\{' -
	local n
	n=$(jq -s 'length' "$OUT" 2>/dev/null || echo 0)
	check "stats --watch printed 2 to 5 reports, each one JSON object (got $n)" \
		bash -c "(( $n >= 2 && $n <= 5 )) && jq -se 'all(.[]; .interface == \"$IF\")' '$OUT'"
}

# Every option of policy model v2, v4 and v6, limits, allows and denies.
V2_POLICY='limit default --bytes 1000000/m --burst 50000 --per rule --ban 250ms --monitor
limit set 198.18.0.0/16 --rate 600/m --burst 20 --per /24 --ban 30s
limit set 198.18.0.0/16 --rate 5 --proto udp --dport 53
limit set 198.18.0.0/16 --rate 2/s --syn --dport 80-443 --ban 5m
deny 198.18.0.0/16 --proto udp --dport 19
limit set 198.18.7.0/24 --bytes 100000/h --burst 3000 --proto tcp --per rule --monitor
limit set 198.18.9.0/24 --rate 10 --proto 47
allow 198.18.5.0/24 --proto icmp
deny 0.0.0.0/0 --proto udp --dport 1900
limit set 2001:2::/48 --rate 100 --per /64 --ban 1h
limit set 2001:2::/48 --rate 10/h --proto icmpv6
allow 2001:2:0:1::/64
limit set ::/0 --rate 1000 --per rule
limit set 198.18.11.0/24 --rate 100 --per /28 --algo fixed-window --window 100ms
limit set 2001:2:0:2::/64 --rate 600/m --algo sliding-window --ban 10m
limit set 198.18.0.0/16 --requests 10/s --burst 30 --per /24 --ban 1m
limit set 2001:2::/48 --requests 100/m --algo sliding-window --ban 30s --ban-after 3 --monitor
limit new-sources --rate 600/m --burst 50'

t_roundtrip_v2() {
	cli_attach "$IF" --max-sources 4096
	printf '%s\n' "$V2_POLICY" >"$CLI_TMP/v2.pol"
	printf 'limit default --rate 1\ndeny 198.18.0.0/16\n' >"$CLI_TMP/other.pol"
	sl -i "$IF" policy apply "$CLI_TMP/v2.pol"
	expect "policy apply of a policy using every option" 0 'and 16 rules$' -
	sl_ok -i "$IF" limit list -j
	cp "$OUT" "$CLI_TMP/list1.json"
	sl_ok -i "$IF" policy show
	cp "$OUT" "$CLI_TMP/show1"
	# The words come back as written (bare N is per second, the burst
	# always shown, --syn without the --proto tcp it implies).
	local want
	while IFS= read -r want; do
		if grep -qxF -e "$want" "$CLI_TMP/show1"; then
			pass_check "policy show has: $want"
		else
			fail_check "policy show lacks: $want" "$(cat "$CLI_TMP/show1")"
		fi
	done <<-'EOF'
		limit default --bytes 1000000/m --burst 50000 --per rule --ban 250ms --monitor
		limit set 198.18.0.0/16 --rate 600/m --burst 20 --per /24 --ban 30s
		limit set 198.18.0.0/16 --proto udp --dport 53 --rate 5 --burst 5
		limit set 198.18.0.0/16 --dport 80-443 --syn --rate 2 --burst 2 --ban 5m
		deny 198.18.0.0/16 --proto udp --dport 19
		limit set 198.18.7.0/24 --proto tcp --bytes 100000/h --burst 3000 --per rule --monitor
		limit set 198.18.9.0/24 --proto 47 --rate 10 --burst 10
		allow 198.18.5.0/24 --proto icmp
		deny 0.0.0.0/0 --proto udp --dport 1900
		limit set 2001:2::/48 --rate 100 --burst 100 --per /64 --ban 1h
		limit set 2001:2::/48 --proto icmpv6 --rate 10/h --burst 1
		allow 2001:2:0:1::/64
		limit set ::/0 --rate 1000 --burst 1000 --per rule
		limit set 198.18.11.0/24 --rate 100 --algo fixed-window --window 100ms --per /28
		limit set 2001:2:0:2::/64 --rate 600/m --algo sliding-window --window 1m --ban 10m
		limit set 198.18.0.0/16 --requests 10 --burst 30 --per /24 --ban 1m --ban-after 10
		limit set 2001:2::/48 --requests 100/m --algo sliding-window --window 1m --ban 30s --ban-after 3 --monitor
		limit new-sources --rate 600/m --burst 50
	EOF
	check "policy show: 17 rules, the new-source budget and a header" \
		test "$(grep -vc '^#' "$CLI_TMP/show1")" -eq 18
	sl_ok -i "$IF" policy apply "$CLI_TMP/other.pol"
	sl_ok -i "$IF" policy show
	check "another policy applied: policy show differs" \
		bash -c "! cmp -s '$CLI_TMP/show1' '$OUT'"
	sl -i "$IF" policy apply "$CLI_TMP/show1"
	expect "policy apply of policy show's output" 0 'and 16 rules$' -
	sl_ok -i "$IF" policy show
	if cmp -s "$CLI_TMP/show1" "$OUT"; then
		pass_check "policy show after the round trip is identical"
	else
		fail_check "policy show after the round trip differs" \
			"$(diff "$CLI_TMP/show1" "$OUT" | head -n 10)"
	fi
	sl_ok -i "$IF" limit list -j
	check "limit list -j after the round trip is identical but for counters" \
		cmp -s <(jq -c '.[] | del(.passed, .dropped)' "$CLI_TMP/list1.json") \
		<(jq -c '.[] | del(.passed, .dropped)' "$OUT")
	check "policy check accepts policy show's output" \
		nsenter --net="/run/netns/$NS_RX" "$SLUICE" policy check "$CLI_TMP/show1"

	local L=$CLI_TMP/list1.json
	check "limit list -j: request rules, their unit and --ban-after" \
		jq -e 'any(.[]; .cidr == "198.18.0.0/16" and .unit == "requests" and .per_len == 24
			and .ban_after == 10 and .burst == 30)
			and any(.[]; .cidr == "2001:2::/48" and .unit == "requests" and .monitor
			and .ban_after == 3 and .algo == "sliding-window")' "$CLI_TMP/list1.json"
	check "limit list -j: 17 entries, each with the old and the new keys" \
		jq -e 'length == 17 and all(.[]; has("cidr") and has("action") and has("rate")
			and has("burst") and has("unit") and has("period") and has("per")
			and has("per_len") and has("proto") and has("dport") and has("syn")
			and has("monitor") and has("ban_ms") and has("match") and has("rule")
			and has("algo") and has("window_ns"))' "$L"
	check "limit list -j: the window algorithms, their windows and budgets" \
		jq -e 'any(.[]; .cidr == "198.18.11.0/24" and .algo == "fixed-window"
			and .window_ns == 100000000 and .burst == 10 and .per_len == 28)
			and any(.[]; .cidr == "2001:2:0:2::/64" and .algo == "sliding-window"
			and .window_ns == 60000000000 and .burst == 600 and .ban_ms == 600000)
			and any(.[]; .cidr == "198.18.0.0/16" and .match == "" and .algo == "token-bucket"
			and .window_ns == null)' "$L"
	check "limit list -j: the default in bytes per minute, per rule, ban, monitor" \
		jq -e '.[0] | .cidr == "default" and .action == "limit" and .unit == "bytes"
			and .rate == 1000000 and .period == 60 and .burst == 50000 and .per == "rule"
			and .per_len == null and .ban_ms == 250 and .monitor == true' "$L"
	check "limit list -j: 198.18.0.0/16 per /24, 600 a minute, ban 30 s" \
		jq -e 'any(.[]; .cidr == "198.18.0.0/16" and .match == "" and .rate == 600
			and .period == 60 and .per == "prefix" and .per_len == 24 and .ban_ms == 30000
			and .unit == "packets" and .proto == null and .syn == false)' "$L"
	check "limit list -j: 198.18.0.0/16 udp port 53" \
		jq -e 'any(.[]; .cidr == "198.18.0.0/16" and .proto == "udp" and .dport == "53"
			and .syn == false and .rate == 5 and .per == "source")' "$L"
	check "limit list -j: 198.18.0.0/16 SYN to 80-443 is tcp" \
		jq -e 'any(.[]; .cidr == "198.18.0.0/16" and .syn == true and .proto == "tcp"
			and .dport == "80-443" and .ban_ms == 300000)' "$L"
	check "limit list -j: deny 198.18.0.0/16 udp 19" \
		jq -e 'any(.[]; .cidr == "198.18.0.0/16" and .action == "deny" and .dport == "19")' "$L"
	check "limit list -j: protocol 47 by number, icmpv6 by name" \
		jq -e 'any(.[]; .proto == "47") and any(.[]; .proto == "icmpv6" and .period == 3600)' "$L"
	check "limit list -j: 2001:2::/48 per /64" \
		jq -e 'any(.[]; .cidr == "2001:2::/48" and .per == "prefix" and .per_len == 64
			and .ban_ms == 3600000)' "$L"
	check "limit list -j: .rule is the policy show line" \
		jq -e 'any(.[]; .rule == "limit set 198.18.0.0/16 --rate 600/m --burst 20 --per /24 --ban 30s")' "$L"
	sl_ok -i "$IF" limit list
	check "limit list (text) shows the match, the unit, --per, ban and monitor" \
		bash -c "grep -q -- '--proto udp --dport 53' '$OUT' && grep -q '100000/h bytes' '$OUT' &&
			grep -q 'per /24 ban 30s' '$OUT' && grep -q 'per rule monitor' '$OUT'"

	sl_ok -i "$IF" query 198.18.3.4 -j
	check "query -j: old keys and the new ones" \
		jq -e '.policy == "198.18.0.0/16" and .action == "limit" and .rate == 600
			and .period == 60 and .per == "prefix" and .per_len == 24 and .unit == "packets"
			and .tracked == false and (.tokens | type == "number") and .banned == false
			and .bucket == "198.18.3.0/24" and .ban_ms == 30000' "$OUT"
	# The /16 has a rule without a match: 0.0.0.0/0's udp/1900 rule is not
	# a candidate (the most specific prefix wins).
	check "query -j: the rules with a match its packets may fit" \
		jq -e '.match_rules | index("198.18.0.0/16 --proto udp --dport 53") != null
			and index("198.18.0.0/16 --dport 80-443 --syn") != null
			and index("0.0.0.0/0 --proto udp --dport 1900") == null' "$OUT"
	sl_ok -i "$IF" query 198.18.7.1 -j
	check "query -j: 198.18.7.1 falls to the /16 (the /24 rule matches tcp only)" \
		jq -e '.policy == "198.18.0.0/16" and (.match_rules | index("198.18.7.0/24 --proto tcp") == 0)' "$OUT"
	sl_ok -i "$IF" query 198.18.11.17 -j
	check "query -j: a fixed window's state (window start, count, budget) and retry-after" \
		jq -e '.policy == "198.18.11.0/24" and .algo == "fixed-window" and .bucket == "198.18.11.16/28"
			and .window.budget == 10 and .window.count == 0 and .tokens == 10
			and (.window.start_ns | type == "number") and .window.elapsed_ns < 100000000
			and .retry_after_ns == 0 and (.window | has("estimate") | not)' "$OUT"
	sl_ok -i "$IF" query 2001:2:0:2::5 -j
	check "query -j: a sliding window's state has the previous count and the estimate" \
		jq -e '.algo == "sliding-window" and .window.budget == 600 and .window.count == 0
			and .window.previous == 0 and .window.estimate == 0 and .banned == false' "$OUT"
	sl_ok -i "$IF" query 198.18.11.17
	check "query (text) shows the window" grep -qE 'window [0-9.]+ s in .*: 0 of 10' "$OUT"
	sl_ok -i "$IF" query 2001:2:0:9::1 -j
	check "query -j: an IPv6 source's bucket is its /64" \
		jq -e '.policy == "2001:2::/48" and .bucket == "2001:2:0:9::/64"' "$OUT"
	sl_ok -i "$IF" query 2001:3::1 -j
	check "query -j: ::/0 --per rule has one bucket, ::/0" \
		jq -e '.policy == "::/0" and .per == "rule" and .bucket == "::/0"' "$OUT"
}

t_identity() {
	cli_attach "$IF" --max-sources 4096
	sl_ok -i "$IF" limit set 198.18.0.0/16 --rate 5
	sl_ok -i "$IF" limit set 198.18.0.0/16 --rate 6 --proto udp --dport 53
	sl_ok -i "$IF" limit set 198.18.0.0/16 --rate 7 --dport 53 --proto udp
	sl_ok -i "$IF" limit set 198.18.0.0/16 --rate 8 --proto udp
	sl_ok -i "$IF" deny 198.18.0.0/16 --proto 17 --dport 53-54
	sl_ok -i "$IF" limit list -j
	check "same CIDR and match replaces; another match is another rule" \
		jq -e '[.[] | select(.cidr == "198.18.0.0/16") | "\(.action) \(.rate) \(.match)"] | sort
			== ["deny 0 --proto udp --dport 53-54", "limit 5 ", "limit 7 --proto udp --dport 53",
			    "limit 8 --proto udp"]' "$OUT"
	sl -i "$IF" limit del 198.18.0.0/16 --proto udp --dport 53
	expect "limit del CIDR MATCH deletes that rule" 0 'deleted' -
	sl_ok -i "$IF" limit list -j
	check "only that rule went" \
		jq -e '[.[] | select(.cidr == "198.18.0.0/16") | .match] | sort
			== ["", "--proto udp", "--proto udp --dport 53-54"]' "$OUT"
	sl -i "$IF" limit del 198.18.0.0/16 --proto udp --dport 53
	expect "limit del of it again: exit 2" 2 - '^sluice: no rule for 198\.18\.0\.0/16 --proto udp --dport 53'
	sl -i "$IF" limit del 198.18.0.0/16
	expect "limit del CIDR deletes the rule without a match" 0 'deleted' -
	sl_ok -i "$IF" limit list -j
	check "the rules with a match stay" \
		jq -e '[.[] | select(.cidr == "198.18.0.0/16") | .match] | sort
			== ["--proto udp", "--proto udp --dport 53-54"]' "$OUT"
	sl -i "$IF" limit set 198.18.0.0/16 --rate 5 --per /24
	expect "limit set prints the rule's words" 0 '^limit set 198\.18\.0\.0/16 --rate 5 --burst 5 --per /24$' -
	sl -i "$IF" limit set 198.18.0.0/16 --rate 5 --per /32
	expect "--per /32 on IPv4 is --per source" 0 '^limit set 198\.18\.0\.0/16 --rate 5 --burst 5$' -
	sl -i "$IF" limit default --rate 7/m
	expect "limit default 7/m: burst one second's worth, at least 1" 0 '^limit default --rate 7/m --burst 1$' -
	sl -i "$IF" limit default --rate 7200/h
	expect "limit default 7200/h: burst 2" 0 '^limit default --rate 7200/h --burst 2$' -
}

t_ban_empty() {
	cli_attach "$IF" --max-sources 4096
	sl_ok -i "$IF" limit default --rate 10 --ban 30s
	sl -i "$IF" ban list
	expect "ban list, no bans" 0 "no bans on $IF" -
	sl -i "$IF" ban list -j
	expect "ban list -j, no bans: []" 0 '^\[\]$' -
	sl -i "$IF" ban del 198.18.0.1
	expect "ban del of an address without a ban: exit 1" 1 - "^sluice: no ban on 198\.18\.0\.1"
	sl -i "$IF" ban del 198.18.0.0/24
	expect "ban del of a prefix without a ban: exit 1" 1 - "^sluice: no ban on 198\.18\.0\.0/24"
	sl -i "$IF" ban del 198.18.0.1/24
	expect "ban del of a CIDR with host bits: exit 2" 2 - "^sluice: .*use 198\.18\.0\.0/24"
	for c in "ban list" "ban del" "ban"; do
		# shellcheck disable=SC2086 # c holds the words
		sl $c --help
		expect "sluice $c --help" 0 '^Usage: ' -
	done
}

# policy apply says what it set: the default (which a file without one
# resets) as well as the rules.
t_apply_message() {
	cli_attach "$IF" --max-sources 4096
	printf 'limit default --rate 5 --burst 7\n' >"$CLI_TMP/def.pol"
	sl -i "$IF" policy apply "$CLI_TMP/def.pol"
	expect "apply of a default alone" 0 \
		"^$CLI_TMP/def\.pol: applied to $IF: the default \(limit --rate 5 --burst 7\) and 0 rules\$" -
	printf 'limit default --rate 5\ndeny 198.18.0.0/16\n' >"$CLI_TMP/one.pol"
	sl -i "$IF" policy apply "$CLI_TMP/one.pol"
	expect "apply of a default and one rule" 0 "the default \(limit --rate 5 --burst 5\) and 1 rule\$" -
	sl -i "$IF" policy apply /dev/null
	expect "apply of an empty file" 0 "the default \(not limited\) and 0 rules\$" -
}

t_save_diff() {
	local def=/etc/sluice/$IF.policy made_dir=0
	cli_attach "$IF" --max-sources 4096
	printf '%s\n' 'limit default --rate 100 --burst 50' 'deny 198.18.7.0/24' \
		'limit set 198.18.3.0/24 --rate 10 --burst 5' 'limit new-sources --rate 500 --burst 100' \
		>"$CLI_TMP/p1.pol"
	sl_ok -i "$IF" policy apply "$CLI_TMP/p1.pol"
	sl_ok -i "$IF" policy show
	cp "$OUT" "$CLI_TMP/show.txt"
	sl -i "$IF" policy save "$CLI_TMP/saved.pol"
	expect "policy save FILE" 0 "^$CLI_TMP/saved\.pol: the live policy of $IF saved\$" -
	check "the saved file is what policy show prints" cmp -s "$CLI_TMP/saved.pol" "$CLI_TMP/show.txt"
	sl -i "$IF" policy diff "$CLI_TMP/saved.pol"
	expect "policy diff of the saved file" 0 "^# .*: policy apply would change nothing on $IF\$" -
	check "policy diff of the saved file prints only its summary" \
		test "$(wc -l <"$OUT")" -eq 1

	# The live policy moves away from the file in every way diff knows.
	sl_ok -i "$IF" allow 198.18.1.0/24
	sl_ok -i "$IF" limit set 198.18.3.0/24 --rate 20 --burst 5
	sl_ok -i "$IF" limit del 198.18.7.0/24
	sl_ok -i "$IF" limit default --rate 200 --burst 50
	sl_ok -i "$IF" limit new-sources off
	sl -i "$IF" policy diff "$CLI_TMP/saved.pol"
	expect "policy diff after edits" 0 "would add 1, remove 1 and change 3 on $IF\$" -
	check "diff: the rule apply would remove" grep -qx -- '-allow 198.18.1.0/24' "$OUT"
	check "diff: the rule apply would add" grep -qx -- '+deny 198.18.7.0/24' "$OUT"
	check "diff: the changed rule, live then file" \
		grep -qx -- '-limit set 198.18.3.0/24 --rate 20 --burst 5' "$OUT"
	check "diff: the changed rule's file form" \
		grep -qx -- '+limit set 198.18.3.0/24 --rate 10 --burst 5' "$OUT"
	check "diff: the default" grep -qx -- '+limit default --rate 100 --burst 50' "$OUT"
	check "diff: the budget" grep -qx -- '+limit new-sources --rate 500 --burst 100' "$OUT"
	sl -i "$IF" -j policy diff "$CLI_TMP/saved.pol"
	expect "policy diff -j" 0 . -
	check "policy diff -j: counts and changes" jq -e '.added == 1 and .removed == 1 and
		.changed == 3 and (.changes | length) == 8 and
		any(.changes[]; .change == "added" and .rule == "deny 198.18.7.0/24")' "$OUT"
	sl_ok -i "$IF" policy show
	check "policy diff changed nothing" bash -c "! cmp -s '$OUT' '$CLI_TMP/show.txt'"
	sl_ok -i "$IF" policy apply "$CLI_TMP/saved.pol"
	sl_ok -i "$IF" policy show
	check "policy apply of the saved file gives the policy back" cmp -s "$OUT" "$CLI_TMP/show.txt"

	# The default place, where the attach unit reads it at boot.
	[[ -d /etc/sluice ]] || made_dir=1
	sl -i "$IF" policy save
	expect "policy save to the default place" 0 "^$def: the live policy of $IF saved\$" -
	check "the default file is what policy show prints" cmp -s "$def" "$CLI_TMP/show.txt"
	rm -f "$def" "/etc/sluice/.$IF.policy.saved"
	((made_dir)) && rmdir /etc/sluice

	# Bad input changes nothing.
	printf 'limit set 198.18.0.0/33 --rate 1\n' >"$CLI_TMP/bad.pol"
	sl -i "$IF" policy diff "$CLI_TMP/bad.pol"
	expect "policy diff of a bad file" 2 - "^sluice: $CLI_TMP/bad\.pol:1: "
	check "one line on stderr" test "$(wc -l <"$ERR")" -eq 1
	sl -i "$IF" policy save "$CLI_TMP"
	expect "policy save to a directory" 2 - "is a directory"
	sl -i "$IF" policy save /nonexistent/dir/x.policy
	expect "policy save where it cannot write" 1 - "^sluice: cannot write /nonexistent/dir/x\.policy: "
	sl -i "$IF" policy diff "$CLI_TMP/missing.pol"
	expect "policy diff of a missing file" 2 - "cannot read"
	sl_ok -i "$IF" policy show
	check "the policy after the bad input" cmp -s "$OUT" "$CLI_TMP/show.txt"
}

# policy save replaces only what it wrote itself: a hand-written (or
# hand-edited) file is refused, in one line, without --force, and is left
# as it was; the file save wrote, unchanged since, is replaced.
t_save_guard() {
	local def=/etc/sluice/$IF.policy made_dir=0 hand
	cli_attach "$IF" --max-sources 4096
	sl_ok -i "$IF" limit set 198.18.3.0/24 --rate 10 --burst 5
	hand=$(printf '%s\n' '# eth1: the office, by hand' 'limit set 198.18.3.0/24 --rate 10 --burst 5  # printers')
	printf '%s\n' "$hand" >"$CLI_TMP/hand.pol"
	sl -i "$IF" policy save "$CLI_TMP/hand.pol"
	expect "policy save over a hand-written file: refused" 2 - \
		"^sluice: $CLI_TMP/hand\.pol is not what policy save last wrote there .*--force"
	check "one line on stderr" test "$(wc -l <"$ERR")" -eq 1
	check "the hand-written file is unchanged" test "$(cat "$CLI_TMP/hand.pol")" == "$hand"
	sl -i "$IF" policy save "$CLI_TMP/new.pol"
	expect "policy save to a new file" 0 "saved\$" -
	sl_ok -i "$IF" limit set 198.18.4.0/24 --rate 20
	sl -i "$IF" policy save "$CLI_TMP/new.pol"
	expect "policy save over its own file, unchanged since" 0 "saved\$" -
	check "the file has the new rule" grep -q '^limit set 198.18.4.0/24 ' "$CLI_TMP/new.pol"
	printf '# kept by hand\n' >>"$CLI_TMP/new.pol"
	sl_ok -i "$IF" limit set 198.18.5.0/24 --rate 20
	sl -i "$IF" policy save "$CLI_TMP/new.pol"
	expect "policy save over its own file edited since: refused" 2 - "is not what policy save last wrote"
	check "the edited file keeps its edit" grep -qx '# kept by hand' "$CLI_TMP/new.pol"
	sl -i "$IF" policy save --force "$CLI_TMP/hand.pol"
	expect "policy save --force over a hand-written file" 0 "saved\$" -
	check "--force replaced it" grep -q '^limit set 198.18.5.0/24 ' "$CLI_TMP/hand.pol"
	# The default place, as an operator who wrote it by hand has it.
	[[ -d /etc/sluice ]] || made_dir=1
	mkdir -p /etc/sluice
	[[ ! -e $def ]] || die "$def exists: not overwriting it"
	printf '%s\n' "$hand" >"$def"
	sl -i "$IF" policy save
	expect "policy save (no FILE) over the hand-written $def: refused" 2 - "^sluice: $def is not what"
	check "$def is unchanged" test "$(cat "$def")" == "$hand"
	rm -f "$def" "/etc/sluice/.$IF.policy.saved"
	((made_dir)) && rmdir /etc/sluice
}

# Durations take d (days); a policy file that opens with a UTF-8 byte order
# mark is read as if it had none.
t_day_bom() {
	cli_attach "$IF" --max-sources 4096
	printf '\xef\xbb\xbflimit set 198.18.3.0/24 --rate 10 --ban 1d\n' >"$CLI_TMP/bom.pol"
	sl -i "$IF" policy check "$CLI_TMP/bom.pol"
	expect "policy check of a file with a BOM" 0 ': 1 rules, valid$' -
	sl -i "$IF" policy apply "$CLI_TMP/bom.pol"
	expect "policy apply of a file with a BOM and --ban 1d" 0 'and 1 rule$' -
	sl_ok -i "$IF" policy show
	check "policy show: --ban 1d" grep -qx -- 'limit set 198.18.3.0/24 --rate 10 --burst 10 --ban 1d' "$OUT"
	sl -i "$IF" limit set 198.18.4.0/24 --rate 10 --ban 7d
	expect "limit set --ban 7d (the most)" 0 "--ban 7d$" -
	sl -i "$IF" limit set 198.18.4.0/24 --rate 10 --ban 8d
	expect "limit set --ban 8d: over the most" 2 - "^sluice: bad --ban '8d': give 1ms to 7d\$"
	sl -i "$IF" ban add 198.18.9.0/24 --for 2d
	expect "ban add --for 2d" 0 . -
	sl_ok -i "$IF" -j ban list
	check "the ban lasts 2 days" jq -e \
		'any(.[]; .prefix == "198.18.9.0/24" and .left_seconds > 169000 and .left_seconds <= 172800)' "$OUT"
}

case $name in
help | noargs | stats-watch | roundtrip-v2 | identity | ban-empty | apply-message | save-diff) ;;
save-guard | day-bom) ;;
json | roundtrip | precedence | v6-not-v4 | v4-mapped | limit-del | attach-opts | write-error) ;;
*)
	echo "usage: tests/cli/positive.sh help|noargs|json|roundtrip|precedence|v6-not-v4|v4-mapped|limit-del|attach-opts|write-error|stats-watch|roundtrip-v2|identity|ban-empty|apply-message|save-diff|save-guard|day-bom" >&2
	exit 2
	;;
esac
cli_init po
cli_setup
"t_${name//-/_}"
cli_finish
