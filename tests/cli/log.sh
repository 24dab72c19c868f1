#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# cli/log: the log lines on stderr (doc/logging.md).
#  - Plain on a terminal or a file: "sluice: ..."; an error has no prefix.
#  - When stderr is the journal (JOURNAL_STREAM names its device:inode, as
#    systemd sets it), every line starts with its syslog priority: <3> an
#    error, <4> a warning, <5> a notice, <6> info, <7> debug. A
#    JOURNAL_STREAM naming another file changes nothing.
#  - By default notices and above; -v adds info lines, -vv debug lines;
#    -vv and -v -v alike. A -j error goes to stdout as JSON all the same.
# The journal's stream is played by the file stderr goes to: sl truncates
# $ERR, whose device and inode stay.
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cli_init log
cli_setup
: >"$ERR"
JOURNAL=$(stat -c '%d:%i' "$ERR")

# Every line of ERR starts with a priority, and PRIO's lines match ERE.
all_prefixed() { ! grep -qvE '^<[0-7]>sluice: ' "$ERR"; }
has() { grep -qE -- "$1" "$ERR"; }
show() { head -c 400 "$ERR" | tr '\n' '|'; }

# --- an error: <3> for the journal, plain elsewhere ----------------------------
JOURNAL_STREAM=$JOURNAL sl -i nosuch0 limit list
if ((RC == 2)) && [[ $(cat "$ERR") == "<3>sluice: no interface 'nosuch0': check the name with 'ip link'" ]]; then
	pass_check "an error to the journal: one line, <3>"
else
	fail_check "an error to the journal: one line, <3>" "exit $RC" "stderr: $(show)"
fi
sl -i nosuch0 limit list
if ((RC == 2)) && [[ $(cat "$ERR") == "sluice: no interface 'nosuch0': check the name with 'ip link'" ]]; then
	pass_check "an error elsewhere: plain"
else
	fail_check "an error elsewhere: plain" "exit $RC" "stderr: $(show)"
fi
JOURNAL_STREAM=1:1 sl -i nosuch0 limit list
check "JOURNAL_STREAM of another file: plain" grep -qx "sluice: no interface 'nosuch0'.*" "$ERR"
JOURNAL_STREAM=$JOURNAL sl -j -i nosuch0 limit list
if ((RC == 2)) && [[ ! -s $ERR ]] && jq -e '.error' "$OUT" >/dev/null 2>&1; then
	pass_check "-j error with the journal: JSON on stdout, nothing on stderr"
else
	fail_check "-j error with the journal: JSON on stdout, nothing on stderr" "exit $RC" \
		"stdout: $(head -c 200 "$OUT")" "stderr: $(show)"
fi

# --- attach: a notice; -v an info line too; -vv debug lines too -----------------
JOURNAL_STREAM=$JOURNAL sl attach --mode native "$IF"
((RC == 0)) || die "attach $IF exited $RC: $(show)"
check "attach: stdout says attached" grep -q "^attached to $IF in native mode" "$OUT"
check "attach to the journal: every line has its priority" all_prefixed
check "attach: <5> attached in native mode" has "^<5>sluice: $IF: attached in native mode \(program id [0-9]+\)$"
check "attach, default: no info line" bash -c "! grep -q '^<6>' '$ERR'"
check "attach, default: no debug line" bash -c "! grep -q '^<7>' '$ERR'"

JOURNAL_STREAM=$JOURNAL sl -v attach --mode native "$IF"
((RC == 0)) || die "attach -v $IF exited $RC: $(show)"
check "attach -v: every line has its priority" all_prefixed
check "attach -v: <5> attached, state kept" has "^<5>sluice: $IF: attached in native mode .*state kept"
check "attach -v: <6> where the pins are" has "^<6>sluice: $IF: pins under /sys/fs/bpf/sluice/$IF, readable by group id [0-9]+"
check "attach -v: no debug line" bash -c "! grep -q '^<7>' '$ERR'"

for vv in -vv "-v -v" "--verbose --verbose"; do
	# shellcheck disable=SC2086 # vv: one or two words
	JOURNAL_STREAM=$JOURNAL sl $vv attach --mode native "$IF"
	((RC == 0)) || die "attach $vv $IF exited $RC: $(show)"
	check "attach $vv: <6> and <7> lines" bash -c "grep -q '^<6>sluice: $IF: pins under' '$ERR' &&
		grep -qE '^<7>sluice: $IF: program id [0-9]+ replaced program id [0-9]+$' '$ERR'"
	check "attach $vv: every line has its priority" all_prefixed
done

