# shellcheck shell=bash
# Two policies OLD and NEW for the fault tests, differing in every rule and
# in the default, with one probe per rule and what the datapath must answer
# under each (fault_tool probe's words: PPP allowed, PPD a limit of burst 2,
# DDD denied). Sourced; policy_files DIR writes DIR/old and DIR/new and sets
#   PROBES       the probe specs (fault_tool probe ... "${PROBES[@]}")
#   WANT_OLD WANT_NEW   the verdict words expected under each policy
# Each probe's source is fresh at every N (fault_tool adds N to it), so its
# verdict depends on the policy alone: IPv4 rules are /21s of 198.19.0.0/16
# (2048 fresh sources each), IPv6 rules /64s of 2001:2::/48, the default's
# sources come from 198.18.128.0/17. 30 IPv4 CIDR rules, 10 UDP port rules
# on the first ten of those CIDRs, 20 IPv6 rules: 60 rules and a default.

# Policy-file words and expected verdicts of action KIND (0 deny, 1 allow,
# 2 token-bucket limit, 3 fixed-window limit, 4 sliding-window limit).
_pf_action() { # KIND
	case $1 in
	0) echo "deny" ;;
	1) echo "allow" ;;
	2) echo "limit set" ;;
	3) echo "limit set" ;;
	*) echo "limit set" ;;
	esac
}
_pf_opts() { # KIND
	case $1 in
	2) echo " --rate 1/h --burst 2" ;;
	3) echo " --rate 2/h --algo fixed-window" ;;
	4) echo " --rate 2/h --algo sliding-window" ;;
	*) echo "" ;;
	esac
}
_pf_want() { # KIND
	case $1 in
	0) echo DDD ;;
	1) echo PPP ;;
	*) echo PPD ;;
	esac
}

policy_files() { # DIR
	local dir=$1 i ko kn cidr spec
	PROBES=()
	WANT_OLD=()
	WANT_NEW=()
	{
		echo "# OLD: fault-test policy"
		echo "limit default --rate 1/h --burst 2"
	} >"$dir/old"
	{
		echo "# NEW: fault-test policy"
		echo "# default: not limited"
		echo "limit new-sources --rate 1000000 --burst 1000000"
	} >"$dir/new"
	# Probe 0: the default (no rule covers 198.18.128.0/17).
	PROBES+=(198.18.128.0)
	WANT_OLD+=(PPD)
	WANT_NEW+=(PPP)
	for ((i = 0; i < 30; i++)); do
		cidr="198.19.$((i * 8)).0/21"
		ko=$((i % 5))
		kn=$(((i + 1 + i / 5) % 5))
		# Deny and allow differ from each other and from a limit; two limits
		# differ in their options only, which policy show catches.
		while [[ $(_pf_want "$ko") == "$(_pf_want "$kn")" ]]; do kn=$(((kn + 1) % 5)); done
		echo "$(_pf_action "$ko") $cidr$(_pf_opts "$ko")" >>"$dir/old"
		echo "$(_pf_action "$kn") $cidr$(_pf_opts "$kn")" >>"$dir/new"
		PROBES+=("198.19.$((i * 8)).0,udp,9")
		WANT_OLD+=("$(_pf_want "$ko")")
		WANT_NEW+=("$(_pf_want "$kn")")
	done
	# Port rules on the first ten CIDRs: limit in OLD, deny or allow in NEW.
	for ((i = 0; i < 10; i++)); do
		cidr="198.19.$((i * 8)).0/21"
		echo "limit set $cidr --proto udp --dport $((1000 + i)) --rate 1/h --burst 2" >>"$dir/old"
		if ((i % 2)); then
			echo "limit set $cidr --proto udp --dport $((1000 + i)) --rate 5 --burst 1000" >>"$dir/new"
			WANT_NEW+=(PPP)
		else
			echo "limit set $cidr --proto udp --dport $((1000 + i)) --rate 1/h --burst 1 --monitor" >>"$dir/new"
			WANT_NEW+=(PPP)
		fi
		PROBES+=("198.19.$((i * 8)).0,udp,$((1000 + i))")
		WANT_OLD+=(PPD)
	done
	for ((i = 0; i < 20; i++)); do
		cidr="2001:2:0:$((0x100 + i))::/64"
		ko=$(((i + 2) % 3))
		kn=$(((i + 1) % 3))
		echo "$(_pf_action "$ko") $cidr$(_pf_opts "$ko")" >>"$dir/old"
		echo "$(_pf_action "$kn") $cidr$(_pf_opts "$kn")" >>"$dir/new"
		spec="2001:2:0:$((0x100 + i))::"
		((i % 4 == 3)) && spec+=",tcp,80"
		PROBES+=("$spec")
		WANT_OLD+=("$(_pf_want "$ko")")
		WANT_NEW+=("$(_pf_want "$kn")")
	done
}

# The fault tests' common start: fault_tool built, namespaces PREFIX set up
# with sluice attached to the rx end, OLD and NEW written. Sets TOOL, PIN
# (the pin directory), POL (where the policies are) and want_old.
# shellcheck disable=SC2034 # the sourcing tests use PIN and want_old
fault_setup() { # PREFIX
	TOOL=$SLUICE_ROOT/build/tests/fault_tool
	[[ -x $TOOL ]] || fail "$TOOL not built: run make build/tests/fault_tool"
	netns_init "$1"
	netns_setup
	sluice_attach >/dev/null
	PIN=$SLUICE_PIN_ROOT/$IF_RX
	POL=$(netns_tmp pol)
	mkdir -p "$POL"
	policy_files "$POL"
	want_old="${WANT_OLD[*]}"
}
