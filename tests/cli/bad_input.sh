#!/usr/bin/env bash
# Bad input to the CLI, table-driven (tests/cli/cases.txt): every case must
# end with the right exit status and exactly one "sluice: ..." line on
# stderr, print nothing on stdout, and change nothing: the policy, the
# counters, the attachment and the pin directories are compared before and
# after each case. A case run with -j must instead print its error as one
# {"error", "hint"} object on stdout and nothing on stderr; its MATCH is
# checked against the line that object stands for. All cases run; the
# failures are listed at the end.
set -uo pipefail

# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CASES=${1:-$CLI_DIR/cases.txt}
[[ -r $CASES ]] || die "cannot read $CASES"

cli_init bi
cli_setup
PD=$CLI_TMP/pol
mkdir -p "$PD" || die "mkdir $PD"

# --- policy files ---------------------------------------------------------
# The live policy during the cases: v4 and v6, every action, a default.
cat >"$PD/good.pol" <<'EOF'
# baseline policy of tests/cli/bad_input.sh
limit default --rate 1000 --burst 2000
limit set 198.18.0.0/16 --rate 10
allow 198.18.5.0/24
deny 198.18.5.128/25   # a comment after a rule
limit set 2001:2::/48 --rate 20 --burst 40
allow 2001:2:0:5::/64
deny 2001:2:0:5:8000::/65
limit set 198.18.0.0/16 --requests 5/s --burst 10 --ban 1m --ban-after 4
EOF
# Valid, and different from good.pol.
cat >"$PD/good2.pol" <<'EOF'
limit default --rate 7
deny 198.19.0.0/16
EOF
printf 'allow 198.18.1.0/24\nfrobnicate 198.18.2.0/24\n' >"$PD/unknown-word.pol"
printf 'limit default --rate 5\nallow 198.18.1.0/24\ndeny 300.1.2.3/24\n' >"$PD/bad-cidr.pol"
printf 'limit default --rate 5\nallow 198.18.1.0/24\ndeny 198.18.2.1/24\n' >"$PD/host-bits.pol"
printf 'allow 198.18.1.0/24\ndeny 198.18.2.0/24\n\nlimit set 198.18.1.0/24 --rate 3\n' >"$PD/dup-cidr.pol"
printf 'allow 198.18.1.0/24\ndeny ::ffff:198.18.1.0/120\n' >"$PD/dup-mapped.pol"
printf 'limit default --rate 5\nallow 198.18.1.0/24\nlimit default --rate 6\n' >"$PD/two-defaults.pol"
printf 'allow 198.18.1.0/24\nlimit del 198.18.1.0/24\n' >"$PD/limit-del.pol"
{
	printf 'allow 198.18.1.0/24\nallow 198.18.2.0/24 #'
	printf '%*s' 4000 '' | tr ' ' x
	printf '\ndeny 198.18.3.0/24\n'
} >"$PD/long-line.pol"
# Control bytes (ESC, CR, BEL), invalid UTF-8: the error must not echo them.
printf 'allow 198.18.1.0/24\n\x1b[2J\x1b]0;owned\x07\xff\xfe\x01\x02\r\x7f junk\ndeny 198.18.2.0/24\n' \
	>"$PD/binary.pol"
printf 'allow 198.18.1.0/24\n\0deny 198.18.2.0/24\n' >"$PD/nul-byte.pol"
printf 'allow 198.18.1.0/24\nallow 198.18.2.0/24\nallow 198.18.4.0/24\nlimit set 198.18.3.0/24 --rate 0\n' \
	>"$PD/bad-rate.pol"
printf 'allow 198.18.1.0/24\ndeny\n' >"$PD/no-cidr.pol"
printf 'allow 198.18.1.0/24 198.18.2.0/24\n' >"$PD/extra-word.pol"
# Policy model v2: a valid line, then one that bad input rules refuse.
printf 'limit default --rate 5\nlimit set 198.18.0.0/16 --rate 10 --proto udp --dport 53\nlimit set 198.18.1.0/24 --rate 10 --dport 53\n' \
	>"$PD/mix-dport.pol"
