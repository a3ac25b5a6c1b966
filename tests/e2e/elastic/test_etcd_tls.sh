#!/usr/bin/env bash
# --rdzv-backend etcd over TLS and with etcd's auth (issue 43 item 1): a real etcd member on
# loopback started with --cert-file/--key-file/--client-cert-auth/--trusted-ca-file, its
# certificates made here by the openssl CLI.
#   1. mutual TLS: two launchers (--rdzv-etcd-cacert/-cert/-key) form a job and train the tiny GPT;
#   2. a wrong CA file, a member name the certificate does not list and a missing client
#      certificate are refused: exit 2, one paragraph, no rank
#      (and `mtrain env` asks the member over TLS);
#   3. auth enabled (etcdctl user add root / auth enable; --auth-token-ttl 1, so that the token
#      expires between two heartbeats and every one re-authenticates): two launchers as user mt,
#      one with the password from a file and one from MTRAIN_ETCD_PASSWORD, form and train;
#   4. a wrong password, and (over --rdzv-etcd-api gateway) a client certificate with a Common
#      Name (etcd's JSON gateway refuses those once auth is on), are refused: exit 2, one paragraph
#      each, no rank;
#   5. over gRPC (the default) that certificate alone is the user: two launchers form and train;
#   and, after 1, without --rdzv-etcd-cacert a CA found only in OpenSSL's hashed directory
#   (SSL_CERT_DIR) is trusted over both APIs.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/elastic_lib.sh"
. "$(dirname "$0")/etcd_lib.sh"
command -v openssl >/dev/null || skip "no openssl CLI (apt-get install openssl)"
export MTRAIN_RDZV_TOKEN=etcd-tls-0123456789abcdef

# Certificates: a CA, the member's (IP SAN 127.0.0.1; clientAuth too, as etcd's gateway also
# dials the member with it), a client's without a Common Name (with auth enabled etcd's JSON
# gateway refuses a client certificate that has one: it cannot pass it on as the user), and an
# unrelated CA. EC keys: quick to make.
PKI=$WORK/pki
mkdir -p "$PKI"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$PKI/$1.key" 2>/dev/null; }
ca() { key "$1" && openssl req -x509 -new -key "$PKI/$1.key" -subj "/CN=$1" -days 2 -out "$PKI/$1.crt" 2>/dev/null; }
signed() {  # NAME SUBJECT EXTENSIONS
  key "$1" && openssl req -new -key "$PKI/$1.key" -subj "$2" -out "$PKI/$1.csr" 2>/dev/null \
    && openssl x509 -req -in "$PKI/$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial -days 2 \
      -extfile <(printf '%s\n' "$3") -out "$PKI/$1.crt" 2>/dev/null
}
ca ca && ca other-ca \
  && signed server /CN=127.0.0.1 $'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth' \
  && signed client /O=mtrain-nodes 'extendedKeyUsage=clientAuth' && signed cn-client /CN=mt 'extendedKeyUsage=clientAuth' || { fail "openssl could not make the certificates"; finish; }

CLIENT=127.0.0.1:$(free_port)
PEER=127.0.0.1:$(free_port)
etcd --name t0 --data-dir "$WORK/etcd-tls" --listen-client-urls "https://$CLIENT" --advertise-client-urls "https://$CLIENT" \
  --listen-peer-urls "http://$PEER" --initial-advertise-peer-urls "http://$PEER" --initial-cluster "t0=http://$PEER" \
  --cert-file "$PKI/server.crt" --key-file "$PKI/server.key" --client-cert-auth --trusted-ca-file "$PKI/ca.crt" \
  --auth-token "simple" --auth-token-ttl 1 >"$WORK/etcd-tls.log" 2>&1 &
etcd_pids[0]=$!
ETCD_ENDPOINTS=$CLIENT
ctl() { etcdctl --endpoints "https://$CLIENT" --cacert "$PKI/ca.crt" --cert "$PKI/client.crt" --key "$PKI/client.key" "$@"; }
for _ in $(seq 100); do ctl endpoint health >/dev/null 2>&1 && break; sleep 0.2; done
ctl endpoint health >/dev/null 2>&1 || { fail "the TLS etcd did not become healthy: $(tail -3 "$WORK/etcd-tls.log")"; finish; }

tls=(--rdzv-endpoint "https://$CLIENT" --rdzv-etcd-cacert "$PKI/ca.crt" --rdzv-etcd-cert "$PKI/client.crt"
     --rdzv-etcd-key "$PKI/client.key")
