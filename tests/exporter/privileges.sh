#!/usr/bin/env bash
# exporter/privileges: a subverted exporter cannot change the policy. Once
# serving, the exporter is its own system user sluice-exporter by default
# (all four uids; not nobody, whose other processes could stop it: a
# process of nobody's may not even signal it), in its own group plus
# only the pins' group, with no capability but possibly CAP_BPF (none on
# kernels since 6.5), nothing ambient or inheritable, a bounding set no
# larger than that, and no_new_privs. With exactly those credentials, copied
# from /proc/PID/status into setpriv: no pin of either interface opens
# read-write or write-only, nor by its id; every map pin opens read-only
# but the source table's seed's, root's alone (not at all);
# the program pin and the writers' lock not at all; `sluice limit default` fails and changes
# nothing while `sluice stats` works. Every map descriptor it holds is
# read-only (/proc/PID/fdinfo, and the BPF_F_RDONLY of each map a scrape
# opens, traced). An interface attached after the
# exporter started is exported in full; a root-only pin directory (pins
# from before they had a group) is skipped, with a warning at startup. An unknown --user or --group, and
# uid 0 or gid 0, are usage errors (exit 2, one line); a missing default
# user is one line that says the package creates it.
# Shown to fail on the build whose default was nobody: "the exporter's
# user: nobody, want sluice-exporter".
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../lib/map_fds.sh"

PIN_ACCESS=${PIN_ACCESS:-$SLUICE_ROOT/build/tests/pin_access}
CAP_BPF=39

exporter_init expv
[[ -x $PIN_ACCESS ]] || fail "$PIN_ACCESS not built: run make build/tests/pin_access"
for cmd in setpriv capsh getent strace; do
	command -v "$cmd" >/dev/null || skip "$cmd not installed (util-linux, libcap2-bin)"
done
getent passwd nobody >/dev/null || skip "no user nobody on this machine"
command -v unshare >/dev/null || skip "unshare not installed (util-linux)"
netns_setup
sluice_attach
getent group sluice >/dev/null || fail "sluice attach did not create the group sluice"

# --- usage errors: exit 2, one line, nothing started ---
for args in "--user nosuch$$" "--group nosuch$$" "--user root" "--group root" "--user="; do
	rc=0
	# shellcheck disable=SC2086 # split on purpose
	err=$(nsenter --net="/run/netns/$NS_RX" "$SLUICE_EXPORTER" exporter $args 2>&1 >/dev/null) || rc=$?
	[[ $rc == 2 && $(wc -l <<<"$err") == 1 && $err == "sluice: "* ]] ||
		fail "exporter $args: exit $rc, want 2 and one 'sluice: ' line, got: $err"
	in_rx curl -s --max-time 1 -o /dev/null "$EXPORTER_URL/" &&
		fail "exporter $args was refused but something listens on $EXPORTER_URL"
done
ok "unknown user or group, uid 0, gid 0: exit 2 with one line each, nothing listens"
# Where the package did not create its user (a passwd without it, in a
# mount namespace of its own): one line that says so.
nopw=$(netns_tmp passwd)
grep -v '^sluice-exporter:' /etc/passwd >"$nopw"
rc=0
err=$(timeout 10 unshare --mount sh -c 'mount --bind "$1" /etc/passwd && shift && exec "$@"' sh "$nopw" \
	nsenter --net="/run/netns/$NS_RX" "$SLUICE_EXPORTER" exporter 2>&1 >/dev/null) || rc=$?
[[ $rc == 2 && $(wc -l <<<"$err") == 1 && $err == *"no user 'sluice-exporter': install the sluice package, which creates it, or run as root with --user USER"* ]] ||
	fail "exporter without its default user: exit $rc, want 2 and one line naming the package, got: $err"
ok "no user sluice-exporter: $err"

exporter_start
grep -q "running as sluice-exporter, group sluice" "$EXPORTER_LOG" ||
	fail "the startup line does not say whom it runs as: $(head -n 1 "$EXPORTER_LOG")"

