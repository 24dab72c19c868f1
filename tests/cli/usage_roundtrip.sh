#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# cli/usage_roundtrip: every usage line tells the truth. It reads `sluice
# help` and each command's --help, and from every usage line builds
# invocations that it feeds back to the binary, on a veth in a namespace:
#   - the base one (the positionals, and the first choice of each required
#     option or group) is accepted;
#   - the base with any one optional item added (each choice of a group,
#     each word of a value like native|skb|auto) is accepted;
#   - the base without one required item is refused (exit 2): what the
#     usage shows without brackets is required.
# Accepted means anything but exit 2 (the usage error): a runtime failure
# (exit 1) or a daemon still serving when its time is up (timeout's 124)
# got past the parser. Values come from the metavariables (CIDR, IFACE,
# DURATION, N[/s|/m|/h], ...); where the --help text ties an option to
# another (--ban-after to --requests and --ban), COMPANIONS adds that one.
# Every --help's usage line must equal its line in `sluice help`.
#
# It can fail: before the option table knew "required" and "one of", `limit
# default` offered --requests and --per /LEN (both refused), and the required
# --rate of `simulate` and `limit set` showed in brackets.
set -uo pipefail

# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cli_init ur
cli_setup
T=$CLI_TMP
WAIT=3	# seconds a daemon (or stats --watch) runs before it counts as accepted
cli_attach "$IF"
sl_ok -i "$IF" limit default --rate 1000
printf 'limit default --rate 7\ndeny 198.19.0.0/16\n' >"$T/good.pol"
printf '198.18.200.0/24\n' >"$T/bans.txt"
printf '1.0\n1.5\n2.0\n' >"$T/arrivals.trace"
printf 'secret\n' >"$T/pw" && chmod 0600 "$T/pw"
printf 'create set1 hash:net\nadd set1 198.18.201.0/24\n' >"$T/ipset.txt"
command -v openssl >/dev/null || skip "openssl not installed (tools/install-deps.sh)"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=ur \
	-keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null || die "openssl req failed"
chmod 0600 "$T/key.pem"

# Words that the --help text ties to an option ("COMMAND --OPTION": words
# added before it). Each is documented in that option's own help line.
declare -A COMPANIONS=(
	["limit set --ban-after"]="--requests 10 --ban 1s"
	["limit set --dport"]="--proto tcp"
	["limit del --dport"]="--proto tcp"
	["allow --dport"]="--proto tcp"
	["deny --dport"]="--proto tcp"
	["limit set --window"]="--algo fixed-window"
	["limit default --window"]="--algo fixed-window"
	["limit new-sources --burst"]="--rate 10"
	["simulate --duration"]="--pattern steady"
	["simulate --window"]="--pattern steady"
	["cluster join --redis-cert"]="--redis-key $T/key.pem"
	["cluster join --redis-key"]="--redis-cert $T/cert.pem"
	["check-server --trust"]="--listen 127.0.0.1:0"
	["check-server --trust-request-id"]="--listen 127.0.0.1:0"
	["check-server --address-header"]="--listen 127.0.0.1:0"
)

# A value for metavariable META of option OPT (one word of a|b|c already
# picked by the caller).
value_of() { # OPT META
	case "$1 $2" in
	"--burst N") echo 20 ;;
	"--ban-after N") echo 3 ;;
	"--max-sources N" | "--max-bans N") echo 4096 ;;
	"-n N") echo 5 ;;
	"--sync MS") echo 500 ;;
	"--watch SECONDS" | "--established-idle SECONDS") echo 30 ;;
	"--list NAME") echo feed1 ;;
	"--set NAME") echo set1 ;;
	"--node NAME") echo host1 ;;
	"--group NAME" | *" GROUP") echo nogroup ;;
	*" USER") echo nobody ;;
	"--address-header NAME") echo X-Real-IP ;;
	"--for DURATION") echo 1h ;;
	"--duration DURATION") echo 5s ;;
	*" DURATION") echo 1s ;;
	*" N[/s|/m|/h]") echo 10 ;;
	*" ADDR:PORT") echo 127.0.0.1:0 ;;
	*" PATH") echo "$T/check.sock" ;;
	*" CIDR[,CIDR...]") echo 198.18.0.0/15 ;;
	*" HOST:PORT[,...]") echo 198.18.0.3:6379 ;;
	"--trace FILE") echo "$T/arrivals.trace" ;;
	"--redis-ca FILE" | "--redis-cert FILE") echo "$T/cert.pem" ;;
	"--redis-key FILE") echo "$T/key.pem" ;;
	*" FILE.svg") echo "$T/plot.svg" ;;
	*" FILE.png") echo "$T/plot.png" ;;
	*" FILE") echo "$T/pw" ;;
	*" NUM") echo 17 ;;
	*" /LEN") echo /24 ;;
	*" N[-M]") echo 80-90 ;;
	*) echo "${2}" ;;
	esac
}

