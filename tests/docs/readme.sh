#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# docs/readme: the README's walkthrough runs as written and does what it
# says. Each fenced block after a `<!-- recipe protect [KIND] -->` line is
# taken from README.md in order:
#   (no KIND)  shell lines, run in the server's namespace, `sudo` as is
#   file       a file named by its first line (`# /etc/sluice/...`): written
#   append     the same, appended to that file
#   client     shell lines, run in the client's namespace
# What the README names on the host is renamed for this test's namespaces:
# eth0 is the veth end sluice is attached to, /etc/sluice/ a scratch
# directory, SITE the test's nginx (contrib/nginx/sluice-check.conf, as
# tests/e2e/check_nginx_lib.sh runs it); the check server's socket is in the
# scratch directory, and sluice's pins in a bpffs of the test's own
# (SLUICE_BPFFS), so that no other interface counts as attached. The
# assertions are the README's words: would-be drops show in stats, top and
# limit list and nothing is dropped under --monitor; after enforcing, the
# flood is dropped as rate_limited; a client's 40 requests get 200 about
# twenty times, then 429.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/e2e/check_nginx_lib.sh
. "$(dirname "$0")/../e2e/check_nginx_lib.sh"

README=${README:-$SLUICE_ROOT/README.md}
FLOOD_SRC1=198.18.0.77	# floods from addresses of their own: the client's stays fresh
FLOOD_SRC2=198.18.0.78

netns_init rdme
nginx_init
command -v curl >/dev/null || skip "curl not installed"

# sluice's pins in a bpffs of this test's own, removed after the namespaces.
BPFFS=$(mktemp -d /tmp/sluice-docs-bpffs.XXXXXX)
mount -t bpf bpf "$BPFFS" || fail "cannot mount a bpffs at $BPFFS"
export SLUICE_BPFFS=$BPFFS
SLUICE_PIN_ROOT=$BPFFS/sluice
readme_cleanup() {
	local rc=$1
	set +e
	(nginx_diag_cleanup "$rc")
	umount "$BPFFS" && rmdir "$BPFFS"
	exit "$rc"
}
trap 'readme_cleanup $?' EXIT

ETC=$(netns_tmp etc-sluice)
BIN=$(netns_tmp bin)
PIDS=$(netns_tmp recipe.pids)
mkdir -p "$ETC" "$BIN"
ln -s "$SLUICE" "$BIN/sluice"
: >"$PIDS"
netns_setup

# The blocks, one file each: NN.KIND in $BLOCKS.
BLOCKS=$(netns_tmp blocks)
mkdir -p "$BLOCKS"
awk -v dir="$BLOCKS" '
	/^<!-- recipe protect( [a-z]+)? -->$/ { kind = ($4 == "-->") ? "run" : $4; want = 1; next }
	want && /^```/ { n++; f = sprintf("%s/%02d.%s", dir, n, kind); inblock = 1; want = 0; printf "" >f; next }
	inblock && /^```/ { inblock = 0; close(f); next }
	inblock { print >f }
' "$README"
mapfile -t blocks < <(find "$BLOCKS" -type f | sort)
((${#blocks[@]} >= 6)) || fail "README.md has ${#blocks[@]} recipe blocks, want the walkthrough's 6 or more"
echo "# ${#blocks[@]} recipe blocks in README.md"

# The README's names for the host, renamed for this test.
rename() { # FILE
	sed -e "s|/etc/sluice/|$ETC/|g" -e "s|\\beth0\\b|$IF_RX|g" -e "s|SITE|$RX4:$HTTP_PORT|g" "$1"
}

# What the recipe lines run with: sudo is a no-op (the test is root),
# `--watch` runs 3 s, a daemon runs in the background with its output to
# a log and its PID recorded, the check server on the test's socket.
# shellcheck disable=SC2016 # expanded by the recipe's shell
PREAMBLE='
sudo() { "$@"; }
sluice() {
	case " $* " in
	*" --watch "*) timeout 3 "$(type -P sluice)" "$@" || (($? == 124)) ;;
	*" check-server "*)
		command sluice "$@" --socket "$CHECK_SOCK" >>"$LOG" 2>&1 &
		echo $! >>"$PIDS" ;;
	*) command sluice "$@" ;;
	esac
}
'

