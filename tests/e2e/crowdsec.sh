#!/usr/bin/env bash
# e2e/crowdsec: CrowdSec's decisions become sluice bans through Debian's
# crowdsec-custom-bouncer running contrib/crowdsec/sluice-bouncer.sh.
# Debian's crowdsec runs as the local API alone (-no-cs: no agent, no
# acquisition, no hub; no Central API), on 127.0.0.1 inside the rx
# namespace, its SQLite database in the test's temporary directory; cscli
# registers a machine and the bouncer; the bouncer runs there too, polling
# every second, and finds the interface and sluice in an env file.
#  1. Before any decision every source's packets pass.
#  2. cscli decisions add --ip (IPv4 and IPv6, 1m) and --range (a /24, and
#     an IPv6 /64 typed with host bits, as CrowdSec keeps it; 2m): ban
#     list -j shows the four in list crowdsec, added, the /64 without its
#     host bits, with about the decisions' time left; their sources'
#     packets are all dropped as banned (stats -j and each ban's dropped),
#     nftables behind sluice sees none of them, and a source without a
#     decision passes them all.
#  3. cscli decisions delete --ip / --range: the bans go, and every
#     packet passes again.
#  4. A decision of 5 s: its ban ends in XDP on its own, and the del
#     CrowdSec sends once the decision has expired finds nothing to lift,
#     which the script takes for success: the bouncer logs no error.
#
# It can fail: CROWDSEC_BREAK=NAME runs the bouncer on a broken copy of the
# script, and each of these fails it:
#   script  the script does nothing: no ban appears (step 2)
#   for     add without --for: the bans are forever (step 2's time left)
#   canonical  the range passed as CrowdSec keeps it: sluice refuses the
#           host bits, so the /64 is never banned (step 2)
#   del     del does nothing: the bans stay (step 3)
#   gone    a del of a ban already gone is an error (step 4)
#
# Network safety: every process runs in the test's namespaces; the local
# API listens on the rx namespace's loopback; nothing is downloaded.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/lib/nft.sh
. "$(dirname "$0")/../lib/nft.sh"

