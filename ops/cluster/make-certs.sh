#!/usr/bin/env bash
# Makes the certificates of Exocortex's NATS cluster with openssl: a CA, and
# for each node a certificate the CA signs, good for its client port (TLS)
# and its routes (mutual TLS), naming the node, localhost and 127.0.0.1 and
# any extra names or addresses given.
#
#   ops/cluster/make-certs.sh                        # nats-1 nats-2 nats-3 in ops/cluster/certs
#   ops/cluster/make-certs.sh nats-1=10.0.0.11,nats-1.lan nats-2=10.0.0.12 nats-3=10.0.0.13
#   CERTS_DIR=/etc/exocortex/certs ops/cluster/make-certs.sh
#
# A node is NAME or NAME=EXTRA,EXTRA,... where each extra is a DNS name or an
# IP address that clients or the other nodes use to reach it. Writes into
# CERTS_DIR (default: ops/cluster/certs, which git ignores):
#   ca.pem, ca-key.pem           the CA (keep ca-key.pem off the nodes)
#   NAME.pem, NAME-key.pem       each node's certificate and key
# Every Exocortex process trusts ca.pem (EXOCORTEX_NATS_TLS_CA); each node
# gets ca.pem, NAME.pem and NAME-key.pem (NATS_TLS_CA, _CERT, _KEY).
#
# Idempotent: files already there are kept and checked (signed by this CA,
# not expiring within 30 days, naming what was asked); to renew one, delete
# it and run again (a node certificate that lacks a name now asked for
# stops the script with that advice). Keys are written with mode 0600.
#
# Environment:
#   CERTS_DIR   where the files go
#   CA_DAYS     validity of a new CA (default 3650)
#   NODE_DAYS   validity of a new node certificate (default 825)
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
dir=${CERTS_DIR:-$here/certs}
ca_days=${CA_DAYS:-3650}
node_days=${NODE_DAYS:-825}
nodes=("$@")
if [[ ${#nodes[@]} -eq 0 ]]; then
	nodes=(nats-1 nats-2 nats-3)
fi

say() { echo "make-certs: $*"; }
fail() {
	echo "make-certs: $*" >&2
	exit 1
}

command -v openssl >/dev/null 2>&1 || fail "openssl is required but not installed (apt-get install openssl)"

umask 077
mkdir -p -- "$dir"
tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT

ca=$dir/ca.pem
ca_key=$dir/ca-key.pem

# check_fresh FILE WHAT: the certificate must not expire within 30 days.
check_fresh() {
	if ! openssl x509 -in "$1" -noout -checkend $((30 * 24 * 3600)) >/dev/null; then
		fail "$2 $1 expires within 30 days (or has expired): delete it and run again to renew it"
	fi
}

if [[ -s $ca ]]; then
	check_fresh "$ca" "the CA"
	if [[ -s $ca_key ]]; then
		say "kept the CA        $ca"
	else
		say "kept the CA        $ca (its key is not here: existing certificates are checked, new ones cannot be signed)"
	fi
elif [[ -e $ca_key ]]; then
	fail "found $ca_key without $ca: restore $ca, or delete $ca_key (and every node certificate) to start a new CA"
else
	openssl ecparam -name prime256v1 -genkey -noout -out "$tmp/ca-key.pem"
	cat >"$tmp/ca.cnf" <<-EOF
		[req]
		distinguished_name = dn
		x509_extensions = v3_ca
		prompt = no
		[dn]
		O = Exocortex
		CN = Exocortex NATS cluster CA
		[v3_ca]
		basicConstraints = critical, CA:true, pathlen:0
		keyUsage = critical, keyCertSign, cRLSign
		subjectKeyIdentifier = hash
	EOF
	openssl req -new -x509 -config "$tmp/ca.cnf" -key "$tmp/ca-key.pem" -sha256 -days "$ca_days" -out "$tmp/ca.pem"
	chmod 0644 -- "$tmp/ca.pem"
	mv -- "$tmp/ca-key.pem" "$ca_key"
	mv -- "$tmp/ca.pem" "$ca"
	say "made the CA        $ca (key $ca_key: keep it off the nodes)"
fi

for spec in "${nodes[@]}"; do
	name=${spec%%=*}
	extra=
	if [[ $spec == *=* ]]; then
		extra=${spec#*=}
	fi
	if [[ ! $name =~ ^[A-Za-z0-9][A-Za-z0-9.-]*$ ]]; then
		fail "node name '$name': use letters, digits, dots and dashes (a DNS name)"
	fi
	sans="DNS:$name,DNS:localhost,IP:127.0.0.1"
	IFS=, read -r -a extras <<<"$extra"
	for e in "${extras[@]}"; do
		[[ -z $e ]] && continue
		if [[ $e =~ ^[0-9.]+$ || $e == *:* ]]; then
			sans+=",IP:$e"
		else
			sans+=",DNS:$e"
		fi
	done
	cert=$dir/$name.pem
	key=$dir/$name-key.pem
	if [[ -s $cert && -s $key ]]; then
		if ! openssl verify -CAfile "$ca" "$cert" >/dev/null 2>&1; then
			fail "$cert is not signed by $ca: delete $cert and $key and run again"
		fi
		check_fresh "$cert" "the certificate of $name"
		missing=()
		IFS=, read -r -a wanted <<<"$sans"
		for w in "${wanted[@]}"; do
			if [[ $w == IP:* ]]; then
				check=(-checkip "${w#IP:}")
			else
				check=(-checkhost "${w#DNS:}")
			fi
			if openssl x509 -in "$cert" -noout "${check[@]}" | grep -q "NOT match"; then
				missing+=("$w")
			fi
		done
		if [[ ${#missing[@]} -gt 0 ]]; then
			fail "$cert does not name ${missing[*]}: delete $cert and $key and run again to reissue it"
		fi
		say "kept node $name    $cert ($sans)"
		continue
	elif [[ -e $cert || -e $key ]]; then
		fail "found only one of $cert and $key: delete it and run again"
	fi
	if [[ ! -s $ca_key ]]; then
		fail "cannot sign a certificate for $name: the CA's key $ca_key is not here (run this where the CA's key is kept)"
	fi
	openssl ecparam -name prime256v1 -genkey -noout -out "$tmp/$name-key.pem"
	cat >"$tmp/$name.cnf" <<-EOF
		[req]
		distinguished_name = dn
		prompt = no
		[dn]
		O = Exocortex
		CN = $name
	EOF
	openssl req -new -config "$tmp/$name.cnf" -key "$tmp/$name-key.pem" -out "$tmp/$name.csr"
	cat >"$tmp/$name.ext" <<-EOF
		basicConstraints = critical, CA:false
		keyUsage = critical, digitalSignature, keyEncipherment
		extendedKeyUsage = serverAuth, clientAuth
		subjectAltName = $sans
		subjectKeyIdentifier = hash
		authorityKeyIdentifier = keyid
	EOF
	openssl x509 -req -in "$tmp/$name.csr" -CA "$ca" -CAkey "$ca_key" -CAcreateserial -CAserial "$tmp/ca.srl" \
		-days "$node_days" -sha256 -extfile "$tmp/$name.ext" -out "$tmp/$name.pem" 2>/dev/null
	openssl verify -CAfile "$ca" "$tmp/$name.pem" >/dev/null
	chmod 0644 -- "$tmp/$name.pem"
	mv -- "$tmp/$name-key.pem" "$key"
	mv -- "$tmp/$name.pem" "$cert"
	say "made node $name    $cert ($sans)"
done

say "done in $dir: give each node ca.pem, NAME.pem and NAME-key.pem; give every Exocortex process ca.pem (EXOCORTEX_NATS_TLS_CA)"
