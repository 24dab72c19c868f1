#!/usr/bin/env bash
# e2e/netns_detach: sluice attached inside a network namespace, seen from the
# host, whose namespace does not have the interface. detach (with or
# without --force) from the host refuses in one line, exit 1, naming the
# namespace and the nsenter command, and leaves the pins and the program
# judging packets. status from the host says where the program runs
# (text and -j state/netns), and a non-root reader in the pins' group is
# told only what it can know: no advice to detach or attach. A program
# whose pins were removed while it ran is still sluice's: attach replaces
# it and detach removes it. Finally detach inside the namespace works.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

netns_init nd
need_nobody
netns_setup
NOGROUP=$(id -gn nobody)
PINS=$SLUICE_PIN_ROOT/$IF_RX
SRC=198.18.9.10
COUNT=100
BURST=10

sluice_attach >/dev/null
sluice_rx limit set 198.18.9.0/24 --rate 1/m --burst "$BURST" >/dev/null

# Sends COUNT packets from SRC; the source's dropped count must grow by all
# but what its (spent or fresh) bucket admits.
judged() { # WHAT
	local d0 d1
	d0=$(sluice_dropped "$SRC")
	flood --src "$SRC" --count "$COUNT" --pps 5000 --seconds 10 >/dev/null
	sleep 0.2
	d1=$(sluice_dropped "$SRC")
	assert_ge "$((d1 - d0))" "$((COUNT - BURST))" "$1: packets dropped by the program"
}
judged "before"

as_nobody() { # sluice ARGS... as uid nobody in group sluice, no capabilities
	setpriv --reuid nobody --regid "$NOGROUP" --groups sluice --inh-caps=-all \
		--bounding-set=-all "$SLUICE" "$@"
}

# detach from the host, where the interface is not.
for force in --force ""; do
	rc=0
	# shellcheck disable=SC2086 # $force is one word or none
	err=$("$SLUICE" detach $force "$IF_RX" 2>&1 >/dev/null) || rc=$?
	assert_eq "$rc" 1 "exit status of detach $force from the host"
	assert_eq "$(wc -l <<<"$err")" 1 "lines on stderr of detach $force from the host"
	[[ $err == *"network namespace /run/netns/$NS_RX"*"nsenter --net=/run/netns/$NS_RX sluice detach $IF_RX"* ]] ||
		fail "detach $force from the host said: $err"
	ok "detach $force from the host refuses: $err"
	[[ -e $PINS/prog && -e $PINS/config ]] || fail "pins gone after detach $force from the host"
	ok "pins kept after detach $force from the host"
	judged "after detach $force from the host"
done

# status from the host, as root: where it runs.
out=$("$SLUICE" -i "$IF_RX" status) || fail "status from the host failed"
[[ $out == *"attached in network namespace /run/netns/$NS_RX"* ]] ||
	fail "status from the host said: $out"
[[ $out != *"sluice detach'"* && $out != *GONE* ]] || fail "status from the host advises detach: $out"
ok "status from the host: $(head -n 1 <<<"$out")"
json=$("$SLUICE" -i "$IF_RX" -j status) || fail "status -j from the host failed"
assert_eq "$(jq -r '.interfaces[0] | [.state, .netns, .netns_interface, .attached] | join(" ")' <<<"$json")" \
	"attached_in_other_netns /run/netns/$NS_RX $IF_RX true" "status -j from the host"

# status as a reader in the pins' group: on the host it cannot look into
# other namespaces; inside, it sees the recorded program on the link.
out=$(as_nobody -i "$IF_RX" status) || fail "status as nobody from the host failed"
[[ $out == *"not in this network namespace"*"may run in another one"* ]] ||
	fail "status as nobody from the host said: $out"
[[ $out != *"sluice detach"* && $out != *"sluice attach"* && $out != *GONE* ]] ||
	fail "status as nobody from the host advises what may break things: $out"
ok "status as nobody from the host: $(head -n 1 <<<"$out")"
assert_eq "$(as_nobody -i "$IF_RX" -j status | jq -r '.interfaces[0] | [.state, .attached] | join(" ")')" \
	"unknown_other_netns false" "status -j as nobody from the host"
out=$(nsenter --net="/run/netns/$NS_RX" setpriv --reuid nobody --regid "$NOGROUP" --groups sluice \
	--inh-caps=-all --bounding-set=-all "$SLUICE" -i "$IF_RX" status) ||
	fail "status as nobody inside failed"
[[ $out == "$IF_RX: attached,"* ]] || fail "status as nobody inside said: $out"
ok "status as nobody inside: $(head -n 1 <<<"$out")"

# A program whose pins were removed while it ran (by hand here; as detach
# --force once did) is still sluice's: attach replaces it ...
rm -rf "$PINS"
out=$(sluice_attach 2>&1) || fail "attach over a sluice program without pins failed: $out"
ok "attach over a sluice program without pins: $out"
# ... and detach removes it.
rm -rf "$PINS"
out=$(sluice_rx detach "$IF_RX" 2>&1) || fail "detach of a sluice program without pins failed: $out"
ok "detach of a sluice program without pins: $out"
ip -n "$NS_RX" -j link show dev "$IF_RX" | jq -e '.[0].xdp == null' >/dev/null ||
	fail "an XDP program is left on $IF_RX: $(ip -n "$NS_RX" link show dev "$IF_RX")"
ok "no XDP program left on $IF_RX"

# The normal way out: detach inside the namespace.
sluice_attach >/dev/null
sluice_rx detach "$IF_RX" >/dev/null || fail "detach inside the namespace failed"
[[ ! -e $PINS ]] || fail "pins left after detach inside: $(ls "$PINS")"
ip -n "$NS_RX" -j link show dev "$IF_RX" | jq -e '.[0].xdp == null' >/dev/null ||
	fail "an XDP program is left on $IF_RX after detach inside"
ok "detach inside the namespace removes the program and the pins"