# --- its credentials ---
status=$(cat "/proc/$EXPORTER_PID/status")
field() { awk -v k="$1:" '$1 == k { $1 = ""; sub(/^ +/, ""); print }' <<<"$status"; }
assert_eq "$(ps -o user= -p "$EXPORTER_PID")" sluice-exporter "the exporter's user"
ex_uid=$(getent passwd sluice-exporter | cut -d: -f3)
ex_gid=$(getent passwd sluice-exporter | cut -d: -f4)
sluice_gid=$(getent group sluice | cut -d: -f3)
uids=$(field Uid | tr -s '\t ' ' ')
gids=$(field Gid | tr -s '\t ' ' ')
groups=$(field Groups | xargs)
assert_eq "$uids" "$ex_uid $ex_uid $ex_uid $ex_uid" "real, effective, saved and fs uid"
assert_eq "$gids" "$ex_gid $ex_gid $ex_gid $ex_gid" "real, effective, saved and fs gid"
assert_eq "$groups" "$sluice_gid" "supplementary groups (the pins' group only)"
cap_inh=$((16#$(field CapInh)))
cap_prm=$((16#$(field CapPrm)))
cap_eff=$((16#$(field CapEff)))
cap_bnd=$((16#$(field CapBnd)))
cap_amb=$((16#$(field CapAmb)))
assert_eq "$((cap_eff & ~(1 << CAP_BPF)))" 0 "effective capabilities other than CAP_BPF"
assert_eq "$cap_prm" "$cap_eff" "permitted capabilities equal the effective ones"
assert_eq "$((cap_bnd & ~cap_eff))" 0 "bounding set beyond the effective capabilities"
assert_eq "$cap_inh.$cap_amb" 0.0 "inheritable and ambient capabilities"
assert_eq "$(field NoNewPrivs)" 1 "no_new_privs"
echo "exporter capabilities: $(capsh --decode="$(field CapEff)")"
# Another daemon's user (nobody, the check server's) may not signal it.
for u in nobody sluice-check; do
	setpriv --reuid "$u" --regid "$(id -g "$u")" --clear-groups kill -0 "$EXPORTER_PID" 2>/dev/null &&
		fail "a process of $u's may signal the exporter (SIGSTOP would stop it)"
done
ok "processes of nobody and sluice-check may not signal the exporter"

# setpriv arguments that rebuild those credentials for another program.
caps=-all
for c in $(capsh --decode="$(field CapEff)" | cut -d= -f2 | tr ',' ' '); do
	caps+=",+${c#cap_}"
done
bnd=-all
for c in $(capsh --decode="$(field CapBnd)" | cut -d= -f2 | tr ',' ' '); do
	bnd+=",+${c#cap_}"
done
as_exporter() {
	setpriv --reuid="$ex_uid" --regid="$ex_gid" --groups="$(tr ' ' ',' <<<"$groups")" \
		--inh-caps="$caps" --ambient-caps="$caps" --bounding-set="$bnd" --no-new-privs -- "$@"
}
as_exporter sh -c 'grep -E "^(Uid|Gid|Groups|CapEff|CapBnd):" /proc/self/status' | tr -s '\t' ' ' |
	sed 's/^/  copied: /'
[[ $(as_exporter awk '$1 == "CapEff:" { print $2 }' /proc/self/status) == "$(field CapEff)" ]] ||
	fail "setpriv did not reproduce the exporter's effective capabilities"

# --- an interface attached after the exporter started ---
EXTRA=slexv$$x
EXTRA=${EXTRA:0:12}
attach_extra "$EXTRA"
m=$(netns_tmp m.txt)
scrape /metrics >"$m" || fail "scrape failed"
assert_eq "$(series "$m" "sluice_tracked_sources_capacity{interface=\"$EXTRA\"}")" 262144 \
	"$EXTRA, attached after the exporter started, is exported"
v=$(series "$m" "sluice_policy_packets_total{interface=\"$EXTRA\",policy=\"default\",proto=\"\",dport=\"\",syn=\"\",requests=\"\",action=\"pass\"}")
[[ $v =~ ^[0-9]+$ ]] || fail "$EXTRA's policy counters: $v"
ok "$EXTRA's policy counters are exported: $v"
assert_eq "$(series "$m" "sluice_tracked_sources_capacity{interface=\"$IF_RX\"}")" 262144 \
	"$IF_RX still exported"
# (Not sluice_scrape_skipped_interfaces: pins of other tests may share bpffs.)
grep -q "^sluice_program_info{interface=\"$EXTRA\",mode=\"native\"" "$m" ||
	fail "no sluice_program_info for $EXTRA"
ok "$EXTRA's program info is exported"

# --- every pin, with the exporter's credentials ---
acc=$(netns_tmp access.json)
as_exporter "$PIN_ACCESS" "$SLUICE_PIN_ROOT/$IF_RX" "$SLUICE_PIN_ROOT/$EXTRA" >"$acc" ||
	fail "pin_access failed"
sed 's/^/  /' "$acc"
assert_eq "$(jq -s '[.[] | select(.unreadable_dir and (.unreadable_dir | endswith("/lock") | not))]
	| length' "$acc")" 0 \
	"pin directories it cannot list (the writers' lock aside)"
assert_eq "$(jq -s '[.[] | select(.unreadable_dir | endswith("/lock")?)] | length' "$acc")" 2 \
	"writers' locks it cannot open (two interfaces)"
assert_ge "$(jq -s '[.[] | select(.pin)] | length' "$acc")" 16 "pins checked (two interfaces)"
assert_eq "$(jq -s '[.[] | select(.pin and (.rw == "ok" or .wo == "ok" or .by_id == "ok"))] | length' "$acc")" 0 \
	"pins it can open read-write, write-only, or by id"
assert_eq "$(jq -s '[.[] | select(.pin and (.pin | (endswith("/prog") or endswith("/src_seed")) | not) and .ro != "ok")] | length' "$acc")" 0 \
	"map pins it cannot open read-only (the table's seed aside)"
assert_eq "$(jq -s '[.[] | select(.pin and (.pin | endswith("/src_seed")) and .ro == "ok")] | length' "$acc")" 0 \
	"source table seeds (root's alone) it can open read-only"
assert_eq "$(jq -s '[.[] | select(.pin and (.pin | endswith("/prog")) and .ro == "ok")] | length' "$acc")" 0 \
	"program pins it can open"

# --- the same through the CLI ---
before=$(sluice_rx -j limit list)
rc=0
err=$(as_exporter "$SLUICE" -i "$IF_RX" limit default --rate 7 2>&1 >/dev/null) || rc=$?
assert_eq "$rc" 1 "'sluice limit default' with the exporter's credentials: exit status"
echo "  it says: $err"
assert_eq "$(sluice_rx -j limit list)" "$before" "the policy after that attempt"
as_exporter "$SLUICE" -i "$IF_RX" -j stats | jq -e '.interface' >/dev/null ||
	fail "'sluice stats' with the exporter's credentials failed"
ok "'sluice stats' works with the exporter's credentials"

# --- the map descriptors it holds: none writable ---
# Every descriptor of a pinned map is read-only. Between scrapes it holds none (fdinfo); a scrape
# holds them for milliseconds, so its bpf(2) calls are traced (strace).
writable_unfrozen() { awk '$3 == "rw" && $4 != 1'; }
assert_eq "$(map_fds "$EXPORTER_PID" | writable_unfrozen | wc -l)" 0 \
	"writable descriptors of maps that are not frozen, between scrapes"
trace=$(netns_tmp bpf.trace)
timeout -s KILL 30 strace -f -qq -e trace=bpf -o "$trace" -p "$EXPORTER_PID" 2>/dev/null &
STRACE_PID=$!
netns_track_pid "$STRACE_PID"
deadline=$((SECONDS + 10))
until ! grep -qx 'TracerPid:[[:space:]]*0' "/proc/$EXPORTER_PID"/task/*/status; do
	((SECONDS < deadline)) || fail "strace did not attach to the exporter within 10 s"
	sleep 0.1
done
for ((i = 0; i < 5; i++)); do
	scrape /metrics -o /dev/null || fail "scrape $i under strace failed"
done
kill "$STRACE_PID" 2>/dev/null || true
wait "$STRACE_PID" 2>/dev/null || true
opens='bpf(BPF_OBJ_GET,\|bpf(BPF_MAP_GET_FD_BY_ID,'
echo "  e.g. $(grep -m 1 'bpf(BPF_OBJ_GET,' "$trace" | cut -c 1-160)"
assert_ge "$(grep -c "$opens" "$trace" || true)" 24 "maps opened by 5 scrapes (strace)"
assert_eq "$(grep "$opens" "$trace" | grep -vc 'BPF_F_RDONLY' || true)" 0 \
	"maps the scrapes opened without BPF_F_RDONLY"
assert_eq "$(map_fds "$EXPORTER_PID" | writable_unfrozen | wc -l)" 0 \
	"writable descriptors of maps that are not frozen, after the scrapes"

exporter_stop TERM

# Pins from before they had a group (root-only, 0700): skipped, and said
# once at startup. With -i, so that other attachments cannot change the count.
OLD=${EXTRA:0:11}o
mkdir -m 0700 "$SLUICE_PIN_ROOT/$OLD"
EXTRA_IFACES+=("$OLD")	# removed by the cleanup if the test stops early
exporter_start -i "$OLD"
scrape /metrics >"$m" || fail "scrape failed"
assert_eq "$(series "$m" sluice_scrape_skipped_interfaces)" 1 "a root-only pin directory is skipped"
grep -q "^sluice: warning: 1 pin directory could not be read as sluice-exporter in group sluice" "$EXPORTER_LOG" ||
	fail "no startup warning about the unreadable pin directory: $(cat "$EXPORTER_LOG")"
ok "the startup warns about it: $(grep '^sluice: warning' "$EXPORTER_LOG")"
exporter_stop TERM
rmdir "$SLUICE_PIN_ROOT/$OLD"
