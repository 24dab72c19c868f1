#!/usr/bin/env bash
# Errors with -j: a failing command prints one JSON object on stdout,
# {"error": ..., "hint": ... or null}, nothing on stderr, and exits as it
# would without -j (2 usage, 1 runtime); a -j success still prints its own
# JSON; when stdout cannot be written the error goes to stderr as a line.
# usage: tests/cli/json_errors.sh
# shellcheck disable=SC2016 # jq programs are in single quotes
set -uo pipefail

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

cli_finish