# Plain: the same lines without a priority, and no info without -v.
sl attach --mode native "$IF"
check "attach, plain: 'sluice: IFACE: attached'" has "^sluice: $IF: attached in native mode"
check "attach, plain: no line has a priority" bash -c "! grep -q '^<' '$ERR'"
check "attach, plain: no info line" bash -c "! grep -q 'pins under' '$ERR'"
sl -v attach --mode native "$IF"
check "attach -v, plain: the info line" has "^sluice: $IF: pins under "

# --- a policy commit: <5> with its rules ----------------------------------------
JOURNAL_STREAM=$JOURNAL sl -i "$IF" limit set 198.18.0.0/24 --rate 10
((RC == 0)) || die "limit set exited $RC: $(show)"
check "limit set: <5> policy committed: 1 rule" \
	has "^<5>sluice: $IF: policy committed: 1 rule besides the default \(generation [0-9]+\)$"
check "limit set: nothing else on stderr" test "$(wc -l <"$ERR")" -eq 1

# --- a warning: <4> ------------------------------------------------------------
JOURNAL_STREAM=$JOURNAL sl -i "$IF" limit set 198.18.1.0/24 --rate 10 --cluster
((RC == 0)) || die "limit set --cluster exited $RC: $(show)"
check "limit set --cluster, no agent: <4> warning" \
	has "^<4>sluice: warning: no cluster agent runs on $IF: "
check "limit set --cluster: and the <5> commit" has "^<5>sluice: $IF: policy committed: 2 rules"
sl -i "$IF" limit del 198.18.1.0/24
check "limit del: plain notice" has "^sluice: $IF: policy committed: 1 rule "

# --- bans: added, removed ---------------------------------------------------------
JOURNAL_STREAM=$JOURNAL sl -i "$IF" ban add 198.18.5.0/24 --list tlog
((RC == 0)) || die "ban add exited $RC: $(show)"
check "ban add: <5> ban added" has "^<5>sluice: $IF: ban added: 198.18.5.0/24 \(list tlog, forever, by ban add\)$"
JOURNAL_STREAM=$JOURNAL sl -i "$IF" ban del 198.18.5.0/24
((RC == 0)) || die "ban del exited $RC: $(show)"
check "ban del: <5> ban removed" has "^<5>sluice: $IF: ban removed: 198.18.5.0/24 \(list tlog, by ban del\)$"

# --- bans expiring: a line each for a few, one line per list for a bulk expiry ---
# 5,000 bans loaded for 1 s in list tbulk, two added for 1 s by hand in list
# tlog; the next write (ban add) sweeps them all: the two get a line each,
# the 5,000 one line with their count and three samples (before: 5,002 lines).
BULK=5000
awk -v n=$BULK 'BEGIN { for (i = 0; i < n; i++) printf "198.19.%d.%d/32 1s\n", i / 250, i % 250 + 1 }' \
	>"$CLI_TMP/bulk.txt"
sl -i "$IF" ban load "$CLI_TMP/bulk.txt" --list tbulk
((RC == 0)) || die "ban load of $BULK bans for 1 s exited $RC: $(show)"
for p in 198.18.6.1 198.18.6.2; do
	sl -i "$IF" ban add "$p" --for 1s --list tlog
	((RC == 0)) || die "ban add $p --for 1s exited $RC: $(show)"
done
sleep 3 # all expired (1 s), with room for a busy machine
JOURNAL_STREAM=$JOURNAL sl -i "$IF" ban add 198.18.7.0/24 --list tlog
((RC == 0)) || die "ban add after the expiry exited $RC: $(show)"
lines=$(grep -c 'expired' "$ERR")
check "the sweep of $BULK + 2 bans: 3 lines (got $lines)" test "$lines" -eq 3
check "a person's ban: its own line" has "^<5>sluice: $IF: ban expired: 198.18.6.1/32 \(list tlog, by sweep\)$"
check "the other: its own line" has "^<5>sluice: $IF: ban expired: 198.18.6.2/32 \(list tlog, by sweep\)$"
check "the bulk expiry: one line, its count and samples" \
	has "^<5>sluice: $IF: $BULK bans expired \(list tbulk, by sweep\), e\.g\. 198\.19\.[0-9.]+/32, 198\.19\.[0-9.]+/32, 198\.19\.[0-9.]+/32$"
check "and nothing else but the ban added" test "$(wc -l <"$ERR")" -eq 4
sl -i "$IF" ban del 198.18.7.0/24
((RC == 0)) || die "ban del 198.18.7.0/24 exited $RC: $(show)"

# --- detach: a notice ------------------------------------------------------------
JOURNAL_STREAM=$JOURNAL sl detach "$IF"
((RC == 0)) || die "detach exited $RC: $(show)"
check "detach: <5> detached" has "^<5>sluice: $IF: detached$"

cli_finish
