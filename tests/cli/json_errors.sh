#!/usr/bin/env bash
# Errors with -j: a failing command prints one JSON object on stdout,
# {"error": ..., "hint": ... or null}, nothing on stderr, and exits as it
# would without -j (2 usage, 1 runtime); a -j success still prints its own
# JSON; when stdout cannot be written the error goes to stderr as a line.
# Then every command of the CLI's table (the usage lines of `sluice help`)
# either honours -j or refuses it: a command whose usage has [-j] prints
# only JSON on stdout with it (its JSON, or nothing when its --help says
# so, or an error object) and no error line on stderr; any other refuses
# -j with exit 2 and one error object, "PATH has no JSON output", and
# changes nothing.
#
# It can fail: before every command was made to honour or refuse -j,
# policy show, policy check and version printed their text under -j, and
# ban load ran.
# usage: tests/cli/json_errors.sh
# shellcheck disable=SC2016 # jq programs are in single quotes
set -uo pipefail
shopt -s extglob

# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The last sl as a -j error: exit WANT_RC, empty stderr, one line on stdout
# that is an object with exactly the keys error and hint, and error, hint
# as given ("null" for a JSON null).
expect_json_error() { # MSG WANT_RC ERROR HINT
	local msg=$1 want=$2 error=$3 hint=$4 bad=() got
	((RC == want)) || bad+=("exit $RC, want $want")
	[[ -s $ERR ]] && bad+=("stderr not empty: $(head -c 200 "$ERR")")
	[[ $(wc -l <"$OUT") -eq 1 ]] || bad+=("stdout is not one line: $(head -c 200 "$OUT")")
	if ! got=$(jq -e -c --arg e "$error" --arg h "$hint" \
		'select(type == "object" and (keys == ["error", "hint"]) and .error == $e and
		 ((.hint == null and $h == "null") or .hint == $h))' "$OUT" 2>/dev/null) || [[ -z $got ]]; then
		bad+=("stdout is not {\"error\":\"$error\",\"hint\":\"$hint\"}: $(head -c 200 "$OUT")")
	fi
	if ((${#bad[@]})); then
		fail_check "$msg" "${bad[@]}"
	else
		pass_check "$msg"
	fi
}

cli_init je
cli_setup
cli_attach "$IF" --max-sources 4096

# A usage error, -j before and after the command; and the same without -j.
sl -j attach --max-sources 5 "$NA"
expect_json_error "usage error with -j: JSON on stdout, exit 2" 2 \
	"bad --max-sources '5'" "give 1024..16777216 sources"
sl attach "$NA" --max-sources 5 -j
expect_json_error "usage error with -j after the command" 2 \
	"bad --max-sources '5'" "give 1024..16777216 sources"
sl attach --max-sources 5 "$NA"
if ((RC == 2)) && [[ ! -s $OUT ]] &&
	grep -qx "sluice: bad --max-sources '5': give 1024\.\.16777216 sources" "$ERR"; then
	pass_check "usage error without -j: one line on stderr, exit 2"
else
	fail_check "usage error without -j: one line on stderr, exit 2" \
		"exit $RC, stdout: $(head -c 200 "$OUT")" "stderr: $(head -c 200 "$ERR")"
fi
sl -j -i "$NA" stats
if ((RC == 2)) && [[ ! -s $ERR ]] && jq -e '.error | test("not attached|no sluice")' "$OUT" >/dev/null 2>&1; then
	pass_check "an interface sluice is not attached to, with -j: JSON error, exit 2"
else
	fail_check "an interface sluice is not attached to, with -j: JSON error, exit 2" \
		"exit $RC, stdout: $(head -c 200 "$OUT")" "stderr: $(head -c 200 "$ERR")"
fi

# Runtime errors: a ban that is not there; native XDP on a bridge.
sl -j -i "$IF" ban del 198.18.0.1
expect_json_error "runtime error with -j: JSON on stdout, exit 1" 1 \
	"no ban on 198.18.0.1" "see 'sluice ban list'"
sl -j attach --mode native "$BR"
if ((RC == 1)) && [[ ! -s $ERR ]] && jq -e '.error | test("native")' "$OUT" >/dev/null 2>&1; then
	pass_check "attach failure with -j: JSON error, exit 1"
else
	fail_check "attach failure with -j: JSON error, exit 1" \
		"exit $RC, stdout: $(head -c 200 "$OUT")" "stderr: $(head -c 200 "$ERR")"
fi

# A -j success prints its normal JSON, not an error object.
sl -j -i "$IF" stats
if ((RC == 0)) && [[ ! -s $ERR ]] &&
	jq -e 'type == "object" and (has("error") | not) and has("interface") and has("tracked_sources")' "$OUT" >/dev/null 2>&1; then
	pass_check "-j success: the command's own JSON, exit 0"
else
	fail_check "-j success: the command's own JSON, exit 0" \
		"exit $RC, stdout: $(head -c 300 "$OUT")" "stderr: $(head -c 200 "$ERR")"
fi

# stdout that cannot be written: the error goes to stderr, exit unchanged.
nsenter --net="/run/netns/$NS_RX" "$SLUICE" -j attach --max-sources 5 "$NA" >/dev/full 2>"$ERR"
RC=$?
if ((RC == 2)) && grep -qx "sluice: bad --max-sources '5': give 1024\.\.16777216 sources" "$ERR"; then
	pass_check "-j error with stdout unwritable: the line on stderr, exit 2"
else
	fail_check "-j error with stdout unwritable: the line on stderr, exit 2" \
		"exit $RC, stderr: $(head -c 200 "$ERR")"
fi

# Every command of the table, with -j. Placeholders of the usage line get
# words that make the command run: the veth without sluice for IFACE (attach
# runs before detach), a test prefix, a valid policy file.
printf 'limit default --rate 100\nlimit set 198.18.77.0/24 --rate 10\n' >"$CLI_TMP/j.pol"
n=0
while IFS= read -r line; do
	read -ra w <<<"${line#*sluice }"
	path=() args=() unknown=0
	for x in "${w[@]}"; do
		case $x in
		\[-*) break ;;	# the options
		IFACE) args+=("$NA") ;;
		CIDR) args+=(198.18.77.0/24) ;;
		ADDR | ADDR\[/LEN\]) args+=(198.18.77.1) ;;
		FILE | FILE\|-) args+=("$CLI_TMP/j.pol") ;;
		\[FILE\]) args+=("$CLI_TMP/j-saved.pol") ;;
		\[off\]) ;;
		[a-z]*([a-z-])) path+=("$x") ;;
		*) unknown=1 ;;	# a word this test has none for (redis://...)
		esac
	done
	[[ $line == *"[--rate "* ]] && args+=(--rate 10)
	where=(-i "$IF")
	[[ ${path[0]} == attach || ${path[0]} == detach ]] && where=()
	n=$((n + 1))
	if ((unknown)) && [[ $line == *"[-j]"* ]]; then
		fail_check "${path[*]}: a placeholder json_errors.sh has no word for: $line"
		continue
	fi
	if [[ $line != *"[-j]"* ]]; then
		sl_ok -i "$IF" policy show
		cp "$OUT" "$CLI_TMP/policy.before"
		sl -j "${where[@]}" "${path[@]}" "${args[@]}"
		expect_json_error "${path[*]} -j: refused" 2 "${path[*]} has no JSON output" \
			"$(jq -r .hint "$OUT" 2>/dev/null | grep '^drop -j' || echo 'drop -j...')"
		sl_ok -i "$IF" policy show
		check "${path[*]} -j: the policy unchanged" cmp -s "$OUT" "$CLI_TMP/policy.before"
		continue
	fi
	quiet=0
	"$SLUICE" "${path[@]}" --help | grep -qE -- '-j, --json +print nothing on success' && quiet=1
	sl -j "${where[@]}" "${path[@]}" "${args[@]}"
	bad=()
	if ((RC == 0)); then
		if ((quiet)); then
			[[ -s $OUT ]] && bad+=("its --help says nothing on success, stdout: $(head -c 200 "$OUT")")
		else
			jq -e . "$OUT" >/dev/null 2>&1 && [[ -s $OUT ]] || bad+=("stdout is not JSON: $(head -c 200 "$OUT")")
		fi
		quiet_err || bad+=("stderr: $(head -c 200 "$ERR")")
	else
		[[ $(wc -l <"$OUT") -eq 1 ]] && jq -e 'keys == ["error", "hint"]' "$OUT" >/dev/null 2>&1 ||
			bad+=("exit $RC without one error object on stdout: $(head -c 200 "$OUT")")
		[[ -s $ERR ]] && bad+=("stderr: $(head -c 200 "$ERR")")
	fi
	if ((${#bad[@]})); then
		fail_check "${path[*]} -j honoured (exit $RC)" "${bad[@]}"
	else
		pass_check "${path[*]} -j honoured (exit $RC$( ((quiet)) && echo ', quiet'))"
	fi
done < <("$SLUICE" help | grep -E '^ +sluice [a-z]')
check "every command of sluice help tried with -j ($n)" test "$n" -ge 25

cli_finish