STEPS=4
job=("${tiny_job[@]}" --max-steps $STEPS --global-batch-size 4)
# start_node TAG K [args]: a launcher in the background training the tiny GPT as node nK.
start_node() {
  local tag=$1 k=$2; shift 2
  setsid timeout -k 5 120 "$MTRAIN" launch --rdzv-backend etcd --nnodes 2 --rdzv-id "$tag" --node-name "n$k" \
    --rdzv-last-call 1 --node-timeout 10 --rdzv-timeout 60 --master-port "$(free_port)" --nproc-per-node 1 "$@" \
    "${job[@]}" --work-dir "$WORK/$tag" >"$WORK/$tag.node$k" 2>&1 &
  eval "agent$k=\$!"
}
summary_of() { find "$1" -name summary.json | head -1; }
# trained TAG WHAT: both launchers exited 0 and the run finished its steps at world size 2.
trained() {
  wait "$agent0"; local rc0=$?; wait "$agent1"; local rc1=$?
  local s; s=$(summary_of "$WORK/$1")
  if [ "$rc0 $rc1" = "0 0" ] && [ -n "$s" ] && "$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["steps"]==int(sys.argv[2]) and s["world_size"]==2, s' "$s" "$STEPS"; then
    ok "$2: two launchers formed and trained $STEPS steps at world size 2"
  else
    fail "$2: exit $rc0 $rc1"; for f in "$WORK/$1".node*; do sed "s#^#    $(basename "$f") | #" "$f"; done
  fi
}
# refused_launch TEXT ARGS...: one launcher exits 2 with one paragraph holding TEXT, before its rank.
refused_launch() {
  local text=$1; shift
  rm -f "$WORK/rank-started"
  timeout -k 5 60 "$MTRAIN" launch --rdzv-backend etcd --nnodes 2 --rdzv-id refused --rdzv-timeout 20 --node-timeout 10 \
    --master-port "$(free_port)" --nproc-per-node 1 "$@" -- bash -c 'touch "$0"' "$WORK/rank-started" >"$WORK/refused.out" 2>&1
  local rc=$? paragraphs
  paragraphs=$(grep -c '^error: ' "$WORK/refused.out")
  if [ "$rc" = 2 ] && [ "$paragraphs" = 1 ] && grep -q "^error: .*$text" "$WORK/refused.out" && [ ! -e "$WORK/rank-started" ]; then
    ok "refused before any rank (exit 2): $(grep '^error: ' "$WORK/refused.out")"
  else
    fail "expected exit 2 and one paragraph with '$text' and no rank; got exit $rc, $paragraphs paragraph(s)"
    sed 's/^/    | /' "$WORK/refused.out"
  fi
}

# 1. mutual TLS.
t0=$(now)
start_node tls 0 "${tls[@]}"
wait_for "$WORK/tls.node0" "nodes joined" 20 || fail "n0 did not join over TLS"
start_node tls 1 "${tls[@]}"
trained tls "mutual TLS"
echo "    (the TLS job took $(echo "$(now) - $t0" | bc) s)"

# mtrain env asks the member over TLS with the certificates the launch would use (its settings
# from the environment here).
envj=$(MTRAIN_RDZV_ETCD_CACERT="$PKI/ca.crt" MTRAIN_RDZV_ETCD_CERT="$PKI/client.crt" MTRAIN_RDZV_ETCD_KEY="$PKI/client.key" \
  "$MTRAIN" env --rdzv-backend etcd --rdzv-endpoint "https://$CLIENT" --format json)
got=$(echo "$envj" | "$PY" -c 'import json,sys; r=json.load(sys.stdin)["rendezvous"]; print(r["answered"], r["members"][0].get("etcdserver") or r["members"][0].get("error"))')
[ "$got" = "1 $(etcd --version | sed -n 's/^etcd Version: //p')" ] && ok "mtrain env: the TLS member answers ($got)" || fail "mtrain env over TLS: $got"

# Without --rdzv-etcd-cacert the member's certificate is checked against the system's CAs where
# OpenSSL finds them: here the CA is only in a hashed directory (SSL_CERT_DIR, as `openssl
# rehash` links it) and SSL_CERT_FILE is a file without it. Both APIs find it (gRPC read only
# the file before: "not trusted").
mkdir -p "$PKI/hashed" && cp "$PKI/ca.crt" "$PKI/hashed/" && openssl rehash "$PKI/hashed" 2>/dev/null
for api in grpc gateway; do
  got=$(SSL_CERT_FILE="$PKI/other-ca.crt" SSL_CERT_DIR="$PKI/hashed" MTRAIN_RDZV_ETCD_API=$api \
    MTRAIN_RDZV_ETCD_CERT="$PKI/client.crt" MTRAIN_RDZV_ETCD_KEY="$PKI/client.key" \
    "$MTRAIN" env --rdzv-backend etcd --rdzv-endpoint "https://$CLIENT" --format json \
    | "$PY" -c 'import json,sys; r=json.load(sys.stdin)["rendezvous"]; print(r["answered"], r["members"][0].get("etcdserver") or r["members"][0].get("error"))')
  [ "${got%% *}" = 1 ] && ok "the CA in SSL_CERT_DIR only, over $api: the member answers ($got)" \
    || fail "the CA in SSL_CERT_DIR only, over $api: $got"
