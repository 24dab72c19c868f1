#!/usr/bin/env bash
# Installs what sluice needs to build, test and demo on Debian 12 (only the
# packages that are missing), then makes sure bpffs is mounted. Idempotent.
set -euo pipefail

PACKAGES=(
	clang llvm gcc make pkg-config		# build
	python3-docutils			# rst2man: the manual page
	libbpf-dev libxdp-dev xdp-tools bpftool	# BPF, skeletons, attach
	libelf-dev zlib1g-dev libmicrohttpd-dev	# libraries we link
	libsystemd-dev				# sd_notify: readiness and the watchdog
	python3					# e2e/notify: a notify socket of its own
	libclang-rt-14-dev cppcheck clang-tidy	# sanitizers, make lint
	shellcheck clang-format			# make lint: lint/shell, lint/format
	iproute2 nftables iptables netsniff-ng	# netns/veth tests, trafgen
	procps util-linux			# pgrep, sysctl, nsenter
	prometheus curl jq ca-certificates	# exporter tests
	gnuplot-nox libxml2-utils		# sluice simulate --plot, its test
	nginx wrk				# check-server tests and bench
	hping3					# a spoofed flood from a third-party tool
	fail2ban				# its action for sluice, tested with the real one
	crowdsec crowdsec-custom-bouncer	# the CrowdSec bouncer, tested with the real one
	redis-server libhiredis-dev		# cluster agent and its tests
	libssl-dev openssl			# its rediss:// (TLS), and the test's certificates
	libsystemd-dev				# sd_notify: the daemons' readiness and watchdog
	build-essential debhelper dpkg-dev	# the Debian package (dpkg-buildpackage)
	fakeroot lintian systemd		# its test: lintian, systemd-analyze verify
	systemd-container			# pkg/box_lifecycle: systemd-nspawn (systemd-box)
)
BPFFS=/sys/fs/bpf

die() {
	echo "install-deps.sh: $*" >&2
	exit 1
}

[[ $(id -u) -eq 0 ]] || die "must run as root (try: sudo $0)"
command -v dpkg-query >/dev/null || die "dpkg-query not found: this script supports Debian/Ubuntu only"

# One dpkg-query for all of them (one a package took seconds on a busy
# machine); a name it does not know is simply not listed.
declare -A installed=()
while read -r pkg status; do
	[[ $status == installed ]] && installed[$pkg]=1
done < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${PACKAGES[@]}" 2>/dev/null || true)
missing=()
for pkg in "${PACKAGES[@]}"; do
	[[ -n ${installed[$pkg]:-} ]] || missing+=("$pkg")
done

if ((${#missing[@]})); then
	command -v apt-get >/dev/null || die "apt-get not found; install by hand: ${missing[*]}"
	echo "install-deps.sh: installing ${missing[*]}"
	apt-get update || die "apt-get update failed (network or sources.list?)"
	# Packages with a service (nginx) must not start it on the host: the
	# tests run their own, inside their namespaces. policy-rc.d says so to
	# the maintainer scripts, for this install only, unless one is there.
	rcd=/usr/sbin/policy-rc.d
	own_rcd=
	if [[ ! -e $rcd ]]; then
		printf '#!/bin/sh\nexit 101\n' >"$rcd" && chmod 755 "$rcd" && own_rcd=1
	fi
	# crowdsec's postinst registers with CrowdSec's Central API unless its
	# credentials file says otherwise (README.Debian): offline, the
	# install would fail. The tests use a local API only.
	if [[ " ${missing[*]} " == *" crowdsec "* && ! -s /etc/crowdsec/online_api_credentials.yaml ]]; then
		install -d -m 0755 /etc/crowdsec &&
			echo '# no Central API registration (sluice tests: local API only)' \
				>/etc/crowdsec/online_api_credentials.yaml
	fi
	rc=0
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" || rc=$?
	[[ -z $own_rcd ]] || rm -f "$rcd"
	((rc == 0)) || die "apt-get install failed for: ${missing[*]}"
else
	echo "install-deps.sh: all ${#PACKAGES[@]} packages already installed"
fi

if [[ $(stat -f -c %T "$BPFFS" 2>/dev/null || true) == bpf_fs ]]; then
	echo "install-deps.sh: bpffs already mounted at $BPFFS"
else
	mkdir -p "$BPFFS" || die "cannot create $BPFFS"
	mount -t bpf bpf "$BPFFS" || die "cannot mount bpffs at $BPFFS (kernel without CONFIG_BPF_SYSCALL, or no CAP_SYS_ADMIN?)"
	echo "install-deps.sh: mounted bpffs at $BPFFS"
fi
