#!/usr/bin/env bash
# What the CLI must do right, one check set per name:
#   help        every command and subcommand has --help: exit 0, "Usage:"
#   noargs      bare `sluice` (and `sluice limit`): usage on stderr, exit 2
#   json        stats -j and limit list -j have DESIGN.md's shapes
#   roundtrip   policy show, re-applied, gives the same policy back
#   precedence  the most specific prefix wins in query, IPv4 and IPv6
#   v6-not-v4   an IPv6 rule, even ::/0, never catches an IPv4 source
#   limit-del   deleting a rule falls back to the next shorter prefix
#   attach-opts attach IFACE --mode skb --max-sources N, as documented
#   write-error output that cannot be written is an error (exit 1)
#   stats-watch stats -j --watch 1 prints a report a second, stops cleanly
#               on SIGINT (exit 0, nothing on stderr, no leak report)
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

# RC, stdout and stderr of the last sl, as a check.
expect() { # MSG WANT_RC STDOUT_RE|- STDERR_RE|-
	local msg=$1 want=$2 ore=$3 ere=$4 bad=()
	((RC == want)) || bad+=("exit $RC, want $want")
	if [[ $ore == - ]]; then
		[[ -s $OUT ]] && bad+=("stdout not empty: $(head -c 200 "$OUT")")
	elif ! grep -qE -e "$ore" "$OUT"; then
		bad+=("stdout does not match /$ore/: $(head -c 200 "$OUT")")
	fi
	if [[ $ere == - ]]; then
		[[ -s $ERR ]] && bad+=("stderr not empty: $(head -c 200 "$ERR")")
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
		"policy apply" "policy check" "policy show"; do
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

case $name in
help | noargs | stats-watch) ;;
json | roundtrip | precedence | v6-not-v4 | limit-del | attach-opts | write-error) ;;
*)
	echo "usage: tests/cli/positive.sh help|noargs|json|roundtrip|precedence|v6-not-v4|limit-del|attach-opts|write-error|stats-watch" >&2
	exit 2
	;;
esac
cli_init po
cli_setup
"t_${name//-/_}"
cli_finish