done

# 2. a wrong CA; no client certificate.
refused_launch "is not trusted: its server certificate failed the check against --rdzv-etcd-cacert '$PKI/other-ca.crt'" \
  --rdzv-endpoint "https://$CLIENT" --rdzv-etcd-cacert "$PKI/other-ca.crt" --rdzv-etcd-cert "$PKI/client.crt" \
  --rdzv-etcd-key "$PKI/client.key"
refused_launch "asks every client for a certificate" --rdzv-endpoint "https://$CLIENT" --rdzv-etcd-cacert "$PKI/ca.crt"
# The right CA, but the member named by a name its certificate does not list (only IP:127.0.0.1):
# the name is checked, not only the signature.
refused_launch "is not trusted: .*(hostname mismatch)" --rdzv-endpoint "https://localhost:${CLIENT##*:}" \
  --rdzv-etcd-cacert "$PKI/ca.crt" --rdzv-etcd-cert "$PKI/client.crt" --rdzv-etcd-key "$PKI/client.key"

# 3. auth: root and a user mt allowed the job's prefix.
ctl user add root:root-pw >/dev/null && ctl role add root >/dev/null && ctl user grant-role root root >/dev/null \
  && ctl role add mt >/dev/null && ctl user add mt:mt-pw >/dev/null \
  && ctl role grant-permission mt --prefix=true readwrite /mtrain/ >/dev/null && ctl user grant-role mt mt >/dev/null \
  && ctl auth enable >/dev/null || fail "could not enable etcd auth"
printf 'mt-pw\n' >"$WORK/mt.password"
chmod 600 "$WORK/mt.password"
t0=$(now)
start_node auth 0 "${tls[@]}" --rdzv-etcd-user mt --rdzv-etcd-password-file "$WORK/mt.password"
wait_for "$WORK/auth.node0" "nodes joined" 20 || fail "n0 did not join as user mt"
MTRAIN_ETCD_PASSWORD=mt-pw start_node auth 1 "${tls[@]}" --rdzv-etcd-user mt
trained auth "etcd auth as user mt (token renewed as it expires)"
echo "    (the auth job took $(echo "$(now) - $t0" | bc) s; etcd refused $(grep -c "invalid auth token" "$WORK/etcd-tls.log") expired token(s) the agents then renewed)"

# 4. a wrong password.
MTRAIN_ETCD_PASSWORD=not-the-password refused_launch "refused user 'mt' with the password from MTRAIN_ETCD_PASSWORD" \
  "${tls[@]}" --rdzv-etcd-user mt
# A client certificate with a Common Name, which etcd's JSON gateway refuses once auth is on
# (--rdzv-etcd-api gateway: it cannot pass the name on as the user).
MTRAIN_ETCD_PASSWORD=mt-pw refused_launch "refuses the client certificate --rdzv-etcd-cert '$PKI/cn-client.crt' because it has a Common Name" \
  --rdzv-etcd-api gateway --rdzv-endpoint "https://$CLIENT" --rdzv-etcd-cacert "$PKI/ca.crt" \
  --rdzv-etcd-cert "$PKI/cn-client.crt" --rdzv-etcd-key "$PKI/cn-client.key" --rdzv-etcd-user mt

# 5. etcd's gRPC API (the default) takes that certificate's Common Name as the user, as etcdctl
# does: no user, no password, the certificate alone.
cn=(--rdzv-endpoint "https://$CLIENT" --rdzv-etcd-cacert "$PKI/ca.crt" --rdzv-etcd-cert "$PKI/cn-client.crt"
    --rdzv-etcd-key "$PKI/cn-client.key")
start_node cn 0 "${cn[@]}"
wait_for "$WORK/cn.node0" "nodes joined" 20 || fail "n0 did not join with the certificate's name as the user"
start_node cn 1 "${cn[@]}"
trained cn "the client certificate's Common Name (mt) as the etcd user, over gRPC"
[ "$(ctl --user root:root-pw get --prefix --keys-only /mtrain/ | grep -c .)" = 0 ] && ok "no key of the jobs is left in etcd" \
  || fail "keys left: $(ctl --user root:root-pw get --prefix --keys-only /mtrain/)"
finish