# A value for positional META of command PATH.
positional() { # PATH META
	case "$1 $2" in
	"attach IFACE" | "detach IFACE") echo "$NA" ;;
	*" CIDR") echo 198.18.7.0/24 ;;
	*" ADDR[/LEN]") echo 198.18.9.0/24 ;;
	*" ADDR") echo 198.18.0.1 ;;
	"policy save FILE") echo "$T/saved.pol" ;;
	"ban load FILE" | "ban load FILE|-") echo "$T/bans.txt" ;;
	*" FILE") echo "$T/good.pol" ;;
	*" URL") echo redis://198.18.0.3:6379 ;;
	*) echo "$2" ;;
	esac
}

# The items of a usage line after "sluice": words outside brackets, and
# [...] and (...) whole, one a line; a required "--opt META" is one item.
items() {
	awk '{
		d = 0; w = ""; n = 0
		for (i = 1; i <= length($0); i++) {
			c = substr($0, i, 1)
			if (c == "[" || c == "(") d++
			if (c == "]" || c == ")") d--
			if (c == " " && d == 0) { if (w != "") it[++n] = w; w = ""; continue }
			w = w c
		}
		if (w != "") it[++n] = w
		for (i = 1; i <= n; i++) {
			if (it[i] ~ /^-/ && i < n && it[i + 1] !~ /^[-[(]/) {
				print it[i] " " it[i + 1]
				i++
			} else {
				print it[i]
			}
		}
	}' <<<"$1"
}

# The choices of one option word "--a X" (or a positional word): a value
# like native|skb|auto gives one invocation per word; a|b inside [..] of
# N[/s|/m|/h] is one value.
option_choices() { # PATH "--opt META" or "--flag"
	local opt=${2%% *} meta=${2#* } w
	if [[ $opt == "$2" ]]; then
		echo "$opt"
		return
	fi
	if [[ $meta == *"|"* && $meta != *"["* ]]; then
		for w in ${meta//|/ }; do
			echo "$opt $(value_of "$opt" "$w")"
		done
	else
		echo "$opt $(value_of "$opt" "$meta")"
	fi
}

# The choices of a group, "--a X | --b Y", one a line (a value's own
# words, native|skb|auto, have no blanks around their bars).
alternatives() { sed 's/ | /\n/g' <<<"$1"; }

# Run sluice with WORDS (one string, split on blanks); RC as sl's.
run() { # PATH WORDS
	local path=$1 pre=(-i "$IF")
	[[ $path == attach || $path == detach ]] && pre=()
	setup_for "$path" "$2"
	# shellcheck disable=SC2086 # the words are split on purpose
	timeout -k 2 "$WAIT" nsenter --net="/run/netns/$NS_RX" "$SLUICE" "${pre[@]}" $path $2 \
		>"$OUT" 2>"$ERR" <"$T/bans.txt"
	RC=$?
}

# What a command needs in place before it runs.
setup_for() { # PATH WORDS
	local w
	case $1 in
	attach) sl detach "$NA" ;;
	detach) sl attach "$NA" ;;
	"limit del")
		w=${2/--requests/--requests 10}
		[[ $w == *--requests* ]] || w="$w --rate 10"
		# shellcheck disable=SC2086
		sl -i "$IF" limit set $w
		;;
	"ban del")
		# shellcheck disable=SC2086
		sl -i "$IF" ban add $2
		;;
	esac
}

