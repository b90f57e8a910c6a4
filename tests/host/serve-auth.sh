#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tracevisor serve --web.config.file (the exporter-toolkit web config) on
# this host (the BPF programs attach whether or not exits fire here):
#  - bearer_token_file over plain HTTP: no credentials, a wrong token, or
#    Basic instead: 401, WWW-Authenticate, no metrics, for /metrics and /;
#    the right token: 200 and metrics promtool accepts;
#  - TLS with client_auth_type RequireAndVerifyClientCert and
#    basic_auth_users (bcrypt): no client certificate, or one from another
#    CA: the handshake fails, nothing served; the CA's client with a wrong
#    password: 401; the right one: 200;
#  - a real Prometheus (Debian's) scrapes it over TLS with that client
#    certificate and basic auth: up == 1 and tracevisor_scrapes_total
#    through its HTTP API; one with no credentials: up == 0;
#  - the rate bound: a burst of 80 requests gets 429s, counted in
#    tracevisor_http_requests_refused_total;
#  - bad configs: an unknown key, a missing certificate, YAML that does not
#    parse, a missing token file: one line naming the file, exit 1;
#  - SIGTERM: status 0.
. "$(dirname "$0")/lib.bash"
require_root
for t in curl openssl promtool prometheus; do command -v $t >/dev/null || skip "$t not installed (make deps)"; done
T=$TV_TMP
SERVES=()
start() {	# CONFIG: serve on a free port (PORT) with it, until it answers
	serve_start --web.config.file "$1"
	PORT=$SERVE_PORT SP=$SERVE_PID
}
stop() {
	kill -TERM $SP
	wait $SP
	expect_eq "serve's status after SIGTERM" $? 0
}
code() { rm -f "$T/body" "$T/head"; curl -s -o "$T/body" -D "$T/head" -w '%{http_code}' "$@"; }
# shellcheck disable=SC2154 # p: the trap's own loop variable
trap 'for p in "${SERVES[@]}" ${PROMP:-}; do kill "$p" 2>/dev/null; done' EXIT

# 1. A bearer token over plain HTTP.
echo "s3cret-token-$$" >"$T/token"
printf 'bearer_token_file: %s\n' "$T/token" >"$T/bearer.yml"
start "$T/bearer.yml"
for args in "" "-H Authorization:Bearer_wrong" "-H Authorization: Bearer wrong" "-u user:pw"; do
	for path in /metrics /; do
		# shellcheck disable=SC2086 # the curl options' words
		c=$(code ${args:+"${args%% *}"} ${args:+"${args#* }"} "http://127.0.0.1:$PORT$path")
		[ "$c" = 401 ] || fail "bearer, '$args' $path: HTTP $c, want 401"
		[ "$(cat "$T/body")" = Unauthorized ] && grep -qi "^WWW-Authenticate: Bearer" "$T/head" ||
			fail "a 401 said more or less: $(cat "$T/head" "$T/body")"
	done
done
c=$(code -H "Authorization: Bearer $(cat "$T/token")" "http://127.0.0.1:$PORT/metrics")
[ "$c" = 200 ] || fail "bearer, the right token: HTTP $c"
promtool check metrics <"$T/body" >"$T/pc" 2>&1 || fail "promtool: $(cat "$T/pc")"
grep -q "^tracevisor_http_requests_refused_total 8$" "$T/body" || fail "8 refusals not counted: $(grep refused "$T/body")"
echo "ok: bearer token: 8 requests without it refused (401 only), the right one served"
# the rate bound: a burst past 40 requests gets 429
burst=()
for _ in $(seq 80); do burst+=(-o /dev/null "http://127.0.0.1:$PORT/"); done
curl -s -w '%{http_code}\n' -H "Authorization: Bearer $(cat "$T/token")" "${burst[@]}" >"$T/burst"
n429=$(grep -c 429 "$T/burst")
[ "$n429" -gt 0 ] && [ "$(grep -c 200 "$T/burst")" -ge 20 ] || fail "a burst of 80: $(sort "$T/burst" | uniq -c)"
echo "ok: a burst of 80 requests: $n429 got 429"
stop

# 2. TLS with client certificates, and basic auth (bcrypt).
cd "$T" || exit 1
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=tv-test-ca -keyout ca.key -out ca.crt 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=other-ca -keyout other.key -out other.crt 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >san.ext
for n in server client stranger; do
	openssl req -newkey rsa:2048 -nodes -subj /CN=$n -keyout $n.key -out $n.csr 2>/dev/null
done
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile san.ext -out server.crt 2>/dev/null
openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out client.crt 2>/dev/null
openssl x509 -req -in stranger.csr -CA other.crt -CAkey other.key -CAcreateserial -days 2 -out stranger.crt 2>/dev/null
HASH=$(/usr/bin/python3 -c 'import crypt; print(crypt.crypt("pr0m-pw", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1024)))' 2>/dev/null)
cat >tls.yml <<EOF
tls_server_config:
  cert_file: $T/server.crt
  key_file: $T/server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: $T/ca.crt
  min_version: TLS12
