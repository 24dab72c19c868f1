#!/usr/bin/env bash
# cluster/auth: the agent on a production-style Redis, set up as
# doc/cluster.md's "Production setup" says: an ACL user with only the ACL
# line the doc ships, TLS with a CA and certificates made here (client
# certificates required), a Unix socket, `requirepass` for the default
# user. Two hosts, one over TCP and one over TLS, both as the ACL user on
# database 3, hold one --cluster limit (admitted within 5 % of B + R x t);
# then host 1 over the Unix socket with the default user's password. Bad
# credentials stop the agent with one line: a password in the URL (exit
# 2), a password file others can read (exit 2), a wrong password (exit 1),
# rediss:// without --redis-ca against the self-signed server (exit 1). The
# password is in no `ps` line, agent log, or status. Last, a server that
# answers with replies too large (an array of 3,000,000 integers, a
# 16 MiB string) is dropped with its memory unspent: the agent's peak RSS
# stays under 40 MiB.
set -euo pipefail
# shellcheck source=tests/cluster/lib.sh
. "$(dirname "$0")/lib.sh"

RATE=1000
BURST=500
SYNC_MS=100
SECS=5
PPS=10000
DIV=8
TLS_PORT=6380
BOMB_PORT=6390
DOC=$SLUICE_ROOT/doc/cluster.md

says() { # TEXT ERE WHAT
	[[ $1 =~ $2 ]] || fail "$3: '$1' does not match /$2/"
}

command -v openssl >/dev/null || skip "openssl not installed"
PY=$(command -v /usr/bin/python3 python3 | head -n 1) || skip "python3 not installed"
cluster_init au 2
cluster_setup

# --- certificates: a CA, the server's (for 198.19.0.254), a client's
T=$NETNS_TMP/tls
mkdir -p "$T"
mkcert() { # NAME SUBJ EXT: a key and a certificate signed by the CA
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/$1.key" \
		-subj "$2" -out "$T/$1.csr" 2>/dev/null || fail "openssl req $1"
	printf '%s\n' "$3" >"$T/$1.ext"
	openssl x509 -req -in "$T/$1.csr" -CA "$T/ca.crt" -CAkey "$T/ca.key" -CAcreateserial \
		-days 2 -extfile "$T/$1.ext" -out "$T/$1.crt" 2>/dev/null || fail "openssl x509 $1"
}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/ca.key" \
	-subj "/CN=sluice test CA" -days 2 -out "$T/ca.crt" 2>/dev/null || fail "openssl CA"
