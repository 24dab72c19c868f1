# shellcheck shell=bash
# map_fds PID: one line per BPF map descriptor the process holds,
#   FD MAP_ID ro|rw FROZEN
# from /proc/PID/fdinfo: the open mode is flags & O_ACCMODE, the last octal
# digit of flags (0 read-only, anything else can write); frozen is the
# kernel's (1: no write can land).
map_fds() { # PID
	local fd link
	for fd in "/proc/$1/fd"/*; do
		link=$(readlink "$fd" 2>/dev/null) || continue
		[[ $link == "anon_inode:bpf-map" ]] || continue
		awk -v fd="${fd##*/}" '
			$1 == "flags:" { mode = (substr($2, length($2), 1) % 4) ? "rw" : "ro" }
			$1 == "map_id:" { id = $2 }
			$1 == "frozen:" { frozen = $2 }
			END { if (id != "") print fd, id, mode, (frozen == "" ? 0 : frozen) }' \
			"/proc/$1/fdinfo/${fd##*/}" 2>/dev/null || true
	done
}