# Words whose values depend on each other, as their --help says: --proto
# icmpv6 on an IPv6 rule, the TLS files with a rediss:// URL, --set with
# ipset save input.
adapt() { # WORDS
	local w=$1
	[[ $w == *"--proto icmpv6"* ]] && w=${w//198.18.7.0\/24/2001:2:7::\/48}
	[[ $w == *--redis-c* || $w == *--redis-key* ]] && w=${w//redis:\/\//rediss:\/\/}
	[[ $w == *"--set "* ]] && w=${w//bans.txt/ipset.txt}
	echo "$w"
}

accepted() { # PATH WORDS
	local w
	w=$(adapt "$2")
	run "$1" "$w"
	if ((RC == 2)); then
		fail_check "sluice $1 $w: refused (usage shows it)" "$(head -c 300 "$ERR")"
	else
		pass_check "sluice $1 $w: accepted (exit $RC)"
	fi
}

refused() { # PATH WORDS WHAT
	run "$1" "$2"
	if ((RC == 2)); then
		pass_check "sluice $1 $2: refused without $3"
	else
		fail_check "sluice $1 $2: accepted without $3 (usage shows it required), exit $RC"
	fi
}

# The base invocation's words of ITEMS (with required item SKIP left out).
base_words() { # PATH SKIP ITEMS...
	local path=$1 skip=$2 it words=""
	shift 2
	for it in "$@"; do
		[[ $it == "$skip" ]] && continue
		case $it in
		\[*) ;;
		\(*)
			it=${it#(}
			it=${it%% | *}
			words="$words $(option_choices "$path" "${it%)}" | head -n 1)"
			;;
		--* | -?) words="$words $(option_choices "$path" "$it" | head -n 1)" ;;
		*) words="$words $(positional "$path" "$it")" ;;
		esac
	done
	echo "${words# }"
}

# Every invocation of one usage line.
check_line() { # LINE
	local line=$1 path="" it choice base alt item_list=() extra key group
	mapfile -t item_list < <(items "${line#sluice }")
	while [[ ${item_list[0]:-} =~ ^[a-z][a-z-]*$ ]]; do
		path="$path${path:+ }${item_list[0]}"
		item_list=("${item_list[@]:1}")
	done
	[[ $path == help ]] && return
	[[ $(sl "${path% *}" "${path##* }" --help; sed -n '1s/^Usage: //p' "$OUT") == "$line" ]] &&
		pass_check "$path --help: its usage line is help's" ||
		fail_check "$path --help: its usage line differs from help's" "$(head -n 1 "$OUT")"
	base=$(base_words "$path" "" "${item_list[@]}")
	accepted "$path" "$base"
	for it in "${item_list[@]}"; do
		case $it in
		\[-j\]) accepted "$path" "$base -j" ;;
		\[-*)
			it=${it#[}
			while read -r alt; do
				key="$path ${alt%% *}"
				extra=${COMPANIONS[$key]:-}
				while read -r choice; do
					accepted "$path" "$(base_words "$path" "$(group_of "$key" "${item_list[@]}")" "${item_list[@]}") $extra $choice"
				done < <(option_choices "$path" "$alt")
			done < <(alternatives "${it%]}")
			;;
		\[*)
			alt=${it#[}
			alt=${alt%]}
			[[ $alt == off ]] && { accepted "$path" "off"; continue; }
			accepted "$path" "$base $(positional "$path" "$alt")"
			;;
		\(*)
			refused "$path" "$(base_words "$path" "$it" "${item_list[@]}")" "$it"
			group=$it
			it=${it#(}
			while read -r alt; do
				while read -r choice; do
					accepted "$path" "$(base_words "$path" "$group" "${item_list[@]}") $choice"
				done < <(option_choices "$path" "$alt")
			done < <(alternatives "${it%)}")
			;;
		--* | -?) refused "$path" "$(base_words "$path" "$it" "${item_list[@]}")" "$it" ;;
		*[A-Z]*)
			refused "$path" "$(base_words "$path" "$it" "${item_list[@]}")" "$it"
			[[ $it == *"|"* ]] || continue
			for alt in ${it//|/ }; do
				accepted "$path" "$(positional "$path" "$alt") $(base_words "$path" "$it" "${item_list[@]}")"
			done
			;;
		esac
	done
}

# The required group a companion's words replace (they pick its choice).
group_of() { # KEY ITEMS...
	local key=$1 it
	shift
	[[ -n ${COMPANIONS[$key]:-} ]] || return 0
	for it in "$@"; do
		[[ $it == \(* && $it == *"${COMPANIONS[$key]%% *}"* ]] && echo "$it"
	done
	return 0
}

sl help
((RC == 0)) || die "sluice help exited $RC"
mapfile -t LINES < <(sed -n 's/^ *\(Usage: \)\?\(sluice [a-z].*\)/\2/p' "$OUT")
((${#LINES[@]} > 20)) || die "sluice help: only ${#LINES[@]} usage lines"
for line in "${LINES[@]}"; do
	check_line "$line"
done
cli_finish