printf 'allow 198.18.1.0/24\nlimit set 198.18.2.0/24 --rate 10 --syn --proto udp\n' >"$PD/mix-syn.pol"
printf 'allow 198.18.1.0/24\ndeny 198.18.2.0/24 --proto tcp --dport 443-80\n' >"$PD/mix-range.pol"
printf 'allow 198.18.1.0/24\nlimit set 198.18.2.0/24 --rate 10 --per /33\n' >"$PD/mix-per.pol"
printf 'allow 198.18.1.0/24\nlimit set 198.18.2.0/24 --rate 10 --per /0\n' >"$PD/mix-per0.pol"
printf 'allow 198.18.1.0/24\nlimit set 198.18.2.0/24 --rate 10 --algo fixed-window --burst 5\n' >"$PD/mix-algo.pol"
printf 'allow 198.18.1.0/24\nlimit set 198.18.2.0/24 --rate 10 --ban 0s\n' >"$PD/mix-ban.pol"
printf 'allow 198.18.1.0/24\nlimit set 198.18.2.0/24 --rate 10 --ban 30\n' >"$PD/mix-ban-unit.pol"
printf 'allow 198.18.1.0/24\nlimit set 198.18.2.0/24 --bytes 10/d\n' >"$PD/mix-bytes.pol"
printf 'allow 198.18.1.0/24\nallow 198.18.2.0/24 --proto udp\nlimit del 198.18.2.0/24 --proto udp\n' >"$PD/mix-del.pol"
printf 'limit set 198.18.0.0/16 --rate 5 --proto udp --dport 53\nlimit set 198.18.0.0/16 --rate 5\nlimit set 198.18.0.0/16 --rate 6 --dport 53 --proto udp\n' \
	>"$PD/mix-dup.pol"
printf 'limit default --rate 5 --per /24\nallow 198.18.1.0/24\n' >"$PD/mix-default-per.pol"
printf 'limit set 198.18.0.0/16 --rate 5\nlimit set 198.18.0.0/16 --rate 5 --proto udp\nlimit set 198.18.0.0/16 --rate 5 --proto udp --dport 53\nlimit set 198.18.0.0/16 --rate 5 --syn\nlimit set 198.18.0.0/16 --rate 5 --syn --dport 22\ndeny 198.18.0.0/16 --proto tcp --dport 22-23\n' \
	>"$PD/same-cidr.pol"
# ban load input: every source; a NUL byte; lines a file under sudo must
# not see echoed; two ipset sets; a quote left open.
printf '198.18.200.0/24\n0.0.0.0/0\n' >"$PD/all.ban"
printf '198.18.200.0/24\n::/0 1h\n' >"$PD/all6.ban"
printf '198.18.200.0/24\n198.18.201.0/24\0junk\n' >"$PD/nul.ban"
printf 'root:s3cr3t-hash:19000:0:99999:7:::\n' >"$PD/shadow.ban"
printf 's3cr3t-word two three\n' >"$PD/words.ban"
printf '198.18.200.0/24 s3cr3t\n' >"$PD/duration.ban"
printf 'create allow hash:net family inet\nadd allow 198.18.202.0/24\ncreate block hash:net family inet\nadd block 198.18.203.0/24\n' \
	>"$PD/ipset2.ban"
printf 'add block 198.18.205.0/24 comment "open\n' >"$PD/quote.ban"
printf 'add block 198.18.205.0/24 s3cr3t 5\n' >"$PD/ipset-opt.ban"
# Cut short: the last line has no newline (198.18.201.0/24 cut to /2).
printf '198.18.200.0/24\n198.18.201.0/2' >"$PD/cut.ban"
# One rule more than the table holds (1023 besides the default).
for ((i = 0; i < 1024; i++)); do
	echo "deny 198.18.$((i / 256)).$((i % 256))/32"
done >"$PD/too-many.pol"

# --- the interfaces under test ---------------------------------------------
# $IF: native, with good.pol. $BR2: skb mode (a bridge has no native XDP),
# so that a re-attach in native mode fails at run time.
setup_iface() { # IFACE
	if [[ $1 == "$IF" ]]; then
		cli_attach "$IF" --max-sources 4096
		sl_ok -i "$IF" policy apply "$PD/good.pol"
	else
		cli_attach "$BR2" --mode skb --max-sources 1024
		sl_ok -i "$BR2" limit default --rate 5
	fi
}
setup_iface "$IF"
setup_iface "$BR2"

# Everything a rejected command must leave alone, in one file. A command
# that fails here (pins gone, say) is written down as such: a difference.
# The snapshot only looks: it runs the plain build when there is one (the
# sanitizer build takes ~70 ms more to start), while the case itself runs
# the sanitizer build. It is one process in the namespace (bash, running the
# looks one after the other, a process for each at most), so that a case
# costs about a dozen processes in all.
SNAP_SLUICE=$SLUICE
[[ -x $SLUICE_ROOT/build/sluice ]] && SNAP_SLUICE=$SLUICE_ROOT/build/sluice

