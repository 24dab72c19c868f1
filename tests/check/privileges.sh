#!/usr/bin/env bash
# check/privileges: by default the check server runs as its own system
# user, sluice-check: not nobody, whose every process could SIGSTOP it
# (nginx then fails every request); a process of nobody's or of the
# exporter's user may not signal it. A missing default user is one line
# saying the package creates it. Once it has dropped privileges it holds
# write access to only the two maps it writes: the ban table and ban_state
# (the word that says the table has entries). Every other descriptor of a
# pinned map it holds is read-only (/proc/PID/fdinfo: flags O_RDONLY), the
# config map's above all (with a writable one the server could flip the
# live policy), and it holds no writable descriptor of any map that is not
# frozen. Every map descriptor is close-on-exec. With those descriptors it
# still bans: a client over a --ban-after 1 rule is listed by `ban list`,
# and XDP drops its packets.
# Shown to fail on the build whose default user was nobody ("the check
# server's user: nobody, want sluice-check") and against the build that
# kept the bans word in the config (the pinned maps it held writable were
# "bans config"; its duplicated ban table descriptor had no close-on-exec).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../lib/map_fds.sh"

command -v bpftool >/dev/null || skip "bpftool not installed"
command -v jq >/dev/null || skip "jq not installed"
getent passwd nobody >/dev/null || skip "no user nobody on this machine"
command -v unshare >/dev/null || skip "unshare not installed (util-linux)"
check_init ckp
sluice_rx limit set 198.18.0.0/24 --requests 1/s --burst 1 --ban 30s --ban-after 1 >/dev/null
# Explicit TCP listener and trust: the same whatever the default listener.
check_start --listen "127.0.0.1:$CHECK_PORT" --trust 127.0.0.1/32

assert_eq "$(ps -o user= -p "$CHECK_PID")" sluice-check "the check server's user"
uid=$(getent passwd sluice-check | cut -d: -f3)
assert_eq "$(awk '$1 == "Uid:" { print $2 $3 $4 $5 }' "/proc/$CHECK_PID/status")" \
	"$uid$uid$uid$uid" "the check server's uids (dropped to sluice-check)"
for u in nobody sluice-exporter; do
	setpriv --reuid "$u" --regid "$(id -g "$u")" --clear-groups kill -0 "$CHECK_PID" 2>/dev/null &&
		fail "a process of $u's may signal the check server (SIGSTOP would stop it)"
done
ok "processes of nobody and sluice-exporter may not signal the check server"

# Where the package did not create its user (a passwd without it, in a
# mount namespace of its own): one line that says so.
nopw=$(netns_tmp passwd)
grep -v '^sluice-check:' /etc/passwd >"$nopw"
rc=0
err=$(timeout 10 unshare --mount sh -c 'mount --bind "$1" /etc/passwd && shift && exec "$@"' sh "$nopw" \
	nsenter --net="/run/netns/$NS_RX" "$SLUICE_CHECK" -i "$IF_RX" check-server --listen 127.0.0.1:1 \
	2>&1 >/dev/null) || rc=$?
[[ $rc == 2 && $(wc -l <<<"$err") == 1 && $err == *"no user 'sluice-check': install the sluice package, which creates it, or run as root with --user USER"* ]] ||
	fail "check-server without its default user: exit $rc, want 2 and one line naming the package, got: $err"
ok "no user sluice-check: $err"

# The pinned maps of the interface, by id: NAME ID per line.
pins=$(netns_tmp pins.txt)
for p in "$SLUICE_PIN_ROOT/$IF_RX"/*; do
	id=$(bpftool map show pinned "$p" -j 2>/dev/null | jq -r '.id // empty') || true
	[[ -n $id ]] && echo "${p##*/} $id"
done >"$pins"
assert_ge "$(wc -l <"$pins")" 12 "maps pinned for $IF_RX"
writable_names=$(map_fds "$CHECK_PID" | awk 'NR == FNR { name[$2] = $1; next }
	$3 == "rw" { print ($2 in name) ? name[$2] : "unpinned:" $2 ":frozen=" $4 }' "$pins" - |
	sort | xargs)
echo "  map descriptors of the check server:"
map_fds "$CHECK_PID" | awk 'NR == FNR { name[$2] = $1; next }
	{ printf "    fd %s id %s %s %s\n", $1, $2, $3, ($2 in name) ? name[$2] : "(not pinned)" }' "$pins" -
# (map_fds prints FD ID MODE FROZEN; awk's $1 above is the pin list's name.)
pinned_rw=$(xargs -n 1 <<<"$writable_names" | grep -v '^unpinned:' | sort -u | xargs)
config_id=$(awk '$1 == "config" { print $2 }' "$pins")
[[ -n $config_id ]] || fail "no config pin for $IF_RX"
config_rw=$(map_fds "$CHECK_PID" | awk -v id="$config_id" '$2 == id && $3 == "rw"' | wc -l)
no_cloexec=
for fd in "/proc/$CHECK_PID/fd"/*; do
	[[ $(readlink "$fd" 2>/dev/null) == anon_inode:bpf-map ]] || continue
	flags=$(awk '$1 == "flags:" { print $2 }' "/proc/$CHECK_PID/fdinfo/${fd##*/}")
	((8#$flags & 8#2000000)) || no_cloexec+=" ${fd##*/}"
done
echo "  writable pinned maps: $pinned_rw; writable config descriptors: $config_rw;" \
	"map descriptors without close-on-exec:${no_cloexec:- none}"
assert_eq "$pinned_rw" "ban_state bans" "pinned maps the check server holds writable"
assert_eq "$config_rw" 0 "writable descriptors of the config map"
assert_eq "${no_cloexec:-none}" none "map descriptors of the check server without close-on-exec"
unfrozen=$(xargs -n 1 <<<"$writable_names" | grep '^unpinned:' | grep -vc ':frozen=1$' || true)
assert_eq "$unfrozen" 0 "writable descriptors of other maps that are not frozen"
assert_ge "$(map_fds "$CHECK_PID" | awk '$3 == "ro"' | wc -l)" 10 \
	"read-only descriptors of the maps it only reads"

# It still bans through them.
for ((i = 0; i < 4; i++)); do
	check "$TX4" >/dev/null
done
sluice_rx -j ban list | jq -e --arg a "$TX4" 'any(.[]; .source == $a and .kind == "escalated")' \
	>/dev/null || fail "no ban of $TX4 after 4 checks: $(sluice_rx -j ban list)"
ok "a client over its rule is banned by the check server"
# ... and XDP, reading the flag from ban_state, drops its packets.
out=$(flood --src "$TX4" --count 10 --pps 1000)
[[ $(flood_field "$out" .sent) == 10 ]] || fail "flood from $TX4: $out"
sleep 0.2 # the last frames leave the veth's ring
assert_ge "$(sluice_stat drop banned)" 10 "packets of $TX4 dropped as banned"
check_stop