run_block() { # FILE: prints its output
	local script rc=0
	script=$(rename "$1")
	echo "## $(basename "$1"):" >&2
	printf '## | %s\n' "${script//$'\n'/$'\n'## | }" >&2
	nsenter --net="/run/netns/$NS_RX" env PATH="$BIN:$PATH" CHECK_SOCK="$CHECK_SOCK" \
		PIDS="$PIDS" LOG="$(netns_tmp check.log)" SLUICE_BPFFS="$BPFFS" \
		bash -e -o pipefail -c "$PREAMBLE$script" || rc=$?
	((rc == 0)) || fail "README recipe block $(basename "$1") failed (exit $rc)"
}

write_file() { # FILE append|file
	local path
	path=$(rename "$1" | sed -n '1s/^# \([^ :]*\).*/\1/p')
	[[ $path == "$ETC"/* ]] || fail "block $(basename "$1") does not name a file in /etc/sluice/ on its first line"
	if [[ $2 == append ]]; then rename "$1" >>"$path"; else rename "$1" >"$path"; fi
	echo "## $(basename "$1"): $2 $path" >&2
}

monitor_checks() { # OUTPUT of the watch block
	local out
	out=$(flood --src "$FLOOD_SRC1" --count 1500 --pps 3000 --seconds 5)
	echo "# flood under --monitor: $out"
	assert_ge "$(sluice_stat pass monitored)" 500 "packets counted monitored under --monitor"
	assert_eq "$(sluice_stat drop rate_limited)" 0 "packets dropped under --monitor"
}

enforce_checks() {
	local out
	sluice_rx policy show | grep -q -- --monitor && fail "the policy still has --monitor after enforcing"
	out=$(flood --src "$FLOOD_SRC2" --count 1500 --pps 3000 --seconds 5)
	echo "# flood after enforcing: $out"
	assert_ge "$(sluice_stat drop rate_limited)" 500 "packets dropped as rate_limited after enforcing"
	ok "enforced: the flood is dropped"
}

nginx_up() {
	local i pid
	while read -r pid; do netns_track_pid "$pid"; done <"$PIDS"
	for ((i = 0; i < 50; i++)); do
		check_ask /metrics -o /dev/null 2>/dev/null && break
		((i < 49)) || fail "the recipe's check server does not answer on $CHECK_SOCK"
		sleep 0.1
	done
	nginx_conf "$NGINX_DIR/site.conf"
	nginx_conf_main "$NGINX_DIR/nginx.conf" "$NGINX_DIR/site.conf"
	nginx_start "$NGINX_DIR/nginx.conf"
	ok "check server (the recipe's) and nginx (contrib's) are up"
}

client_checks() { # OUTPUT
	local codes=() n200=0 c
	read -ra codes <<<"$1"
	((${#codes[@]} == 40)) || fail "the client got ${#codes[@]} answers, not 40: $1"
	for c in "${codes[@]}"; do
		[[ $c == 200 ]] || break
		n200=$((n200 + 1))
	done
	assert_ge "$n200" 20 "answers 200 before the first other (the request burst)"
	[[ " $1 " == *" 429 "* ]] || fail "no 429 in 40 requests back to back: $1"
	ok "the client gets 200 $n200 times, then 429"
}

watched=0 enforced=0
for b in "${blocks[@]}"; do
	kind=${b##*.}
	case $kind in
	file | append) write_file "$b" "$kind" ;;
	client)
		out=$(in_tx bash -e -o pipefail -c "$(rename "$b")") || fail "client block $(basename "$b") failed"
		echo "# client: $out"
		client_checks "$out"
		;;
	run)
		# the flood goes before the block that watches
		if grep -q -- '--watch' "$b"; then monitor_checks; fi
		out=$(run_block "$b")
		printf '%s\n' "$out"
		if grep -q -- '--watch' "$b"; then
			for w in monitored 'WOULD DROP' 'would drop'; do
				grep -q "$w" <<<"$out" || fail "the README says '$w' shows while watching; the output has none"
			done
			ok "under --monitor: monitored in stats, WOULD DROP in top, would drop in limit list"
			watched=1
		fi
		if grep -q 'sed -i .*--monitor' "$b"; then
			enforce_checks
			enforced=1
		fi
		if grep -q 'check-server' "$b"; then nginx_up; fi
		;;
	*) fail "unknown recipe block kind '$kind'" ;;
	esac
done
((watched && enforced)) || fail "the README's walkthrough has no watch block or no enforce block"
ok "README.md's walkthrough runs as written"