# shellcheck disable=SC2016 # expanded by the bash in the namespace
SNAP_SCRIPT='
S=$1 IF=$2 BR2=$3 PINS=$4 T=$5
shopt -s nullglob dotglob
look() { # TITLE FILTER ARGS...: the output (through jq FILTER unless cat)
	local title=$1 filter=$2 out err rc
	shift 2
	echo "== $title"
	out=$("$S" "$@" 2>"$T/snap.err" </dev/null)
	rc=$?
	if ((rc != 0)) || [[ -s $T/snap.err ]]; then
		read -r -N 300 err <"$T/snap.err"
		echo "FAILED ($rc): $err"
	elif [[ $filter == cat ]]; then
		printf "%s\n" "$out"
	else
		jq -c "$filter" <<<"$out" 2>&1
	fi
}
pins_of() { # IFACE: the names in its pin directory
	local names
	echo "== $1: pins"
	if [[ -d $PINS/$1 ]]; then
		names=("$PINS/$1"/*)
		printf "%s\n" "${names[@]##*/}"
	else
		echo "no pin directory"
	fi
}
look "limit list -j" cat -i "$IF" limit list -j
look "policy show" cat -i "$IF" policy show
look "ban list -j" cat -i "$IF" ban list -j
look "stats -j .packets" ".packets, .tracked_sources" -i "$IF" stats -j
for i in "$IF" "$BR2"; do
	look "$i: status -j" cat -i "$i" status -j
	pins_of "$i"
done
look "$BR2: limit list -j" cat -i "$BR2" limit list -j
# the kernel'"'"'s own view, which XDP program runs on each
echo "== ip link xdp"
ip -d -j link show | jq -c --arg a "$IF" --arg b "$BR2" \
	".[] | select(.ifname == \$a or .ifname == \$b) | [.ifname, .xdp]"
'

snapshot() { # FILE
	nsenter --net="/run/netns/$NS_RX" bash -c "$SNAP_SCRIPT" snapshot "$SNAP_SLUICE" \
		"$IF" "$BR2" "$SLUICE_PIN_ROOT" "$CLI_TMP" >"$1" 2>&1 </dev/null
}

# After a case that changed state: back to the baseline, whatever it did.
restore() {
	local i
	for i in "$IF" "$BR2"; do
		sl -i "$i" -j status
		if ((RC != 0)) || ! jq -e '.interfaces[0].attached' "$OUT" >/dev/null 2>&1; then
			echo "    (attaching $i again)"
			ip -n "$NS_RX" link set dev "$i" xdp off 2>/dev/null
			ip -n "$NS_RX" link set dev "$i" xdpgeneric off 2>/dev/null
			rm -rf "${SLUICE_PIN_ROOT:?}/$i"
		fi
		setup_iface "$i"
	done
	snapshot "$CLI_TMP/base"
}

# Text for the log: newlines as '~', other control bytes as '?'.
printable() { LC_ALL=C tr '\n' '~' | LC_ALL=C tr -c '[:print:]' '?'; }

# The same for a line, without a process: VAR TEXT sets VAR to the first
# 110 bytes of TEXT, control bytes as '?'.
printable_line() {
	local LC_ALL=C s=${2:0:110}
	printf -v "$1" '%s' "${s//[^[:print:]]/?}"
}

# The pin directories, one a line (the glob sorts as ls does).
pin_dirs() {
	local d=("$SLUICE_PIN_ROOT"/*)
	[[ -e ${d[0]:-} ]] || return 0
	printf '%s\n' "${d[@]##*/}"
}

snapshot "$CLI_TMP/base"
# Case lines use the names; shellcheck cannot see through eval.
export IF NA BR BR2 PD

