#!/usr/bin/env bash
# `make bench`: sluice's per-packet cost next to baselines, measured side by
# side in one run. Ratios are what to read; absolute numbers move with the
# machine.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

[[ $(id -u) -eq 0 ]] || { echo "bench.sh: must run as root (sudo make bench)" >&2; exit 1; }

echo "== XDP program cost, BPF_PROG_TEST_RUN =="
build/tests/bench_xdp
echo
echo "== Plain CIDR rules: this tree next to the version before policy model v2 =="
tools/bench-before.sh
# A section that exits 77 skipped itself and said why (live frames refused).
section() { "$@" || { rc=$?; ((rc == 77)) || exit "$rc"; }; }
tools/bench-veth.sh
section env BENCH_GEN=xdp tools/bench-veth.sh
echo

# The receiver's NAPI thread, with "sluice (before)" rows: the
# sluice binary of another revision (SLUICE_NAPI_BEFORE, default 8c1b130:
# source table v3, keyed buckets in an LRU hash, before v4), built
# in a temporary worktree, loading its own program.
# BENCH_SLUICE_BEFORE=/path/to/sluice uses that binary instead; a clone
# without the revision (shallow) runs without the row.
rev=${SLUICE_NAPI_BEFORE:-8c1b130}
if [[ -z ${BENCH_SLUICE_BEFORE:-} ]] && git rev-parse -q --verify "$rev^{commit}" >/dev/null 2>&1; then
	tmp=$(mktemp -d /tmp/sluice-napi-before.XXXXXX)
	cleanup() { git worktree remove --force "$tmp" >/dev/null 2>&1 || rm -rf "$tmp"; }
	trap cleanup EXIT
	git worktree add -q --detach "$tmp" "$rev"
	make -s -C "$tmp" build/sluice >/dev/null
	export BENCH_SLUICE_BEFORE=$tmp/build/sluice
	echo "(sluice (before): $(git log -1 --format='%h %s' "$rev" | cut -c1-70))"
elif [[ -z ${BENCH_SLUICE_BEFORE:-} ]]; then
	echo "bench.sh: revision $rev is not in this clone (a shallow clone?): no 'sluice (before)' row"
fi
section tools/bench-napi.sh
echo

# Prefix bans: ban load of 100000 and 1000000 prefixes, ban add and del.
tools/bench-bans.sh
echo

# The check server on loopback, and nginx with auth_request to it
# next to nginx alone and nginx's own limit_req.
tools/bench-check.sh

# A --cluster rule across 4 hosts and one real Redis: accuracy
# and Redis commands per second per host.
tools/bench-cluster.sh
