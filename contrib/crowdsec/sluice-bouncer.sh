#!/bin/sh
# sluice-bouncer.sh: the program crowdsec-custom-bouncer runs for each
# CrowdSec decision; it makes a ban decision a sluice ban, dropped in XDP.
#
# crowdsec-custom-bouncer (feed_via_stdin: false) runs, once per decision:
#   sluice-bouncer.sh add|del VALUE SECONDS SCENARIO JSON
# VALUE is an address (scope Ip) or a prefix ADDR/LEN (scope Range);
# SECONDS the decision's time left in whole seconds, rounded down (0 or
# less in a del); JSON the decision. This runs
#   add: sluice [-i IFACE] ban add VALUE --for SECONDSs --list LIST
#        (for ever past sluice's 3650 days, until the del)
#   del: sluice [-i IFACE] ban del VALUE --list LIST
# for decisions of type ban; others (captcha, throttle) mean nothing at
# XDP and are left to the bouncers that can serve them. A range of every
# address (0.0.0.0/0, ::/0) is refused with exit 2: it would ban every
# source.
#
# Settings, from the environment, else from the file $SLUICE_BOUNCER_ENV
# (default /etc/sluice/crowdsec.env; shell VAR=value lines; optional):
#   SLUICE_IFACE  the interface (needed only where sluice is attached to
#                 more than one)
#   SLUICE        the sluice binary (default: sluice on PATH, else
#                 /usr/sbin/sluice, the package's, or /usr/local/sbin/sluice,
#                 make install's)
#   SLUICE_LIST   the ban list (default crowdsec)
#
# Exit 0 when sluice holds what the decision says, 1 with one line on
# stderr when it does not (the bouncer logs that line and does not retry),
# 2 for arguments it cannot use. A del of a ban sluice no longer holds
# (sluice answers "no ban on ...") is success: the ban ends in XDP when
# its --for runs out, just before CrowdSec sends the del of the expired
# decision, and the local API may send one del more than once.
set -eu

me='sluice-bouncer'

die() {
	echo "$me: $*" >&2
	exit 1
}

usage() {
	echo "$me: $* (usage: sluice-bouncer.sh add|del VALUE SECONDS [SCENARIO [JSON]])" >&2
	exit 2
}

env_file=${SLUICE_BOUNCER_ENV:-/etc/sluice/crowdsec.env}
if [ -e "$env_file" ] || [ -n "${SLUICE_BOUNCER_ENV:-}" ]; then
	[ -r "$env_file" ] || die "cannot read $env_file: fix its permissions or SLUICE_BOUNCER_ENV"
	# The environment wins over the file.
	env_iface=${SLUICE_IFACE-} env_sluice=${SLUICE-} env_list=${SLUICE_LIST-}
	# shellcheck source=/dev/null
	. "$env_file"
	SLUICE_IFACE=${env_iface:-${SLUICE_IFACE-}}
	SLUICE=${env_sluice:-${SLUICE-}}
	SLUICE_LIST=${env_list:-${SLUICE_LIST-}}
fi
iface=${SLUICE_IFACE-}
sluice=${SLUICE:-$(command -v sluice || true)}
for p in /usr/sbin/sluice /usr/local/sbin/sluice; do
	[ -n "$sluice" ] || [ ! -x "$p" ] || sluice=$p
done
list=${SLUICE_LIST:-crowdsec}
[ -n "$sluice" ] || die "no sluice on PATH, in /usr/sbin or /usr/local/sbin: set SLUICE to the sluice binary"
[ -x "$sluice" ] || die "$sluice is not an executable: set SLUICE to the sluice binary"

[ $# -ge 3 ] || usage "want at least 3 arguments, got $#"
action=$1 value=$2 secs=$3 json=${5-}
case $action in
add | del) ;;
*) usage "unknown action '$action'" ;;
esac
# An address or a prefix, and never an option to sluice.
case $value in
'' | -* | *[!0-9A-Fa-f.:/]*) usage "'$value' is no address or ADDR/LEN (scope Ip or Range)" ;;
esac
case $secs in
'' | - | *[!0-9-]* | ?*-*) usage "'$secs' is no whole number of seconds" ;;
esac
# Go's encoding/json writes "type":"ban" without spaces; a decision
# without its JSON is taken for a ban.
case $json in
'' | *'"type":"ban"'*) ;;
*)
	echo "$me: $action $value: not a ban decision, left alone" >&2
	exit 0
	;;
