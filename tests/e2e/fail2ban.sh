#!/usr/bin/env bash
# e2e/fail2ban: Debian's fail2ban (fail2ban-server, started here with its
# own configuration, socket, pidfile and database in the test's scratch
# directory) bans through contrib/fail2ban/action.d/sluice.conf, and sluice
# drops the banned sources in XDP.
#
# Two jails read two log files the test writes ("auth failure from ADDR"),
# maxretry 3, both with the contrib action for the rx veth, in the list
# fail2ban: one with a bantime of BANTIME seconds, one without end
# (bantime -1). Checks:
#   - a source that failed 3 times (an IPv4 one, an IPv6 one) is in `ban
#     list -j`, list fail2ban, kind added, with at most BANTIME seconds left
#     (none: null, for the other jail), and PROBE packets from it are all
#     dropped as `banned`, none reaching the nftables counter behind
#     sluice, while another source's all pass;
#   - once its bantime is up fail2ban unbans it (sluice's own expiry of the
#     same length usually comes first: the action's unban of a ban already
#     gone must not fail), it leaves the list and its packets pass again;
#   - `fail2ban-client set JAIL unbanip` lifts a ban without end through the
#     action's unban, and so does fail2ban's stop; an unban of a ban that
#     `sluice ban del` lifted behind fail2ban's back succeeds; a ban sluice
#     lost comes back from fail2ban's database when the jail restarts;
#   - bans another list holds (a feed's, in list feed) are never touched: a
#     /24 the feed bans, before fail2ban starts and after it stopped, and
#     an address both the feed and the timed jail ban, which stays banned
#     (forever, in list feed alone) after fail2ban's unban; and each list
#     keeps its own end: the feed letting that address go leaves fail2ban's
#     bantime, not the feed's forever;
#   - fail2ban's log has no ERROR or CRITICAL line: every command of the
#     action succeeded.
#
# fail2ban runs in the host's namespaces; the action reaches the rx veth's
# pins through its `sluice` parameter, `nsenter --net=/run/netns/NS_RX
# build/sluice`, as sluice_rx does. Only the fail2ban-server this test
# started is stopped (fail2ban-client stop on its socket, then its PID).
#
# FAIL2BAN_BREAK=action makes the action's sluice /bin/true (every command
# a no-op): no ban ever reaches sluice and the test must fail.
# FAIL2BAN_BREAK=unban makes the second jail's actionunban a no-op: the ban
# without end is never lifted and the test must fail (the first jail's ban
# still ends by sluice's own expiry).
# FAIL2BAN_BREAK=gone makes actionunban a bare `sluice ban del`, which exits
# 1 for a ban already lifted: fail2ban logs errors and the test must fail.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"

BREAK=${FAIL2BAN_BREAK:-}
[[ -z $BREAK || $BREAK =~ ^(action|unban|gone)$ ]] ||
	fail "FAIL2BAN_BREAK must be action, unban, gone or unset"

BANTIME=20	# seconds, the timed jail's bantime (the checks during the ban fit in it on a busy machine)
MAXRETRY=3
PROBE=40	# packets per probe of a source
LIST=fail2ban
SRC=198.18.5.7	# banned by the timed jail, then unbanned when its time is up
SRC6=2001:2::5:7	# the same, IPv6
OTHER=198.18.5.8	# never fails: always passes
PERM=198.18.5.9	# banned without end, lifted by fail2ban-client unbanip
GONE=198.18.5.10	# banned without end, lifted by sluice ban del first
STOPPED=198.18.5.11	# banned without end, lost, restored by a jail restart, lifted by the stop
FEED=198.18.6.0/24	# a feed's ban, list feed: fail2ban never touches it
FEED_SRC=198.18.6.1
BOTH=198.18.5.12	# banned by the feed, and by the timed jail too
F2B_WAIT=20	# seconds for fail2ban to start, ban, unban or stop

command -v fail2ban-server >/dev/null || skip "fail2ban not installed (tools/install-deps.sh)"
command -v fail2ban-client >/dev/null || skip "fail2ban-client not installed (tools/install-deps.sh)"
netns_init f2b
netns_setup
sluice_attach
nft_rx_init
nft_rx_counter c_src ip saddr "$SRC"
nft_rx_counter c_src6 ip6 saddr "$SRC6"
nft_rx_counter c_other ip saddr "$OTHER"
nft_rx_counter c_perm ip saddr "$PERM"
nft_rx_counter c_feed ip saddr "$FEED_SRC"
nft_rx_counter c_both ip saddr "$BOTH"
nft_rx_counter c_stopped ip saddr "$STOPPED"