basic_auth_users:
  prometheus: '$HASH'
EOF
cd - >/dev/null || exit 1
start "$T/tls.yml"
grep -q "/metrics on https://" "$T/serve.err" || fail "not said as https: $(cat "$T/serve.err")"
U=https://127.0.0.1:$PORT/metrics
c=$(code --cacert "$T/ca.crt" -u prometheus:pr0m-pw "$U")
[ "$c" = 000 ] && [ ! -s "$T/body" ] || fail "TLS without a client certificate: HTTP $c"
c=$(code --cacert "$T/ca.crt" --cert "$T/stranger.crt" --key "$T/stranger.key" -u prometheus:pr0m-pw "$U")
[ "$c" = 000 ] && [ ! -s "$T/body" ] || fail "TLS with another CA's client certificate: HTTP $c"
c=$(code --cacert "$T/ca.crt" --cert "$T/client.crt" --key "$T/client.key" -u prometheus:wrong "$U")
[ "$c" = 401 ] && grep -qi "^WWW-Authenticate: Basic" "$T/head" || fail "TLS, a wrong password: HTTP $c"
c=$(code --cacert "$T/ca.crt" --cert "$T/client.crt" --key "$T/client.key" "$U")
[ "$c" = 401 ] || fail "TLS, no password: HTTP $c"
c=$(code --cacert "$T/ca.crt" --cert "$T/client.crt" --key "$T/client.key" -u prometheus:pr0m-pw "$U")
[ "$c" = 200 ] && grep -q "^tracevisor_bpf_programs_attached 2$" "$T/body" || fail "TLS, the right client and password: HTTP $c"
echo "ok: TLS: no client certificate or another CA's: no handshake; wrong or no password: 401; right: 200"

# 3. A real Prometheus scrapes it so, and one without credentials fails.
PP=$(free_port)
cat >"$T/prom.yml" <<EOF
global: {scrape_interval: 1s}
scrape_configs:
  - job_name: tracevisor
    scheme: https
    tls_config: {ca_file: $T/ca.crt, cert_file: $T/client.crt, key_file: $T/client.key}
    basic_auth: {username: prometheus, password: pr0m-pw}
    static_configs: [{targets: ["127.0.0.1:$PORT"]}]
  - job_name: anonymous
    scheme: https
    tls_config: {ca_file: $T/ca.crt}
    static_configs: [{targets: ["127.0.0.1:$PORT"]}]
EOF
prometheus --config.file="$T/prom.yml" --storage.tsdb.path="$T/tsdb" --web.listen-address=127.0.0.1:$PP >"$T/prom.log" 2>&1 &
PROMP=$!
q() { curl -s "http://127.0.0.1:$PP/api/v1/query" --data-urlencode "query=$1"; }
for _ in $(seq 150); do
	q 'up{job="tracevisor"} == 1 and on() tracevisor_scrapes_total > 1' | grep -q '"result":\[{' && break
	sleep 0.2
done
q 'up{job="tracevisor"} == 1 and on() tracevisor_scrapes_total > 1' | grep -q '"result":\[{' ||
	fail "Prometheus did not scrape serve over TLS with basic auth: $(q up) $(tail -3 "$T/prom.log")"
q 'up{job="anonymous"}' | grep -q '"value":\[[0-9.]*,"0"\]' || fail "an anonymous Prometheus job is not down: $(q up)"
kill $PROMP
wait $PROMP 2>/dev/null
echo "ok: Prometheus scrapes over TLS with its client certificate and basic auth (up 1); without them up 0"
stop

# 4. Bad configs: one line naming the file, status 1.
printf 'tls_server_config:\n  cert_file: /nonexistent.crt\n  key_file: /nonexistent.key\n' >"$T/bad1.yml"
printf 'http_server_config:\n  http2: false\n' >"$T/bad2.yml"
printf 'tls_server_config: [unclosed\n' >"$T/bad3.yml"
printf 'bearer_token_file: /nonexistent/token\n' >"$T/bad4.yml"
for b in "bad1|Cannot load cert_file: path=\"/nonexistent.crt\"" "bad2|Unsupported web config key in $T/bad2.yml: http_server_config" \
	"bad3|Invalid web config $T/bad3.yml: YAML error" "bad4|Cannot open bearer_token_file: path=\"/nonexistent/token\"" \
	"missing|Cannot open web config file: path=\"$T/missing.yml\""; do
	timeout 10 "$TV" serve --listen "127.0.0.1:$(free_port)" --web.config.file "$T/${b%%|*}.yml" >"$T/bad.out" 2>"$T/bad.err"
	rc=$?
	[ $rc = 1 ] && [ "$(wc -l <"$T/bad.err")" = 1 ] && grep -qF "${b#*|}" "$T/bad.err" ||
		fail "${b%%|*}: status $rc: $(cat "$T/bad.err")"
done
echo "ok: 5 bad configs, one line each, status 1"
echo "PASS: serve --web.config.file: bearer token, TLS client certificates, basic auth, Prometheus over TLS, rate bound, errors" >&2
