#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The layers of user/lib/: each module may include the headers of modules
# on lower layers only, so the library has no cycle and reads bottom up.
# A module is NAME.c with NAME.h; a file NAME_PART.c not listed belongs to
# module NAME. core.h is the umbrella for cmd/ and daemon/: no file of
# lib/ includes it, nor a header of cmd/ or daemon/, and it only includes
# (it declares nothing of its own). Headers with a path ("sluice/gcra.h",
# the ABI) and generated skeletons (*.skel.h) are free.
#
# Then the same by symbols, from the objects make built (nm): a command
# object's files (cmd/NAME.c and cmd/NAME_PART.c) define what only they
# and main.c use; no symbol one of them defines is used by daemon/ or by
# another command object's files. Library code lives in lib/.
#
# usage: tests/lint/layers.sh    (the symbol check needs `make` first)
set -euo pipefail
cd "$(dirname "$0")/../.."
LIB=${LAYERS_LIB:-user/lib}

# module       layer
LAYERS=$(cat <<'END'
opts          0	# the options main() parses
hash          0	# the one hash of userspace tables
prom          0	# the Prometheus text writer
output        1	# the error funnel and the JSON writer
lru           1	# the fixed-capacity LRU hash table
clock         2	# the datapath's clocks
parse         2	# addresses, CIDRs, numbers
map_write     2	# every map write
steps         2	# attach's and detach's named steps
names         2	# drop reason and mode names
cli           3	# the command-line grammar
pins          3	# where the pins live, who reads them
maps          4	# the pinned maps of an interface
srctab        5	# the source table: sized, mapped, read and CASed
sources       6	# counting tracked sources
cluster_state 5	# the cluster agent's state and share
policy        6	# the policy model in memory
rule          7	# rule words: parsing and printing
store         8	# the live policy: read, commit, flip
bantab        8	# the ban tables: prefix trie, lists, sweep; request rules' bans
live          9	# the live maps read for the commands
xdp_prog      9	# loading, attaching and pinning the program
upgrade       9	# an attach over another version's pins
END
)
declare -A layer=()
while read -r mod lay _; do
	layer[$mod]=$lay
done <<<"$LAYERS"

module_of() { # FILE -> module name, or "" if unknown
	local base=${1##*/}
	base=${base%.[ch]}
	while [[ -z ${layer[$base]+x} && $base == *_* ]]; do
		base=${base%_*}
	done
	[[ -n ${layer[$base]+x} ]] && echo "$base"
	return 0
}

bad=0
complain() { echo "lint/layers: $*" >&2; bad=1; }

for f in "$LIB"/*.[ch]; do
	[[ ${f##*/} == core.h ]] && continue
	mod=$(module_of "$f")
	if [[ -z $mod ]]; then
		b=${f##*/}
		complain "$f: module ${b%.[ch]} has no layer: add it to tests/lint/layers.sh"
		continue
	fi
	while IFS= read -r inc; do
		[[ $inc == */* || $inc == *.skel.h ]] && continue
		if [[ $inc == core.h ]]; then
			complain "$f includes the umbrella core.h: include the module headers it uses"
			continue
		fi
		if [[ ! -e $LIB/$inc ]]; then
			if [[ -n $(find user/cmd user/daemon -name "$inc" 2>/dev/null) ]]; then
				complain "$f includes $inc of cmd/ or daemon/: lib depends on neither"
			else
				complain "$f includes $inc, which is not a header of $LIB"
			fi
			continue
		fi
		dep=$(module_of "$inc")
		[[ $dep == "$mod" ]] && continue
		if [[ -z $dep ]]; then
			complain "$f includes $inc, whose module has no layer"
		elif ((layer[$dep] >= layer[$mod])); then
			complain "$f (layer ${layer[$mod]}, $mod) includes $inc (layer ${layer[$dep]}, $dep): only lower layers"
		fi
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done

# The umbrella: #include lines, guards and comments only.
umbrella=$LIB/core.h
if grep -vE '^[[:space:]]*(#[[:space:]]*(include|ifndef|define|endif)\b|/\*|\*|$)' "$umbrella" | grep -q .; then
	complain "$umbrella declares: $(grep -vE '^[[:space:]]*(#[[:space:]]*(include|ifndef|define|endif)\b|/\*|\*|$)' "$umbrella" | head -n 1) (put it in its module's header)"
fi

# Symbols: which command object (cmd/NAME*.o, NAME up to the first '_')
# or daemon object uses what another defines.
OBJ=${LAYERS_OBJ:-build/user}
group_of() { # OBJECT -> "cmd:NAME" or "daemon"
	local b=${1##*/}
	b=${b%.o}
	case $1 in
	"$OBJ"/cmd/*) echo "cmd:${b%%_*}" ;;
	*) echo daemon ;;
	esac
}
mapfile -t cmd_objs < <(find "$OBJ/cmd" -name '*.o' 2>/dev/null | sort)
mapfile -t daemon_objs < <(find "$OBJ/daemon" -name '*.o' 2>/dev/null | sort)
if ((${#cmd_objs[@]} == 0)); then
	complain "no objects under $OBJ/cmd: run make first (the symbol check reads them)"
else
	declare -A defined_by=()
	for o in "${cmd_objs[@]}"; do
		while read -r sym; do
			defined_by[$sym]=$o
		done < <(nm -g --defined-only "$o" | awk '{ print $3 }')
	done
	for o in "${cmd_objs[@]}" "${daemon_objs[@]}"; do
		g=$(group_of "$o")
		while read -r sym; do
			d=${defined_by[$sym]:-}
			[[ -n $d && $(group_of "$d") != "$g" ]] &&
				complain "${o#"$OBJ"/} uses $sym of ${d#"$OBJ"/}: move it to lib/"
		done < <(nm -u "$o" | awk '{ print $2 }')
	done
fi
((bad == 0)) || exit 1
echo "lint/layers: user/lib includes only lower layers; core.h only includes; no cmd/ symbol is used outside its object and main"