# --- helpers -----------------------------------------------------------------

# Runs CMD... every 0.2 s until it succeeds; fails naming WHAT after SECS.
wait_until() { # SECS WHAT CMD...
	local secs=$1 what=$2 deadline
	shift 2
	deadline=$(calc "$(now) + $secs")
	until "$@"; do
		awk -v n="$(now)" -v d="$deadline" 'BEGIN { exit !(n > d) }' &&
			fail "$what: not within ${secs}s"
		sleep 0.2
	done
}

# The entry of prefix PFX (ADDR: ADDR/32 or /128) in `ban list -j` if it is
# in list LIST (default fail2ban); empty when it is not.
ban_entry() { # PFX [LIST]
	local out pfx=$1
	if [[ $pfx == */* ]]; then
		:
	elif [[ $pfx == *:* ]]; then
		pfx+=/128
	else
		pfx+=/32
	fi
	out=$(sluice_rx -j ban list) || fail "sluice ban list -j failed"
	jq -c --arg p "$pfx" --arg l "${2:-$LIST}" \
		'[.[] | select(.prefix == $p and (.lists | index($l)))] | .[0] // empty' <<<"$out" ||
		fail "sluice ban list -j printed no array or no lists: $out"
}
is_banned() { [[ -n $(ban_entry "$@") ]]; }
not_banned() { [[ -z $(ban_entry "$@") ]]; }

# Sends PROBE packets from ADDR; prints how many of them sluice dropped as
# banned and how many the nftables counter NAME behind it saw.
probe() { # ADDR COUNTER
	local s0 s1 n0 out dst=$RX4
	[[ $1 == *:* ]] && dst=$RX6
	s0=$(stats_snap)
	n0=$(nft_rx_packets "$2")
	out=$(flood --src "$1" --dst "$dst" --dport 5401 --count "$PROBE" --pps 1000 --seconds 5)
	[[ $(flood_field "$out" .sent) == "$PROBE" ]] ||
		fail "probe from $1 sent $(flood_field "$out" .sent) of $PROBE"
	sleep 0.2 # the last frames leave the veth's ring
	s1=$(stats_snap)
	echo "$(stats_delta "$s0" "$s1" packets drop banned) $(($(nft_rx_packets "$2") - n0))"
}

# Asserts that PROBE packets from ADDR are all dropped as banned (dropped)
# or all pass (passed).
assert_probe() { # ADDR COUNTER dropped|passed WHAT
	local banned seen
	read -r banned seen < <(probe "$1" "$2")
	if [[ $3 == dropped ]]; then
		assert_eq "$banned/$seen" "$PROBE/0" "$4: of $PROBE packets from $1, dropped as banned/seen behind sluice"
	else
		assert_eq "$banned/$seen" "0/$PROBE" "$4: of $PROBE packets from $1, dropped as banned/seen behind sluice"
	fi
}

# --- fail2ban's configuration, all in the scratch directory ------------------

F2B=$(netns_tmp fail2ban)
F2B_SOCK=$F2B/f2b.sock
F2B_LOG=$F2B/fail2ban.log
TIMED_LOG=$F2B/timed.log
PERM_LOG=$F2B/perm.log
mkdir -p "$F2B/action.d" "$F2B/filter.d" || fail "cannot create $F2B"
cp "$SLUICE_ROOT/contrib/fail2ban/action.d/sluice.conf" "$F2B/action.d/" ||
	fail "cannot copy contrib/fail2ban/action.d/sluice.conf"
: >"$TIMED_LOG"
: >"$PERM_LOG"

SLUICE_ABS=$(realpath "$SLUICE") || fail "cannot resolve $SLUICE"
ACTION_SLUICE="$(command -v nsenter) --net=/run/netns/$NS_RX $SLUICE_ABS"
ACTION_EXTRA=
PERM_EXTRA=
case $BREAK in
action) ACTION_SLUICE=/bin/true ;;
unban) PERM_EXTRA=', actionunban="true"' ;;
gone) ACTION_EXTRA=', actionunban="<sluice> -i <iface> ban del <ip> --list <list>"' ;;
esac

cat >"$F2B/fail2ban.conf" <<EOF || fail "cannot write fail2ban.conf"
[Definition]
loglevel = INFO
logtarget = $F2B_LOG
syslogsocket = auto
socket = $F2B_SOCK
pidfile = $F2B/f2b.pid
dbfile = $F2B/f2b.sqlite3
dbpurgeage = 1h
allowipv6 = auto
EOF
cat >"$F2B/filter.d/sluice-e2e.conf" <<'EOF' || fail "cannot write the filter"
[Definition]
failregex = ^auth failure from <HOST>$
datepattern = {NONE}
EOF
cat >"$F2B/jail.conf" <<EOF || fail "cannot write jail.conf"
[DEFAULT]
backend = polling
usedns = no
ignoreself = false
ignoreip =
findtime = 60
maxretry = $MAXRETRY
filter = sluice-e2e

[sluice-timed]
enabled = true
logpath = $TIMED_LOG
bantime = $BANTIME
action = sluice[iface="$IF_RX", sluice="$ACTION_SLUICE"$ACTION_EXTRA]

[sluice-perm]
enabled = true
logpath = $PERM_LOG
bantime = -1
action = sluice[iface="$IF_RX", sluice="$ACTION_SLUICE"$ACTION_EXTRA$PERM_EXTRA]
EOF

f2b_client() { timeout 20 fail2ban-client -c "$F2B" -s "$F2B_SOCK" "$@"; }
f2b_up() { f2b_client ping >/dev/null 2>&1; }
# Whether fail2ban's log has the line "[JAIL] WHAT ADDR" (Ban, Unban).
f2b_logged() { grep -qE "NOTICE +\[$1\] $2 ${3//./\\.}\$" "$F2B_LOG"; }
# No ERROR or CRITICAL line in fail2ban's log: every command of the action
# succeeded (a failed one is logged with its stderr, shown here).
assert_f2b_clean() { # WHAT
	local errors
	errors=$(grep -E ' (ERROR|CRITICAL) ' "$F2B_LOG" || true)
	[[ -z $errors ]] || fail "$1: fail2ban logged errors:"$'\n'"$errors"
	ok "$1: no ERROR or CRITICAL line in fail2ban's log"
}
fails() { # LOG ADDR: MAXRETRY failures of ADDR
	local i
	for ((i = 0; i < MAXRETRY; i++)); do echo "auth failure from $2"; done >>"$1"
}

# --- before fail2ban: a feed's ban, another list -------------------------------

sluice_rx ban add "$FEED" --list feed || fail "sluice ban add $FEED --list feed failed"
sluice_rx ban add "$BOTH" --list feed || fail "sluice ban add $BOTH --list feed failed"
assert_probe "$FEED_SRC" c_feed dropped "feed's ban of $FEED before fail2ban"

fail2ban-server -c "$F2B" -t >"$F2B/config-test.out" 2>&1 ||
	fail "fail2ban-server -t rejects the configuration: $(tail -n 5 "$F2B/config-test.out")"
fail2ban-server -f -x -c "$F2B" -s "$F2B_SOCK" -p "$F2B/f2b.pid" >"$F2B/server.out" 2>&1 &
F2B_PID=$!
netns_track_pid "$F2B_PID"
wait_until "$F2B_WAIT" "fail2ban-server answers on $F2B_SOCK" f2b_up
ok "fail2ban-server $(fail2ban-server -V) started (pid $F2B_PID)"
status=$(f2b_client status) || fail "fail2ban-client status failed"
[[ $status == *sluice-timed* && $status == *sluice-perm* ]] || fail "jails not started: $status"
ok "jails sluice-timed and sluice-perm started"
[[ -n $(ban_entry "$FEED" feed) ]] || fail "no ban of $FEED in list feed after fail2ban started"
ok "feed's ban of $FEED after fail2ban started"

# --- the timed jail: ban, drop, unban when its time is up ------------------------

assert_probe "$SRC" c_src passed "before the failures"
assert_probe "$SRC6" c_src6 passed "before the failures"
fails "$TIMED_LOG" "$SRC"
fails "$TIMED_LOG" "$SRC6"
fails "$TIMED_LOG" "$BOTH"
t_fail=$(now)
wait_until "$F2B_WAIT" "fail2ban's ban of $SRC in sluice's ban list (list $LIST)" is_banned "$SRC"
wait_until "$F2B_WAIT" "fail2ban's ban of $SRC6 in sluice's ban list (list $LIST)" is_banned "$SRC6"
wait_until "$F2B_WAIT" "fail2ban's ban of $BOTH in sluice's ban list (list $LIST)" is_banned "$BOTH"
t_ban=$(now)
ok "$SRC banned in sluice $(calc "$t_ban - $t_fail" %.1f)s after its $MAXRETRY failures"
f2b_logged sluice-timed Ban "$SRC" || fail "fail2ban's log has no Ban of $SRC"
entry=$(ban_entry "$SRC")
echo "ban list entry: $entry"
assert_eq "$(jq -r .kind <<<"$entry")" added "the ban's kind"
assert_le "$(jq -r .left_seconds <<<"$entry")" "$BANTIME" "its time left (bantime ${BANTIME}s)"
assert_ge "$(jq -r .left_seconds <<<"$entry")" "$(calc "$BANTIME - ($(now) - $t_fail) - 0.1")" \
	"its time left (bantime less the time since the failures)"
assert_probe "$SRC" c_src dropped "during the ban"
entry=$(ban_entry "$SRC")
assert_probe "$SRC6" c_src6 dropped "during the ban"
assert_probe "$OTHER" c_other passed "another source during the ban"
# The bans began after the failures were written: all of the above within
# their time, with a second to spare.
elapsed=$(calc "$(now) - $t_fail")
awk -v e="$elapsed" -v b="$BANTIME" 'BEGIN { exit !(e < b - 1) }' ||
	fail "the machine was too slow: the checks during the ban ended ${elapsed}s after the failures"
assert_eq "$(jq -r .dropped <<<"$entry")" "$PROBE" "the ban entry's dropped"
entry=$(ban_entry "$BOTH")
echo "ban list entry: $entry"
assert_eq "$(jq -c .lists <<<"$entry")" '["feed","fail2ban"]' "lists of $BOTH, banned by the feed and by fail2ban"
assert_eq "$(jq -r .left_seconds <<<"$entry")" null "time left of $BOTH (the feed's forever wins)"
# Each list keeps its own end: the feed letting go leaves fail2ban's, not
# the feed's forever. The feed then bans it again.
sluice_rx ban del "$BOTH" --list feed >/dev/null 2>&1 || fail "ban del $BOTH --list feed failed"
entry=$(ban_entry "$BOTH")
assert_eq "$(jq -r --argjson b "$BANTIME" '.left_seconds != null and .left_seconds <= $b' <<<"$entry")" true \
	"time left of $BOTH once the feed let it go (fail2ban's bantime, not forever): $entry"
sluice_rx ban add "$BOTH" --list feed 2>/dev/null || fail "sluice ban add $BOTH --list feed failed"

wait_until $((BANTIME + F2B_WAIT)) "fail2ban's unban of $SRC" f2b_logged sluice-timed Unban "$SRC"
wait_until 5 "$SRC out of sluice's ban list" not_banned "$SRC"
ok "$SRC unbanned $(calc "$(now) - $t_ban" %.1f)s after its ban was seen (bantime ${BANTIME}s)"
assert_probe "$SRC" c_src passed "after the unban"
wait_until 5 "fail2ban's unban of $SRC6" f2b_logged sluice-timed Unban "$SRC6"
wait_until 5 "$SRC6 out of sluice's ban list" not_banned "$SRC6"
assert_probe "$SRC6" c_src6 passed "after the unban"
wait_until 5 "fail2ban's unban of $BOTH" f2b_logged sluice-timed Unban "$BOTH"
wait_until 5 "$BOTH out of list $LIST" not_banned "$BOTH"
entry=$(ban_entry "$BOTH" feed)
echo "ban list entry: $entry"
assert_eq "$(jq -c .lists <<<"$entry")" '["feed"]' "lists of $BOTH after fail2ban's unban"
assert_probe "$BOTH" c_both dropped "$BOTH, still the feed's, after fail2ban's unban"
assert_f2b_clean "the timed jail's unbans, which race sluice's own expiry"

# --- the jail without end: unbanip, an unban of a ban already gone, stop --------

fails "$PERM_LOG" "$PERM"
wait_until "$F2B_WAIT" "fail2ban's ban of $PERM in sluice's ban list" is_banned "$PERM"
entry=$(ban_entry "$PERM")
echo "ban list entry: $entry"
assert_eq "$(jq -r .left_seconds <<<"$entry")" null "time left of a ban with bantime -1"
assert_probe "$PERM" c_perm dropped "during the ban without end"
f2b_client set sluice-perm unbanip "$PERM" >/dev/null || fail "fail2ban-client unbanip $PERM failed"
wait_until 5 "$PERM out of sluice's ban list after fail2ban-client unbanip" not_banned "$PERM"
ok "fail2ban-client set sluice-perm unbanip $PERM lifted its ban in sluice"
assert_probe "$PERM" c_perm passed "after unbanip"

fails "$PERM_LOG" "$GONE"
wait_until "$F2B_WAIT" "fail2ban's ban of $GONE in sluice's ban list" is_banned "$GONE"
sluice_rx ban del "$GONE" --list "$LIST" || fail "sluice ban del $GONE failed"
f2b_client set sluice-perm unbanip "$GONE" >/dev/null || fail "fail2ban-client unbanip $GONE failed"
wait_until 5 "fail2ban's unban of $GONE" f2b_logged sluice-perm Unban "$GONE"
sleep 0.5 # the action's command has run when the Unban line is written; room for its log
assert_f2b_clean "unbanip of a ban sluice ban del had lifted"

# A ban sluice lost (as a detach and attach lose them all) comes back when
# the jail restarts: fail2ban bans again what its database holds.
fails "$PERM_LOG" "$STOPPED"
wait_until "$F2B_WAIT" "fail2ban's ban of $STOPPED in sluice's ban list" is_banned "$STOPPED"
sluice_rx ban del "$STOPPED" --list "$LIST" || fail "sluice ban del $STOPPED failed"
f2b_client reload --restart sluice-perm >/dev/null || fail "fail2ban-client reload --restart sluice-perm failed"
wait_until "$F2B_WAIT" "$STOPPED banned again after the jail's restart" is_banned "$STOPPED"
ok "fail2ban-client reload --restart sluice-perm banned $STOPPED again from fail2ban's database"
assert_probe "$STOPPED" c_stopped dropped "after the jail's restart"
f2b_client stop >/dev/null || fail "fail2ban-client stop failed"
for ((i = 0; i < F2B_WAIT * 5; i++)); do
	kill -0 "$F2B_PID" 2>/dev/null || break
	sleep 0.2
done
kill -0 "$F2B_PID" 2>/dev/null && fail "fail2ban-server (pid $F2B_PID) still running ${F2B_WAIT}s after stop"
rc=0
wait "$F2B_PID" || rc=$?
# Forget the PID: the cleanup must not signal one the system may reuse.
keep=()
for pid in "${NETNS_PIDS[@]}"; do [[ $pid == "$F2B_PID" ]] || keep+=("$pid"); done
NETNS_PIDS=("${keep[@]}")
assert_eq "$rc" 0 "fail2ban-server's exit status after fail2ban-client stop"
entry=$(ban_entry "$STOPPED")
assert_eq "${entry:-none}" none "$STOPPED's ban in list $LIST after fail2ban stopped (its stop unbans)"
assert_f2b_clean "fail2ban's stop"

# --- the feed's ban, untouched -------------------------------------------------

remaining=$(sluice_rx -j ban list) || fail "sluice ban list -j failed"
echo "ban list after fail2ban stopped: $remaining"
assert_eq "$(jq -c '[.[] | select(.prefix) | [.prefix, .lists]] | sort' <<<"$remaining")" \
	"$(jq -nc --arg a "$FEED" --arg b "$BOTH/32" '[[$a, ["feed"]], [$b, ["feed"]]] | sort')" \
	"prefix bans after fail2ban stopped: the feed's two"
assert_probe "$FEED_SRC" c_feed dropped "feed's ban of $FEED after fail2ban stopped"