ncases=0
words=()
failed_cases=()
lineno=0
while IFS= read -r line || [[ -n $line ]]; do
	lineno=$((lineno + 1))
	[[ $line =~ ^[[:space:]]*(#|$) ]] && continue
	eval "words=($line)" 2>/dev/null || die "$CASES:$lineno: cannot split: $line"
	((${#words[@]} >= 2)) || die "$CASES:$lineno: want EXIT MATCH ARGS..., got: $line"
	want=${words[0]}
	match=${words[1]}
	args=("${words[@]:2}")
	[[ $want =~ ^[0-2]$ ]] || die "$CASES:$lineno: EXIT must be 0, 1 or 2, got '$want'"
	ncases=$((ncases + 1))
	printf -v desc ' %q' "${args[@]}"
	desc=sluice$desc
	pos=${match%%!*}
	neg=
	[[ $match == *!* ]] && neg=${match#*!}
	[[ $pos == - ]] && pos=

	pins_before=$(pin_dirs)
	# @nobody[:GROUP]: the case runs as uid nobody, without capabilities,
	# in GROUP (none if not given).
	SL_AS=()
	if [[ ${args[0]} == @nobody* ]]; then
		grp=${args[0]#@nobody}
		grp=${grp#:}
		SL_AS=(setpriv --reuid nobody --regid "$(id -gn nobody)" --inh-caps=-all
			--bounding-set=-all)
		if [[ -n $grp ]]; then SL_AS+=(--groups "$grp"); else SL_AS+=(--clear-groups); fi
		args=("${args[@]:1}")
	fi
	OUT=$CLI_TMP/case.out
	ERR=$CLI_TMP/case.err
	sl "${args[@]}"
	SL_AS=()
	problems=()

	((RC == want)) || problems+=("exit status $RC, want $want")
	# With -j an error is one JSON object on stdout and nothing on stderr;
	# it is checked below as the line it stands for, "sluice: ERROR: HINT".
	json_case=0
	for a in "${args[@]}"; do
		[[ $a == -- ]] && break
		[[ $a == -j || $a == --json ]] && json_case=1
	done
	if ((want != 0 && json_case)); then
		[[ -s $ERR ]] && problems+=("stderr not empty with -j: $(head -c 200 "$ERR" | tr '\n' '~')")
		if [[ $(wc -l <"$OUT") -ne 1 ]] ||
			! jq -er 'select(type == "object" and (keys == ["error", "hint"]))
				| "sluice: " + .error + (if .hint == null then "" else ": " + .hint end)' \
				"$OUT" >"$CLI_TMP/case.json_err" 2>/dev/null; then
			problems+=("stdout is not one {\"error\", \"hint\"} object: $(head -c 200 "$OUT" | tr '\n' '~')")
		fi
		cp "$CLI_TMP/case.json_err" "$ERR" 2>/dev/null || : >"$ERR"
		: >"$OUT"
	fi
	if ((want == 0)); then
		quiet_err || problems+=("stderr not empty (but notices): $(head -c 200 "$ERR")")
		text=$OUT
	else
		# A last line without a newline still counts.
		mapfile -t err_lines <"$ERR"
		nlines=${#err_lines[@]}
		((nlines == 1)) || problems+=("$nlines lines on stderr, want 1")
		[[ ${err_lines[0]:-} == 'sluice: '* ]] || problems+=("stderr does not start with 'sluice: '")
		# grep reads line by line: a newline is never seen, any other
		# control byte (NUL too, with -a) is.
		LC_ALL=C grep -aq '[[:cntrl:]]' "$ERR" && problems+=("control characters on stderr")
		[[ -s $OUT ]] && problems+=("stdout not empty: $(head -c 200 "$OUT" | tr '\n' '~')")
		text=$ERR
	fi
	if [[ -n $pos ]] && ! grep -qE -e "$pos" "$text"; then
		problems+=("message does not match /$pos/")
	fi
	if [[ -n $neg ]] && grep -qE -e "$neg" "$text"; then
		problems+=("message matches /$neg/, it should not")
	fi

	# A refused command leaves no pin directory for any name it was given.
	pins_after=$(pin_dirs)
	if [[ $pins_after != "$pins_before" ]]; then
		for a in "${args[@]}"; do
			[[ -n $a && $a != */* && $a != . && $a != .. ]] || continue
			if [[ -e $SLUICE_PIN_ROOT/$a ]] && ! grep -qxF -e "$a" <<<"$pins_before"; then
				problems+=("created $SLUICE_PIN_ROOT/$a")
				# Clean up only names this test owns (nosuchif0 has no
				# interface, so no one can have attached to it).
				case $a in
				"$NA" | "$BR" | nosuchif0) rm -rf "${SLUICE_PIN_ROOT:?}/$a" ;;
				esac
			fi
		done
	fi

	OUT=$CLI_TMP/stdout
	ERR=$CLI_TMP/stderr
	snapshot "$CLI_TMP/now"
	changed=0
	if ! diff "$CLI_TMP/base" "$CLI_TMP/now" >"$CLI_TMP/diff"; then
		changed=1
		problems+=("changed state:")
		while IFS= read -r d; do
			problems+=("  $d")
		done < <(grep '^[<>]' "$CLI_TMP/diff" | cut -c1-300 | head -n 12)
	fi

	if ((${#problems[@]})); then
		fail_check "$desc" "${problems[@]}" \
			"stderr: $(head -c 300 "$CLI_TMP/case.err" | printable)"
		failed_cases+=("$CASES:$lineno: $desc")
		((changed)) && restore
	else
		first=
		IFS= read -r first <"$text"
		printable_line first "$first"
		pass_check "$desc  [exit $want: $first]"
	fi
done <"$CASES"

((ncases > 0)) || die "no cases in $CASES"
echo "# $ncases cases, ${#failed_cases[@]} failed"
for c in "${failed_cases[@]}"; do
	echo "#   failed: $c"
done
cli_finish