SCRIPT=$SLUICE_ROOT/contrib/crowdsec/sluice-bouncer.sh
LIST=crowdsec
IP4=198.18.0.7		# cscli decisions add --ip, 1m
IP6=2001:2::7		# the same, IPv6
RANGE=198.18.64.0/24	# cscli decisions add --range, 2m
IN_RANGE=198.18.64.9	# a source in it
RANGE6=2001:2:0:40::9/64	# the same, host bits and all
RANGE6_BAN=2001:2:0:40::/64	# what sluice bans
IN_RANGE6=2001:2:0:40::9
FREE=198.18.0.9		# no decision
EXPIRE=198.18.0.8	# step 4: a decision of 5 s
SOURCES=("$IP4" "$IP6" "$IN_RANGE" "$IN_RANGE6" "$FREE")	# FREE last
BANNED=$((${#SOURCES[@]} - 1))
COUNT=20		# packets per source and phase
WAIT_S=20		# longest wait for the bouncer to act (it polls every 1 s)
LAPI=127.0.0.1:8080	# in the rx namespace, where nothing else listens

# shellcheck disable=SC2016 # sed programs: the $ are the script's
declare -A BREAKS=(
	[script]='/^set -eu$/a exit 0'
	[for]='s/for_secs=\${secs}s/for_secs=/'
	[del]='/^set -eu$/a [ "$1" != del ] || exit 0'
	[canonical]='s/^value=\$(canonical "\$value")$/:/'
	[gone]='s/\*"no ban on "\*)/*"never said"*)/'
)
sed_break=
if [[ -n ${CROWDSEC_BREAK:-} ]]; then
	[[ -n ${BREAKS[$CROWDSEC_BREAK]:-} ]] || fail "CROWDSEC_BREAK must be one of: ${!BREAKS[*]}"
	sed_break=${BREAKS[$CROWDSEC_BREAK]}
	echo "# deliberately broken script: $CROWDSEC_BREAK"
fi

netns_init cs
for cmd in crowdsec cscli crowdsec-custom-bouncer; do
	command -v "$cmd" >/dev/null || skip "$cmd not installed (tools/install-deps.sh: crowdsec crowdsec-custom-bouncer)"
done
netns_setup
sluice_attach
nft_rx_init
# One counter per source and phase (the phase's port), behind sluice.
for phase in 1 2 3; do
	for i in "${!SOURCES[@]}"; do
		src=${SOURCES[$i]}
		if [[ $src == *:* ]]; then fam=ip6; else fam=ip; fi
		nft_rx_counter "s${i}p$phase" "$fam" saddr "$src" udp dport "700$phase"
	done
done

# --- crowdsec, cscli and the bouncer, all in the rx namespace -------------
CS=$(netns_tmp crowdsec)
mkdir -p "$CS/data" || fail "mkdir $CS/data"
in_rx() { nsenter --net="/run/netns/$NS_RX" "$@"; }
cscli_rx() { in_rx cscli -c "$CS/config.yaml" --error "$@"; }

# The tail of both logs, for a failure's message.
cs_logs() {
	echo "--- crowdsec ---"
	tail -n 5 "$CS/crowdsec.log" 2>/dev/null
	echo "--- bouncer ---"
	grep -v -e 'level=debug' -e "'0' decisions" "$CS/bouncer.log" 2>/dev/null | tail -n 8
	echo "--- bouncer runs of the script ---"
	grep 'level=debug msg="custom \[' "$CS/bouncer.log" 2>/dev/null | tail -n 8
}

# Polls CMD every 0.2 s until it succeeds, failing after WAIT_S seconds.
wait_for() { # WHAT CMD...
	local what=$1 t0 t_end
	shift
	t0=$(now)
	t_end=$(calc "$t0 + $WAIT_S")
	until "$@"; do
		awk -v n="$(now)" -v e="$t_end" 'BEGIN { exit !(n < e) }' ||
			fail "$what: not within ${WAIT_S}s; the logs end:
$(cs_logs)"
		sleep 0.2
	done
	ok "$what (after $(calc "$(now) - $t0" %.1f) s)"
}

cat >"$CS/config.yaml" <<EOF
common:
  daemonize: false
  log_media: stdout
  log_level: info
  working_dir: $CS
config_paths:
  config_dir: $CS/
  data_dir: $CS/data/
  simulation_path: $CS/simulation.yaml
  hub_dir: $CS/hub/
  index_path: $CS/hub/.index.json
  notification_dir: $CS/notifications/
  plugin_dir: $CS/plugins/
cscli:
  output: human
  color: false
db_config:
  log_level: info
  type: sqlite
  db_path: $CS/data/crowdsec.db
  use_wal: false
api:
  client:
    credentials_path: $CS/local_api_credentials.yaml
  server:
    log_level: info
    listen_uri: $LAPI
    profiles_path: $CS/profiles.yaml
    trusted_ips:
      - 127.0.0.1
prometheus:
  enabled: false
EOF
: >"$CS/local_api_credentials.yaml"
# The LAPI needs a profile; cscli's decisions do not go through it.
cat >"$CS/profiles.yaml" <<EOF
name: default_ip_remediation
filters:
 - Alert.Remediation == true && Alert.GetScope() == "Ip"
decisions:
 - type: ban
   duration: 4h
on_success: break
EOF

# Started as simple commands (not through in_rx), so $! is the process
# itself: nsenter and env exec what they run.
nsenter --net="/run/netns/$NS_RX" crowdsec -c "$CS/config.yaml" -no-cs -no-capi >"$CS/crowdsec.log" 2>&1 &
CS_PID=$!
netns_track_pid "$CS_PID"
lapi_up() {
	kill -0 "$CS_PID" 2>/dev/null || fail "crowdsec exited: $(tail -n 5 "$CS/crowdsec.log")"
	grep -q 'Local API listening' "$CS/crowdsec.log"
}
wait_for "crowdsec's local API listens on $LAPI" lapi_up

cscli_rx machines add sluice-e2e --auto --force >/dev/null || fail "cscli machines add failed"
KEY=$(cscli_rx bouncers add sluice-e2e -o raw) || fail "cscli bouncers add failed"
[[ $KEY =~ ^[0-9a-f]{32}$ ]] || fail "cscli bouncers add printed no API key: $KEY"
ok "cscli registered a machine and the bouncer"

BIN=$SCRIPT
if [[ -n $sed_break ]]; then
	BIN=$(netns_tmp sluice-bouncer-broken.sh)
	sed "$sed_break" "$SCRIPT" >"$BIN" || fail "cannot write the broken script"
	chmod 755 "$BIN"
	! cmp -s "$SCRIPT" "$BIN" || fail "CROWDSEC_BREAK=$CROWDSEC_BREAK changed nothing in $SCRIPT"
fi
printf 'SLUICE=%q\nSLUICE_IFACE=%q\n' "$SLUICE" "$IF_RX" >"$CS/sluice.env"
cat >"$CS/bouncer.yaml" <<EOF
bin_path: $BIN
feed_via_stdin: false
update_frequency: 1s
cache_retention_duration: 10s
daemonize: false
log_mode: stdout
log_level: debug
api_url: http://$LAPI/
api_key: $KEY
prometheus:
  enabled: false
EOF
# The script's settings come from the env file alone.
nsenter --net="/run/netns/$NS_RX" env -u SLUICE -u SLUICE_IFACE -u SLUICE_LIST SLUICE_BOUNCER_ENV="$CS/sluice.env" \
	crowdsec-custom-bouncer -c "$CS/bouncer.yaml" >"$CS/bouncer.log" 2>&1 &
BOUNCER_PID=$!
netns_track_pid "$BOUNCER_PID"
bouncer_polls() {
	kill -0 "$BOUNCER_PID" 2>/dev/null || fail "crowdsec-custom-bouncer exited: $(tail -n 5 "$CS/bouncer.log")"
	grep -q 'decisions/stream?startup=true' "$CS/bouncer.log"
}
wait_for "crowdsec-custom-bouncer polls the local API" bouncer_polls

# --- the checks ---------------------------------------------------------
# The prefix bans in list crowdsec, from the whole ban list -j (ban list
# --list exits 1 while the list does not exist).
crowdsec_bans() {
	local out
	out=$(sluice_rx -j ban list) || fail "sluice ban list -j failed"
	jq -c --arg l "$LIST" '[.[] | select(.prefix and any(.lists[]; . == $l))]' <<<"$out" ||
		fail "sluice ban list -j printed no array: $out"
}
ban_of() { # PREFIX BANS
	jq -c --arg p "$1" '.[] | select(.prefix == $p)' <<<"$2"
}
bans_are() { # N: whether list crowdsec holds N bans
	[[ $(crowdsec_bans | jq length) == "$1" ]]
}

flood_phase() { # PHASE: COUNT packets from each source to the phase's port
	local src dst out
	for src in "${SOURCES[@]}"; do
		if [[ $src == *:* ]]; then dst=$RX6; else dst=$RX4; fi
		out=$(flood --src "$src" --dst "$dst" --dport "700$1" --count "$COUNT" --pps 1000 --seconds 5)
		[[ $(flood_field "$out" .sent) == "$COUNT" ]] || fail "flood from $src sent $(flood_field "$out" .sent) of $COUNT"
	done
	sleep 0.2 # the last frames leave the veth's ring
}

passed() { # PHASE SOURCE_INDEX: what nftables behind sluice saw
	nft_rx_packets "s${2}p$1"
}

# 1. Before any decision.
s0=$(stats_snap)
flood_phase 1
s1=$(stats_snap)
for i in "${!SOURCES[@]}"; do
	assert_eq "$(passed 1 "$i")" "$COUNT" "before any decision: ${SOURCES[$i]} passed"
done
assert_eq "$(stats_delta "$s0" "$s1" packets drop banned)" 0 "before any decision: banned"

# 2. Decisions: the bans appear with their time left, and drop.
cscli_rx decisions add --ip "$IP4" --duration 1m >/dev/null || fail "cscli decisions add --ip $IP4 failed"
cscli_rx decisions add --ip "$IP6" --duration 1m >/dev/null || fail "cscli decisions add --ip $IP6 failed"
cscli_rx decisions add --range "$RANGE" --duration 2m >/dev/null || fail "cscli decisions add --range $RANGE failed"
cscli_rx decisions add --range "$RANGE6" --duration 2m >/dev/null || fail "cscli decisions add --range $RANGE6 failed"
wait_for "ban list shows the $BANNED decisions in list $LIST" bans_are "$BANNED"
bans=$(crowdsec_bans)
echo "ban list (list $LIST): $bans"
listed=$(sluice_rx -j ban list --list "$LIST") || fail "sluice ban list --list $LIST failed"
assert_eq "$(jq -c '[.[].prefix] | sort' <<<"$listed")" \
	"$(jq -c '[.[].prefix] | sort' <<<"$bans")" "ban list --list $LIST: the same prefixes"
for want in "$IP4/32 60" "$IP6/128 60" "$RANGE 120" "$RANGE6_BAN 120"; do
	read -r pfx secs <<<"$want"
	b=$(ban_of "$pfx" "$bans")
	[[ -n $b ]] || fail "ban list has no $pfx: $bans"
	assert_eq "$(jq -r .kind <<<"$b")" added "$pfx: kind"
	assert_eq "$(jq -r .list <<<"$b")" "$LIST" "$pfx: list"
	left=$(jq -r .left_seconds <<<"$b")
	assert_le "$left" "$secs" "$pfx: left_seconds (the decision's ${secs}s)"
	assert_ge "$left" $((secs - WAIT_S - 10)) "$pfx: left_seconds"
done

s0=$(stats_snap)
flood_phase 2
s1=$(stats_snap)
for ((i = 0; i < BANNED; i++)); do
	assert_eq "$(passed 2 "$i")" 0 "during the bans: ${SOURCES[$i]} passed"
done
assert_eq "$(passed 2 "$BANNED")" "$COUNT" "during the bans: $FREE (no decision) passed"
assert_eq "$(stats_delta "$s0" "$s1" packets drop banned)" $((BANNED * COUNT)) "during the bans: banned"
bans=$(crowdsec_bans)
for pfx in "$IP4/32" "$IP6/128" "$RANGE" "$RANGE6_BAN"; do
	assert_eq "$(ban_of "$pfx" "$bans" | jq -r .dropped)" "$COUNT" "$pfx: the ban's dropped"
done

# 3. The decisions deleted: the bans go, the packets pass.
cscli_rx decisions delete --ip "$IP4" >/dev/null || fail "cscli decisions delete --ip $IP4 failed"
cscli_rx decisions delete --ip "$IP6" >/dev/null || fail "cscli decisions delete --ip $IP6 failed"
cscli_rx decisions delete --range "$RANGE" >/dev/null || fail "cscli decisions delete --range $RANGE failed"
cscli_rx decisions delete --range "$RANGE6" >/dev/null || fail "cscli decisions delete --range $RANGE6 failed"
wait_for "the bans are lifted" bans_are 0
s0=$(stats_snap)
flood_phase 3
s1=$(stats_snap)
for i in "${!SOURCES[@]}"; do
	assert_eq "$(passed 3 "$i")" "$COUNT" "after the deletes: ${SOURCES[$i]} passed"
done
assert_eq "$(stats_delta "$s0" "$s1" packets drop banned)" 0 "after the deletes: banned"

# 4. A decision that expires: sluice ends the ban on its own, then CrowdSec
# sends the del, which finds nothing to lift.
cscli_rx decisions add --ip "$EXPIRE" --duration 5s >/dev/null || fail "cscli decisions add --ip $EXPIRE failed"
wait_for "ban list shows the 5 s decision" bans_are 1
# The bouncer logs "del ban on ADDR" before it runs the script, and
# "adding N decisions" once it has run the batch's dels.
del_done() {
	awk -v d="del ban on $EXPIRE " 'index($0, d) { seen = 1 } seen && /msg="adding / { done = 1 }
		END { exit !done }' "$CS/bouncer.log"
}
wait_for "the bouncer ran the del of the expired decision" del_done
assert_eq "$(crowdsec_bans)" "[]" "ban list after the decision expired"
errors=$(grep -c "Error in '[a-z]*' command" "$CS/bouncer.log" || true)
[[ $errors == 0 ]] || fail "the bouncer logged $errors failed runs of the script: $(cs_logs)"
ok "the bouncer logged no failed run of the script"

# 5. A range of every address (0.0.0.0/0, ::/0, and a /0 typed with host
# bits): the script refuses it (exit 2, one line) and sluice bans nothing.
for all in 0.0.0.0/0 ::/0 198.18.0.1/0; do
	rc=0
	err=$(nsenter --net="/run/netns/$NS_RX" env SLUICE_BOUNCER_ENV="$CS/sluice.env" \
		sh "$SCRIPT" add "$all" 60 crowdsecurity/test '{"type":"ban"}' 2>&1 >/dev/null) || rc=$?
	assert_eq "$rc" 2 "exit status of the script's add $all"
	assert_eq "$(wc -l <<<"$err")" 1 "lines of the script's refusal of $all"
	[[ $err == *"every"* ]] || fail "the refusal of $all does not say why: $err"
done
assert_eq "$(sluice_rx -j ban list | jq -c '[.[] | select(.prefix)]')" "[]" "prefix bans after the /0 decisions"
ok "a decision for every address (0.0.0.0/0, ::/0) is refused with exit 2 and one line; nothing is banned"
