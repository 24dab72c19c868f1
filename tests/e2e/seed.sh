#!/usr/bin/env bash
# e2e/seed: the source table's hash seed is root's alone and rotates with
# the table. Whoever knows it can aim 8 addresses at a source's two
# buckets and lock it out (tests/bpf/test_seed.c), so:
#  - attach pins it apart (map src_seed) 0600 root:root, while the config
#    stays 0640 root:GROUP; a process of uid nobody in the pins' group may
#    read the config but not the seed's pin, and the config's value holds
#    no copy of the seed's 8 bytes;
#  - that reader still finds a source's bucket: `query` as nobody in the
#    group gives the same passed and dropped as root's (it walks its copy
#    of the table where root hashes with the seed);
#  - a re-attach keeps the table, and its seed with it (the source keeps
#    its counts); detach and attach make a new table under a new seed.
# Shown to fail against the build whose config held the seed: no src_seed
# pin ("cannot read the seed of ...").
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

SRC=198.18.0.1	# the tx end's own address

netns_init sd
for cmd in setpriv bpftool stat; do
	command -v "$cmd" >/dev/null || skip "$cmd not installed"
done
getent passwd nobody >/dev/null || skip "no user nobody"
netns_setup
sluice_attach >/dev/null
DIR=$SLUICE_PIN_ROOT/$IF_RX
GROUP=$(stat -c %G "$DIR")
NOGROUP=$(id -gn nobody)

# Runs a command as nobody in the pins' group, no capabilities, on rx.
as_reader() {
	nsenter --net="/run/netns/$NS_RX" setpriv --reuid nobody --regid "$NOGROUP" \
		--groups "$GROUP" --inh-caps=-all --bounding-set=-all "$@"
}

# A map's only value, as root reads it: its bytes, hex, space-separated.
value_hex() { # MAP
	bpftool -j map lookup pinned "$DIR/$1" key 0 0 0 0 | jq -r '.value | join(" ")' ||
		fail "cannot read the value of $DIR/$1"
}

seed_hex() {
	[[ -e $DIR/src_seed ]] || fail "cannot read the seed of $IF_RX: no pin $DIR/src_seed"
	value_hex src_seed
}

# The pin: root's, and not the group's.
assert_eq "$(stat -c '%a %U:%G' "$DIR/src_seed")" "600 root:root" "the seed's pin"
assert_eq "$(stat -c '%a %U:%G' "$DIR/config")" "640 root:$GROUP" "the config's pin"
as_reader test -r "$DIR/config" || fail "nobody in $GROUP cannot read the config's pin"
! as_reader test -r "$DIR/src_seed" || fail "nobody in $GROUP can read the seed's pin"
ok "nobody in group $GROUP reads the config's pin but not the seed's"

seed1=$(seed_hex)
[[ $seed1 =~ ^(0x[0-9a-f]{2} ?){8}$ ]] || fail "the seed is not 8 bytes: '$seed1'"
[[ $seed1 != "0x00 0x00 0x00 0x00 0x00 0x00 0x00 0x00" ]] || fail "the seed is 0"
config=$(value_hex config)
[[ $config != *"$seed1"* ]] || fail "the config map (the group reads it) holds the seed $seed1"
ok "the seed ($seed1) is in no 8 bytes of the config"

# A reader of the group finds the source's bucket as root does.
sluice_rx limit default --rate 1000 --burst 100 >/dev/null
out=$(flood --src "$SRC" --count 5 --pps 1000 --seconds 5)
assert_eq "$(flood_field "$out" .sent)" 5 "packets sent from $SRC"
root_view=$(sluice_jq '[.passed, .dropped] | tostring' query "$SRC")
assert_eq "$root_view" "[5,0]" "passed and dropped of $SRC, as root"
reader=$(as_reader "$SLUICE" -i "$IF_RX" -j query "$SRC") ||
	fail "query $SRC as nobody in $GROUP failed: $reader"
assert_eq "$(jq -c '[.passed, .dropped]' <<<"$reader")" "$root_view" \
	"passed and dropped of $SRC, as nobody in $GROUP"
ok "a reader without the seed finds $SRC's bucket: $reader"

# A re-attach keeps the table and its seed; detach and attach do not.
sluice_attach >/dev/null
assert_eq "$(seed_hex)" "$seed1" "the seed after a re-attach"
assert_eq "$(sluice_jq .passed query "$SRC")" 5 "passed of $SRC after a re-attach"
assert_eq "$(stat -c '%a %U:%G' "$DIR/src_seed")" "600 root:root" "the seed's pin after a re-attach"
ok "a re-attach keeps the table and its seed"
sluice_rx detach "$IF_RX" >/dev/null
sluice_attach >/dev/null
seed2=$(seed_hex)
[[ $seed2 != "$seed1" ]] || fail "the seed did not change across detach and attach: $seed2"
assert_eq "$(stat -c '%a %U:%G' "$DIR/src_seed")" "600 root:root" "the seed's pin after attach"
ok "detach and attach: a new seed ($seed2)"
