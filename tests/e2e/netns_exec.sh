#!/usr/bin/env bash
# e2e/netns_exec: sluice works under `ip netns exec NS`, which remounts /sys
# and hides the host's bpffs, as well as under `nsenter --net`: every
# command (attach, limit, stats, query, top, status, the exporter's
# interface list, detach) runs there, its pins are the host's (one set,
# seen the same by both ways in), and limits act on traffic. A bpffs mounted
# inside `ip netns exec` does not take the pins away from the host's. Where
# the host's bpffs cannot be reached the error says why and names nsenter.
# --bpffs DIR puts the pins in another bpffs.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

SRC=198.18.6.10
RATE=10
BURST=50
DPORT=5001

netns_init nx
command -v curl >/dev/null || skip "curl not installed (tools/install-deps.sh)"
command -v capsh >/dev/null || skip "capsh not installed (libcap2-bin)"
netns_setup

# sluice under ip netns exec, for the rx end.
x_rx() { ip netns exec "$NS_RX" "$SLUICE" "$@"; }
x_jq() { # FILTER ARGS...
	local filter=$1 out
	shift
	out=$(x_rx -j "$@") || fail "ip netns exec: sluice $* failed"
	jq -er "$filter" <<<"$out" || fail "ip netns exec: sluice $*: no '$filter' in: $out"
}
link_prog() { ip -n "$NS_RX" -j link show dev "$IF_RX" | jq -r '.[0].xdp.prog.id // empty'; }

# The premise: in there, /sys/fs/bpf is not the host's bpffs.
fstype=$(ip netns exec "$NS_RX" stat -f -c %T /sys/fs/bpf)
[[ $fstype != bpf_fs ]] || fail "ip netns exec shows a bpffs at /sys/fs/bpf: nothing to test"
ok "under ip netns exec /sys/fs/bpf is $fstype"

# --- Everything under ip netns exec. ---
out=$(x_rx attach --mode native "$IF_RX") || fail "ip netns exec: attach failed"
echo "$out"
[[ -d $SLUICE_PIN_ROOT/$IF_RX ]] || fail "attach under ip netns exec made no pins in the host's $SLUICE_PIN_ROOT"
ok "attach under ip netns exec pinned in the host's $SLUICE_PIN_ROOT/$IF_RX"
prog=$(link_prog)
[[ -n $prog ]] || fail "no XDP program on $IF_RX after attach"
assert_eq "$(x_jq ".interfaces[] | select(.interface == \"$IF_RX\") | .prog_id" -i "$IF_RX" status)" "$prog" \
	"status under ip netns exec: program id"
assert_eq "$(x_jq ".interfaces[] | select(.interface == \"$IF_RX\") | .attached" -i "$IF_RX" status)" true \
	"status under ip netns exec: attached"
assert_eq "$(sluice_jq '.interfaces[0].prog_id' status)" "$prog" "status under nsenter: program id"

x_rx -i "$IF_RX" limit default --rate 100000 --burst 100000 >/dev/null || fail "limit default"
x_rx -i "$IF_RX" limit set 198.18.6.0/24 --rate "$RATE" --burst "$BURST" >/dev/null || fail "limit set"
assert_eq "$(sluice_rx -j limit list | jq -c '.[] | select(.cidr == "198.18.6.0/24") | [.rate, .burst]')" \
	"[$RATE,$BURST]" "the rule set under ip netns exec, read under nsenter"

nft_rx_init
nft_rx_counter flood ip saddr "$SRC" udp dport "$DPORT"
flood --src "$SRC" --dport "$DPORT" --count 1000 --pps 10000 --seconds 5 >/dev/null
passed=$(x_jq .passed -i "$IF_RX" query "$SRC")
dropped=$(x_jq .dropped -i "$IF_RX" query "$SRC")
assert_ge "$passed" "$BURST" "query under ip netns exec: passed"
assert_le "$passed" $((BURST + 2)) "query under ip netns exec: passed"
assert_eq "$((passed + dropped))" 1000 "query under ip netns exec: passed + dropped"
assert_eq "$(nft_rx_packets flood)" "$passed" "the stack saw what query says passed"
assert_eq "$(x_jq .packets.drop.rate_limited -i "$IF_RX" stats)" "$dropped" \
	"stats under ip netns exec: rate_limited drops"
assert_eq "$(x_jq ".[0].source" -i "$IF_RX" top -n 1)" "$SRC" \
	"top under ip netns exec: first source"

