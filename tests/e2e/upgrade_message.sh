#!/usr/bin/env bash
# e2e/upgrade_message: before the upgrading attach, what the new version
# says over pins an old one made, and that it reports the other interfaces
# normally. An old build (tests/lib/old_sluice.sh: version 0.0.9-old, its
# meta map of another layout) is attached to $IF_RX; the new one to a
# second interface beside it. Then, with the new build:
#  - a command on the old pins (limit list, ban list, stats) exits 2 with
#    one line: "IFACE: pins of version 0.0.9-old (...): run 'sluice attach
#    IFACE' to upgrade in place, ...", and never points to detach;
#  - status -j lists the second interface as usual and the old one as an
#    entry of its own, {"interface", "error", "hint"}, exit non-zero; plain status
#    prints the second interface's block and one line for the old one;
#  - the attach it points to upgrades in place (the old policy kept), after
#    which status reads both and the pins record the new version.
# Shown to fail against the build before: its message named no version
# ("pins under DIR were made by another version of sluice"), and status -j
# printed only an error object, no interface at all.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/lib/old_sluice.sh
. "$(dirname "$0")/../lib/old_sluice.sh"

netns_init upm
OTHER=sl$$um
um_cleanup() {
	local rc=$?
	set +e
	if [[ -d $SLUICE_PIN_ROOT/$OTHER ]]; then
		[[ -e /run/netns/$NS_RX ]] && sluice_rx detach "$OTHER" >/dev/null 2>&1
		"$SLUICE" detach --force "$OTHER" >/dev/null 2>&1 || rm -rf "${SLUICE_PIN_ROOT:?}/$OTHER"
	fi
	(exit "$rc")
	netns_cleanup
}
trap um_cleanup EXIT
old_sluice_build 0.0.9-old
ok "built an old sluice 0.0.9-old with another meta layout"
netns_setup
ip -n "$NS_RX" link add "$OTHER" type veth peer name "${OTHER}p" || fail "cannot create veth $OTHER"
for l in "$OTHER" "${OTHER}p"; do ip -n "$NS_RX" link set "$l" up || fail "link up $l"; done
old_rx() { nsenter --net="/run/netns/$NS_RX" "$OLD" -i "$IF_RX" "$@"; }
old_rx attach --mode native "$IF_RX" >/dev/null 2>&1 || fail "the old build's attach failed"
old_rx limit default --rate 77 --burst 88 >/dev/null 2>&1 || fail "the old build's limit default failed"
sluice_rx attach --mode native "$OTHER" >/dev/null 2>&1 || fail "attach $OTHER failed"
in_rx() { nsenter --net="/run/netns/$NS_RX" "$SLUICE" "$@"; }	# no -i: every interface
in_rx -i "$OTHER" limit default --rate 55 >/dev/null 2>&1 || fail "limit default on $OTHER failed"

WANT="$IF_RX: pins of version 0.0.9-old (map meta differs from this version's): run 'sluice attach $IF_RX' to upgrade in place"
for cmd in "limit list" "ban list" "stats"; do
	rc=0
	# shellcheck disable=SC2086 # $cmd is words
	out=$(sluice_rx $cmd 2>"$(netns_tmp err)") || rc=$?
	err=$(cat "$(netns_tmp err)")
	assert_eq "$rc" 2 "exit status of $cmd on the old pins"
	assert_eq "$out" "" "$cmd on the old pins: stdout"
	assert_eq "$(wc -l <<<"$err")" 1 "$cmd on the old pins: lines on stderr"
	[[ $err == "sluice: $WANT"* ]] || fail "$cmd on the old pins said: $err"
	[[ $err != *detach* ]] || fail "$cmd on the old pins points to detach: $err"
done
ok "commands on the old pins: $err"

# status -j: every interface; the old one as an error entry. Other tests'
# interfaces may be listed too: only these two are looked at.
# Other tests' pins may fail too, and first: the exit status is non-zero.
rc=0
out=$(in_rx -j status) || rc=$?
((rc != 0)) || fail "status -j with old pins beside exited 0"
entry() { jq -c --arg i "$1" '.interfaces[] | select(.interface == $i)' <<<"$out"; }
assert_eq "$(entry "$IF_RX" | jq -c 'keys')" '["error","hint","interface"]' "status -j: $IF_RX's entry"
[[ $(entry "$IF_RX" | jq -r '"\(.error): \(.hint)"') == "$WANT"* ]] ||
	fail "status -j: $IF_RX's error: $(entry "$IF_RX")"
assert_eq "$(entry "$OTHER" | jq -c '[.state, .default.rate, .group]')" '["attached",55,"sluice"]' \
	"status -j: $OTHER beside it (of $(jq -c '[.interfaces[].interface]' <<<"$out"))"
ok "status -j: $(entry "$IF_RX")"
rc=0
out=$(in_rx status 2>"$(netns_tmp err)") || rc=$?
((rc != 0)) || fail "status with old pins beside exited 0"
grep -q "^$OTHER: attached, native mode" <<<"$out" || fail "status did not show $OTHER: $out"
grep -q "^  default: limit 55/s" <<<"$out" || fail "status did not show $OTHER's default: $out"
grep -q "^$IF_RX:" <<<"$out" && fail "status showed $IF_RX as if read: $out"
assert_eq "$(grep -c "pins of version 0.0.9-old" "$(netns_tmp err)")" 1 "status: lines on stderr for $IF_RX"
ok "status: $OTHER shown, one line for $IF_RX"

# The attach it points to upgrades in place, keeping the policy.
sluice_attach >/dev/null 2>&1 || fail "the upgrading attach failed"
assert_eq "$(sluice_jq '.[] | select(.cidr == "default") | [.rate, .burst] | tostring' limit list)" \
	"[77,88]" "$IF_RX's default after the upgrade"
out=$(in_rx -j status) || true	# other tests' pins may fail
assert_eq "$(entry "$IF_RX" | jq -c '[.state, .default.rate]')" '["attached",77]' "status -j: $IF_RX upgraded"
assert_eq "$(entry "$OTHER" | jq -r .state)" attached "status -j: $OTHER after the upgrade"
# The pins now record this version: an old build over them names it.
new_version=$("$SLUICE" version | awk '{ print $2 }')
rc=0
err=$(old_rx limit list 2>&1 >/dev/null) || rc=$?
assert_eq "$rc" 2 "exit status of the old build on the upgraded pins"
[[ $err == "sluice: $IF_RX: pins of version $new_version ("* ]] || fail "the old build on new pins said: $err"
ok "upgraded in place; the old build on the new pins: $err"
