#!/usr/bin/env bash
# e2e/detach_clean: detach leaves the interface as it was: no XDP program on
# the link, no pins, the program unloaded, and traffic that sluice dropped
# reaches the stack again.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

SRC=198.18.0.66
DPORT=5001

netns_init dc
netns_setup
link_show() { ip -n "$NS_RX" -d link show dev "$IF_RX"; }

sluice_attach
sluice_rx deny "$SRC/32"
nft_rx_init
nft_rx_counter flood ip saddr "$SRC" udp dport "$DPORT"
prog=$(sluice_jq '.interfaces[0].prog_id' status)
# The checks below look for the absence of these; first see them present.
link_show | grep -q "prog/xdp id $prog" || fail "no prog/xdp id $prog on $IF_RX while attached"
[[ -d $SLUICE_PIN_ROOT/$IF_RX ]] || fail "no pins at $SLUICE_PIN_ROOT/$IF_RX while attached"
flood --src "$SRC" --dport "$DPORT" --count 500 --pps 10000 --seconds 5
# Denied sources take no bucket: their drops are counted by their rule.
assert_eq "$(sluice_jq '.[] | select(.cidr == "'"$SRC"'/32") | .dropped' limit list)" 500 \
	"denied while attached"
assert_eq "$(nft_rx_packets flood)" 0 "packets the stack saw while attached"

sluice_rx detach "$IF_RX"
if link_show | grep -Eq 'prog/xdp|[[:space:]]xdp[[:space:]]'; then
	link_show
	fail "$IF_RX still has an XDP program after detach"
fi
ok "no XDP program on $IF_RX"
[[ ! -e $SLUICE_PIN_ROOT/$IF_RX ]] || fail "pins left at $SLUICE_PIN_ROOT/$IF_RX: $(ls "$SLUICE_PIN_ROOT/$IF_RX")"
ok "no pins at $SLUICE_PIN_ROOT/$IF_RX"
# The kernel frees the program once its last reference goes (after RCU).
for ((i = 0; i < 50; i++)); do
	bpftool prog show id "$prog" >/dev/null 2>&1 || break
	sleep 0.1
done
! bpftool prog show id "$prog" >/dev/null 2>&1 || fail "program $prog still loaded after detach"
ok "program $prog unloaded"
# (Run from the host namespace: it lists every attached interface, so other
# tests' may be there; only ours must be gone.)
st=$("$SLUICE" -j status) || true
jq -e '.interfaces | type == "array"' <<<"$st" >/dev/null || fail "bad sluice status -j: $st"
! jq -e --arg i "$IF_RX" '.interfaces[] | select(.interface == $i)' <<<"$st" >/dev/null ||
	fail "sluice status still lists $IF_RX"
ok "sluice status no longer lists $IF_RX"

flood --src "$SRC" --dport "$DPORT" --count 500 --pps 10000 --seconds 5
assert_eq "$(nft_rx_packets flood)" 500 "packets the stack saw after detach"

# Detaching again is a usage error that says so in one line.
rc=0
err=$(sluice_rx detach "$IF_RX" 2>&1 >/dev/null) || rc=$?
assert_eq "$rc" 2 "exit code of a second detach"
assert_eq "$(wc -l <<<"$err")" 1 "lines of error from a second detach"
[[ $err == sluice:*"nothing to detach"* ]] || fail "second detach said: $err"
ok "second detach: $err"