# The exporter under ip netns exec lists the interface.
log=$(netns_tmp exporter.log)
ip netns exec "$NS_RX" "$SLUICE" exporter --listen 127.0.0.1:9464 >"$log" 2>&1 &
exp_pid=$!
netns_track_pid "$exp_pid"
metrics=
for ((i = 0; i < 100; i++)); do
	kill -0 "$exp_pid" 2>/dev/null || fail "the exporter exited: $(cat "$log")"
	metrics=$(ip netns exec "$NS_RX" curl -sS --max-time 2 http://127.0.0.1:9464/metrics 2>/dev/null) && break
	sleep 0.1
done
line="sluice_packets_total{interface=\"$IF_RX\",action=\"drop\",reason=\"rate_limited\"} $dropped"
grep -qxF "$line" <<<"$metrics" || fail "exporter under ip netns exec: no '$line' in: $(grep "$IF_RX" <<<"$metrics" | head -n 5)"
ok "exporter under ip netns exec: $line"
kill -TERM "$exp_pid"
wait "$exp_pid" || fail "exporter exit status $?"

x_rx detach "$IF_RX" >/dev/null || fail "detach under ip netns exec failed"
[[ -z $(link_prog) ]] || fail "program $(link_prog) still on $IF_RX after detach"
[[ ! -e $SLUICE_PIN_ROOT/$IF_RX ]] || fail "pins left after detach under ip netns exec"
ok "detach under ip netns exec: no program, no pins"

# --- Attached under nsenter, managed under ip netns exec, and back. ---
sluice_attach >/dev/null
x_rx -i "$IF_RX" limit default --rate 7 --burst 9 >/dev/null || fail "limit default"
assert_eq "$(sluice_jq '.[] | select(.cidr == "default") | .rate' limit list)" 7 \
	"default set under ip netns exec, read under nsenter"
prog=$(link_prog)
out=$(x_rx attach --mode native "$IF_RX") || fail "re-attach under ip netns exec failed"
[[ $out == *"state kept"* ]] || fail "re-attach under ip netns exec did not keep the state: $out"
assert_eq "$(sluice_jq '.[] | select(.cidr == "default") | .rate' limit list)" 7 \
	"default after re-attach under ip netns exec"
[[ $(link_prog) != "$prog" ]] || fail "re-attach did not replace program $prog"
ok "re-attach under ip netns exec replaced program $prog with $(link_prog)"

# A bpffs mounted in there (a plausible fix a user might try) is private
# to the command: the host's still wins.
ip netns exec "$NS_RX" sh -c 'mount -t bpf bpf /sys/fs/bpf && exec "$0" -j -i "$1" status' \
	"$SLUICE" "$IF_RX" >"$(netns_tmp private.json)" || fail "status with a private bpffs failed"
assert_eq "$(jq -r --arg i "$IF_RX" '.interfaces[] | select(.interface == $i) | .prog_id' \
	"$(netns_tmp private.json)")" "$(link_prog)" "status with a bpffs mounted under ip netns exec"

# Where the host's bpffs cannot be reached (no CAP_SYS_PTRACE: /proc/1/root
# and the parent's root are closed), the error says why and what to do.
rc=0
err=$(ip netns exec "$NS_RX" capsh --drop=cap_sys_ptrace -- -c "exec $SLUICE status" 2>&1 >/dev/null) ||
	rc=$?
assert_eq "$rc" 1 "status without a reachable bpffs: exit code"
assert_eq "$(wc -l <<<"$err")" 1 "status without a reachable bpffs: lines of error"
[[ $err == sluice:*"ip netns exec"*"nsenter --net=/run/netns/"* ]] || fail "the error does not name nsenter: $err"
ok "error: $err"

x_rx detach "$IF_RX" >/dev/null || fail "detach under ip netns exec failed"
[[ -z $(link_prog) && ! -e $SLUICE_PIN_ROOT/$IF_RX ]] || fail "program or pins left after detach"
ok "detached under ip netns exec after attaching under nsenter"

# --- --bpffs DIR: pins in another bpffs. ---
alt=$(netns_tmp bpffs)
mkdir "$alt"
mount -t bpf bpf "$alt" || skip "cannot mount a second bpffs"
unmount_alt() { umount "$alt" 2>/dev/null || true; }
trap 'unmount_alt; netns_cleanup' EXIT
sluice_rx --bpffs "$alt" attach --mode native "$IF_RX" >/dev/null || fail "attach --bpffs failed"
[[ -d $alt/sluice/$IF_RX && ! -e $SLUICE_PIN_ROOT/$IF_RX ]] || fail "attach --bpffs did not pin in $alt"
ok "attach --bpffs pinned in $alt/sluice/$IF_RX"
assert_eq "$(SLUICE_BPFFS=$alt x_rx -j -i "$IF_RX" status | jq -r '.interfaces[0].prog_id')" "$(link_prog)" \
	"SLUICE_BPFFS status under ip netns exec"
rc=0
err=$(sluice_rx --bpffs /nonexistent status 2>&1 >/dev/null) || rc=$?
assert_eq "$rc" 2 "--bpffs of a directory that is no bpffs: exit code"
[[ $err == sluice:*"--bpffs '/nonexistent' is not a mounted bpffs"* ]] || fail "--bpffs error: $err"
ok "error: $err"
sluice_rx --bpffs "$alt" detach "$IF_RX" >/dev/null || fail "detach --bpffs failed"
[[ -z $(link_prog) && ! -e $alt/sluice/$IF_RX ]] || fail "program or pins left after detach --bpffs"
ok "detach --bpffs: no program, no pins"