mkcert redis "/CN=redis" "subjectAltName=IP:$REDIS_ADDR"
mkcert client "/CN=sluice-agent" "extendedKeyUsage=clientAuth"
chmod 0644 "$T"/*.key	# redis-server may run as another user; test files only

# --- Redis: plain port with requirepass, TLS port (client certs required), Unix socket
PW=$(openssl rand -hex 16)
ADMIN_PW=$(openssl rand -hex 16)
SOCK=$NETNS_TMP/redis.sock
cat >"$NETNS_TMP/redis.conf" <<-CONF
	bind $REDIS_ADDR
	port $REDIS_PORT
	tls-port $TLS_PORT
	tls-cert-file $T/redis.crt
	tls-key-file $T/redis.key
	tls-ca-cert-file $T/ca.crt
	tls-auth-clients yes
	unixsocket $SOCK
	unixsocketperm 700
	requirepass $ADMIN_PW
	save ""
	appendonly no
	dir $NETNS_TMP
CONF
ip netns exec "$NS_REDIS" redis-server "$NETNS_TMP/redis.conf" >>"$NETNS_TMP/redis.log" 2>&1 &
REDIS_PID=$!
rc() { REDISCLI_AUTH=$ADMIN_PW timeout 5 ip netns exec "$NS_REDIS" redis-cli --no-auth-warning \
	-h "$REDIS_ADDR" -p "$REDIS_PORT" "$@"; }
for ((i = 0; i < 100; i++)); do
	[[ $(rc PING 2>/dev/null) == PONG ]] && break
	kill -0 "$REDIS_PID" 2>/dev/null || { cat "$NETNS_TMP/redis.log" >&2; fail "redis-server exited"; }
	sleep 0.05
done
[[ $(rc PING 2>/dev/null) == PONG ]] || fail "redis-server did not answer within 5 s"

# --- 1. the ACL user: doc/cluster.md's line, as written, PASSWORD replaced
doc_acl "$PW"
[[ $(rc "${ACL_WORDS[@]}") == OK ]] || fail "ACL SETUSER from $DOC refused: $(rc "${ACL_WORDS[@]}" 2>&1)"
ok "the ACL user of $DOC: $(rc ACL LIST | grep '^user sluice ' | sed 's/#[0-9a-f]* /#... /')"

# --- 3. the password file, as the doc says
PWFILE=$NETNS_TMP/redis-password
install -m 0600 -o root /dev/null "$PWFILE"
printf '%s\n' "$PW" >"$PWFILE"
BADFILE=$NETNS_TMP/redis-password.0644
install -m 0644 -o root /dev/null "$BADFILE"
printf '%s\n' "$PW" >"$BADFILE"
TLS_OPTS=(--redis-ca "$T/ca.crt" --redis-cert "$T/client.crt" --redis-key "$T/client.key")
set_rule "$RATE" "$BURST"

# --- bad credentials: one line, nothing running
TCP=redis://sluice@$REDIS_ADDR:$REDIS_PORT/3
TLS=rediss://sluice@$REDIS_ADDR:$TLS_PORT/3
expect_exit 2 "a password in the URL" hs 1 cluster join "redis://sluice:$PW@$REDIS_ADDR:$REDIS_PORT/3"
says "$ERR" "redis-password-file" "the refusal says where the password goes"
[[ $ERR != *"$PW"* ]] || fail "the refusal echoes the password: $ERR"
expect_exit 2 "a password file of mode 0644" hs 1 cluster join "$TCP" --redis-password-file "$BADFILE"
says "$ERR" "chmod 0600" "the refusal says what to do"
expect_exit 1 "a wrong password" env SLUICE_REDIS_PASSWORD=wrong-"$PW" nsenter \
	--net="/run/netns/${NS_H[1]}" "$SLUICE" -i "${IF_R[1]}" cluster join "$TCP" --node h1
says "$ERR" "WRONGPASS|invalid" "the refusal is Redis's"
expect_exit 1 "rediss:// without --redis-ca, a self-signed server" hs 1 cluster join "$TLS" \
	--redis-password-file "$PWFILE" --redis-cert "$T/client.crt" --redis-key "$T/client.key"
says "$ERR" "certificate" "the refusal names the certificate"
[[ -z $(hs 1 -j cluster status | jq -r 'select(.agent_alive)') ]] || fail "an agent runs after a refusal"

# --- two hosts, TCP and TLS, the ACL user on database 3: one limit
REDIS_URL=$TCP agent_start 1 "$SLUICE" --redis-password-file "$PWFILE"
REDIS_URL=$TLS SLUICE_REDIS_PASSWORD=$PW agent_start 2 "$SLUICE" "${TLS_OPTS[@]}"
wait_cluster up 2 10
ok "h1 ($(cstatus 1 .redis)) and h2 ($(cstatus 2 .redis)) up with 2 peers"
run_phase even 198.18.1.1 "$PPS" "$SECS" 1 2
expected=$(calc "$BURST + $RATE * $PH_T" %.1f)
bound=$(accuracy_bound 2)
echo "RESULT auth TCP+TLS: t=${PH_T}s admitted=$PH_ADMITTED expected=$expected bound=$bound"
assert_near "$PH_ADMITTED" "$expected" 5 "TCP + TLS, ACL user: admitted vs B + R x t"
assert_le "$PH_ADMITTED" "$bound" "TCP + TLS, ACL user: admitted vs the bound"
keys=$(rc -n 3 --scan --pattern 'sluice:*' | wc -l)
((keys >= 1)) || fail "database 3 holds no sluice:* key, want the heartbeat's at least"
[[ -z $(rc -n 0 --scan --pattern 'sluice:*') ]] || fail "database 0 holds sluice:* keys"
ok "the keys are in database 3 ($keys), none in 0"

# --- the password: in no ps line, log, or status
leak=$(ps -eo args | grep -F -- "$PW" | grep -v grep || true)
[[ -z $leak ]] || fail "the password is in ps: $leak"
for n in 1 2; do
	! grep -qF -- "$PW" "${AGENT_LOG[n]}" || fail "the password is in host $n's log"
	! hs "$n" -j cluster status | grep -qF -- "$PW" || fail "the password is in host $n's status"
done
ok "the password is in no ps line, agent log or status"

# --- host 1 over the Unix socket, the default user's password (AUTH PASSWORD)
agent_stop 1
REDIS_URL="unix://$SOCK?db=3" SLUICE_REDIS_PASSWORD=$ADMIN_PW agent_start 1 "$SLUICE"
wait_cluster up 2 10
ok "h1 over $(cstatus 1 .redis) up with 2 peers"
agent_stop 1
agent_stop 2
agent_logs

# --- replies too large: dropped, the memory unspent
ip netns exec "$NS_REDIS" "$PY" -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(4)
bombs = [b"*3000000\r\n" + b":1\r\n" * 3000000, b"$16777216\r\n" + b"x" * 16777216 + b"\r\n"]
for bomb in bombs:
    c, _ = s.accept()
    buf = b""
    while b"PING" not in buf:
        buf += c.recv(4096)
    c.sendall(b"+PONG\r\n")
    buf = b""
    while b"LOAD" not in buf:
        buf += c.recv(65536)
    try:
        c.sendall(bomb)
    except OSError:
        pass
    c.close()
' "$REDIS_ADDR" "$BOMB_PORT" &
CL_PIDS+=($!)
for ((i = 0; i < 50; i++)); do # listening (a probe would take one of its two answers)
	[[ -n $(ip netns exec "$NS_REDIS" ss -Hltn "sport = :$BOMB_PORT") ]] && break
	sleep 0.1
done
for what in "an array of 3,000,000" "a string of 16 MiB"; do
	out=$(nsenter --net="/run/netns/${NS_H[1]}" "$PY" -c '
import resource, subprocess, sys
p = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=20)
print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, p.stderr.strip().splitlines()[-1])
' "$SLUICE" -i "${IF_R[1]}" cluster join "redis://$REDIS_ADDR:$BOMB_PORT" --node h1 --sync 10000) ||
		fail "$what: running the agent failed: $out"
	read -r rc_ rss why <<<"$out"
	echo "RESULT auth $what: exit $rc_, peak RSS $rss MiB: $why"
	[[ $rc_ == 1 ]] || fail "$what: the agent exited $rc_, want 1"
	says "$why" "a reply longer than" "$what: refused as too long"
	assert_le "$rss" 40 "$what: the agent's peak RSS, MiB"
done
