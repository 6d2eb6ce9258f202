# Sourced by start.sh and capture-openapi.sh: the certificates of a local control plane, as
# kwokctl makes them: one CA, and one admin certificate (system:masters) that is also the
# serving certificate of the API server.
#
#   make_pki DIR CA_NAME DAYS   writes DIR/ca.{crt,key} and DIR/admin.{crt,key}
make_pki() {
  local pki=$1 ca_name=$2 days=$3
  mkdir -p "$pki"
  openssl req -x509 -newkey rsa:2048 -nodes -days "$days" -subj "/CN=$ca_name" \
    -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/O=system:masters/CN=kubernetes-admin" \
    -keyout "$pki/admin.key" -out "$pki/admin.csr" 2>/dev/null
  cat > "$pki/ext.cnf" <<EXT
subjectAltName=DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.96.0.1
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
EXT
  openssl x509 -req -in "$pki/admin.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days "$days" -extfile "$pki/ext.cnf" -out "$pki/admin.crt" 2>/dev/null
}
