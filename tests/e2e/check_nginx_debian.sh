#!/usr/bin/env bash
# e2e/check_nginx_debian: contrib/nginx as an operator installs it on stock
# Debian, beside the default site. A copy of Debian's own /etc/nginx (its
# nginx.conf, conf.d/, snippets/, sites-enabled/default -> the default site,
# modules-enabled/) in the test's scratch directory, changed only as
# doc/telling-the-client.md says (sluice-check-upstream.conf in conf.d/,
# sluice-check.conf in snippets/, one include line in the default site, the
# 'user' line's group) and where the copy must not write the host's files
# (its pid, logs and temp paths); the default site's own listen 80
# default_server lines, its root /var/www/html and its index are Debian's.
# nginx runs in the server namespace in front of `sluice check-server` on
# its Unix socket:
#  1. GET / from a client no rule covers is Debian's welcome page, 200 (not
#     a 403 of an index nginx cannot find);
#  2. a client under --requests 2/s --burst 3 that sends 30 requests back to
#     back gets 200s, then 429s with Retry-After; every answer is one of
#     them, the 200s at least the burst, and the 429s at least 10.
#
# It can fail: with the configuration installed as it was documented before
# (the whole server block in conf.d/, beside the default site), every
# request goes to the default site (default_server), 30 x 200 and never a
# 429; with the snippet's include line left out, the same.
set -euo pipefail
# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=tests/e2e/check_nginx_lib.sh
. "$(dirname "$0")/check_nginx_lib.sh"

HTTP_PORT=80	# the default site's, in the server namespace
FLOODER=198.18.0.3
FREE=198.18.0.9	# no rule
N=30

netns_init cnd
[[ -r /etc/nginx/nginx.conf && -r /etc/nginx/sites-available/default ]] ||
	skip "no stock Debian nginx configuration in /etc/nginx"
[[ -r /var/www/html/index.nginx-debian.html ]] || skip "no /var/www/html/index.nginx-debian.html (Debian's nginx-common)"
getent passwd www-data >/dev/null || skip "no user www-data"
netns_setup
nginx_init
client_addrs "$FLOODER" "$FREE"
sluice_attach
sluice_rx limit set "$FLOODER/32" --requests 2/s --burst 3 >/dev/null
check_start

# Debian's /etc/nginx, copied; its symlinks into /etc/nginx made relative.
ETC=$NGINX_DIR/etc
cp -a /etc/nginx "$ETC" || fail "cannot copy /etc/nginx"
ln -sfn ../sites-available/default "$ETC/sites-enabled/default"
conf=$ETC/nginx.conf
for pat in '^user www-data;$' '^pid /run/nginx.pid;$' 'include /etc/nginx/sites-enabled/\*;' \
	'include /etc/nginx/conf.d/\*.conf;'; do
	grep -q "$pat" "$conf" || skip "/etc/nginx/nginx.conf is not Debian's stock one (no '$pat')"
done
# Where the copy lives and writes: its own directory, never the host's.
sed -i -e "s|/etc/nginx/|$ETC/|g" -e "s|^pid /run/nginx.pid;|pid $NGINX_DIR/nginx.pid;|" \
	-e "s|/var/log/nginx/|$NGINX_DIR/|g" "$conf"
printf 'client_body_temp_path %s/body;\nproxy_temp_path %s/proxy;\nfastcgi_temp_path %s/fastcgi;\n' \
	"$NGINX_DIR/temp" "$NGINX_DIR/temp" "$NGINX_DIR/temp" >"$ETC/conf.d/zz-test-paths.conf"
printf 'uwsgi_temp_path %s/uwsgi;\nscgi_temp_path %s/scgi;\n' "$NGINX_DIR/temp" "$NGINX_DIR/temp" \
	>>"$ETC/conf.d/zz-test-paths.conf"

# The recipe of doc/telling-the-client.md, on the copy (the socket: this
# test's check server's).
install -m 0644 "$CHECK_UPSTREAM" "$ETC/conf.d/"
sed -i "s|^\(\s*\)server unix:/run/sluice/check.sock;$|\1server unix:$CHECK_SOCK;|" \
	"$ETC/conf.d/sluice-check-upstream.conf"
install -m 0644 "$CHECK_CONTRIB" "$ETC/snippets/"
sed -i 's/^user www-data;/user www-data sluice-check-clients;/' "$conf"
site=$ETC/sites-available/default
before=$(cat "$site")
sed -i '/^\s*server_name _;/a \	include snippets/sluice-check.conf;' "$site"
[[ $(cat "$site") != "$before" ]] || fail "the default site has no 'server_name _;' line to include the snippet after"
grep -q '^\s*listen 80 default_server;' "$site" || fail "the default site does not listen on 80 as default_server"

nginx_start "$conf"

# 1. The default site's index, through the check.
read -r code _ < <(req "$FREE" / | tr '|' ' ')
assert_eq "$code" 200 "GET / (Debian's welcome page) from a client no rule covers"

# 2. The flood.
OUT=$(netns_tmp flood)
req_loop "$FLOODER" / 30 "$N" 0 "$OUT"
echo "client $FLOODER, start end code retry-after ratelimit curl-exit:"
awk '{ print "  " $0 }' "$OUT"
assert_eq "$(wc -l <"$OUT")" "$N" "requests sent"
ok200=$(awk -F'\t' '$3 == 200' "$OUT" | wc -l)
n429=$(awk -F'\t' '$3 == 429' "$OUT" | wc -l)
assert_eq "$((ok200 + n429))" "$N" "answers that are 200 or 429"
assert_ge "$ok200" 3 "200s (the burst)"
assert_ge "$n429" 10 "429s"
assert_eq "$(awk -F'\t' '$3 == 429 && $4 !~ /^[0-9]+$/' "$OUT" | wc -l)" 0 "429s without Retry-After"
ok "check_nginx_debian"