esac

# A prefix with its host bits cleared: CrowdSec keeps a range as it was
# typed (198.51.100.7/24) and means the network, which sluice wants as
# 198.51.100.0/24. Anything it cannot read goes as it is, for sluice to
# refuse.
canonical() {
	case $1 in
	*/*) ;;
	*)
		echo "$1"
		return
		;;
	esac
	printf '%s\n' "$1" | awk -F/ '
	function hex(s,   i, n) {
		n = 0
		s = tolower(s)
		for (i = 1; i <= length(s); i++)
			n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return n
	}
	# v, a field of width bits, with only its top bits kept
	function keep(v, bits, width) {
		if (bits >= width)
			return v
		if (bits <= 0)
			return 0
		return v - v % 2 ^ (width - bits)
	}
	NF != 2 || $2 !~ /^[0-9]+$/ { print; next }
	$1 ~ /^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$/ {
		split($1, o, ".")
		out = keep(o[1] + 0, $2, 8)
		for (i = 2; i <= 4; i++)
			out = out "." keep(o[i] + 0, $2 - 8 * (i - 1), 8)
		print out "/" $2
		next
	}
	$1 !~ /^[0-9A-Fa-f:]+$/ { print; next }
	{
		h = index($1, "::")
		left = h ? substr($1, 1, h - 1) : $1
		right = h ? substr($1, h + 2) : ""
		nl = left == "" ? 0 : split(left, l, ":")
		nr = right == "" ? 0 : split(right, r, ":")
		if (h ? nl + nr > 7 : nl != 8) { print; next }
		for (i = 1; i <= 8; i++)
			g[i] = 0
		for (i = 1; i <= nl; i++)
			g[i] = hex(l[i])
		for (i = 1; i <= nr; i++)
			g[8 - nr + i] = hex(r[i])
		out = sprintf("%x", keep(g[1], $2, 16))
		for (i = 2; i <= 8; i++)
			out = out ":" sprintf("%x", keep(g[i], $2 - 16 * (i - 1), 16))
		print out "/" $2
	}'
}

# Runs sluice, its output (stdout and stderr) into $out.
sluice_cmd() {
	if [ -n "$iface" ]; then
		out=$("$sluice" -i "$iface" "$@" 2>&1)
	else
		out=$("$sluice" "$@" 2>&1)
	fi
}

# A failed command's error is its last line; the log lines before it (a
# sweep's "ban expired", with their priority, "<5>sluice: ...", when
# stderr is the journal) go on to stderr as they are.
pass_log() { printf '%s\n' "$out" | sed '$d' >&2; }
sluice_error() { printf '%s\n' "$out" | tail -n 1 | sed 's/^<[0-7]>//'; }

value=$(canonical "$value")

# A range of every address bans every source, this host's operators
# included: sluice refuses it without --force, and a decision never says so.
case $action/$value in
add/*/0) usage "add $value: a range of every address bans every source; sluice bans it only by hand (ban add --force)" ;;
esac

if [ "$action" = add ]; then
	# Under a second left: the decision ends before a ban would matter.
	if [ "$secs" -le 0 ]; then
		echo "$me: add $value: the decision has expired, nothing to ban" >&2
		exit 0
	fi
	# sluice bans --for 1 s to 3650 days; a longer decision is banned for
	# ever, until its del.
	for_secs=${secs}s
	[ "$secs" -le 315360000 ] || for_secs=
	if sluice_cmd ban add "$value" ${for_secs:+--for "$for_secs"} --list "$list"; then
		[ -z "$out" ] || echo "$out" >&2
		exit 0
	fi
	pass_log
	die "add $value for ${secs}s: $(sluice_error)"
fi

if sluice_cmd ban del "$value" --list "$list"; then
	[ -z "$out" ] || echo "$out" >&2
	exit 0
fi
pass_log
err=$(sluice_error)
case $err in
*"no ban on "*)
	echo "$me: del $value: no ban left in list $list (it ended in XDP): done" >&2
	exit 0
	;;
esac
die "del $value: $err"
