package bus

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
)

// Environment variables of NATS TLS.
const (
	EnvNATSTLSCert = "EXOCORTEX_NATS_TLS_CERT" // the embedded server's certificate (PEM)
	EnvNATSTLSKey  = "EXOCORTEX_NATS_TLS_KEY"  // its private key (PEM)
	EnvNATSTLSCA   = "EXOCORTEX_NATS_TLS_CA"   // clients: the CA that signed the server's certificate
)

// TLSFiles name the PEM files of NATS over TLS.
type TLSFiles struct {
	// Cert and Key are the embedded server's certificate (chain) and
	// private key: both or neither. With them the server speaks TLS only.
	Cert, Key string
	// CA makes a client trust the server certificates it signed (without
	// it, and without Pin, the system's roots).
	CA string
	// Pin makes a client trust exactly the certificate in this file,
	// whatever host it names: how a command reaches the `up` that wrote it.
	Pin string
}

// TLSFromEnv reads EXOCORTEX_NATS_TLS_CERT, _KEY and _CA.
func TLSFromEnv() TLSFiles {
	return TLSFiles{Cert: os.Getenv(EnvNATSTLSCert), Key: os.Getenv(EnvNATSTLSKey), CA: os.Getenv(EnvNATSTLSCA)}
}

// ServesTLS reports whether a server certificate is set.
func (t TLSFiles) ServesTLS() bool { return t.Cert != "" || t.Key != "" }

// ErrNoTLS is an embedded server listening beyond loopback without TLS.
var ErrNoTLS = errors.New("the NATS server listens beyond loopback without TLS: give --tls-cert FILE and --tls-key FILE (env " +
	EnvNATSTLSCert + ", " + EnvNATSTLSKey + "), or listen on 127.0.0.1")

// ErrRemoteWithoutTLS is an external NATS server beyond loopback that
// offers no TLS: a client would send its credentials and the notes in plain
// text, so it does not connect.
var ErrRemoteWithoutTLS = errors.New("the NATS server is beyond loopback and offers no TLS: Exocortex sends credentials and notes " +
	"to another machine over TLS only; give the server a certificate (ops/cluster/make-certs.sh makes a CA and one per node) and this " +
	"command the CA with --tls-ca FILE (env " + EnvNATSTLSCA + "), or reach the server on 127.0.0.1")

// BeyondLoopback reports whether any server of a comma-separated NATS URL
// list ("tls://nats-1:4222,tls://nats-2:4222"; the scheme may be left out)
// is not on this machine. A URL that does not parse counts as remote.
func BeyondLoopback(urls string) bool {
	for _, u := range strings.Split(urls, ",") {
		u = strings.TrimSpace(u)
		if u == "" {
			continue
		}
		if !strings.Contains(u, "://") {
			u = "nats://" + u
		}
		parsed, err := neturl.Parse(u)
		if err != nil {
			return true
		}
		host := parsed.Hostname()
		if host == "localhost" {
			continue
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return true
		}
	}
	return false
}

// serverConfig loads the server's certificate and key.
func (t TLSFiles) serverConfig() (*tls.Config, error) {
	if t.Cert == "" || t.Key == "" {
		return nil, fmt.Errorf("NATS TLS: give both the certificate (%s) and its key (%s)", EnvNATSTLSCert, EnvNATSTLSKey)
	}
	cert, err := tls.LoadX509KeyPair(t.Cert, t.Key)
	if err != nil {
		return nil, fmt.Errorf("NATS TLS certificate %s and key %s: %w", t.Cert, t.Key, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// clientOptions are the connection options that trust the server's
// certificate: Pin's exact certificate, else CA's, else the system's roots
// (a tls:// URL needs no option for those).
func (t TLSFiles) clientOptions() ([]nats.Option, error) {
	switch {
	case t.Pin != "":
		pinned, err := pinnedCert(t.Pin)
		if err != nil {
			return nil, err
		}
		return []nats.Option{nats.Secure(&tls.Config{
			MinVersion: tls.VersionTLS12,
			// The host name is not checked: the certificate is the very one
			// the server was given, compared byte for byte below.
			InsecureSkipVerify: true, //nolint:gosec
			VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
				if len(raw) == 0 || !bytes.Equal(raw[0], pinned) {
					return fmt.Errorf("the NATS server's certificate is not the one in %s", t.Pin)
				}
				return nil
			},
		})}, nil
	case t.CA != "":
		if _, err := os.Stat(t.CA); err != nil {
			return nil, fmt.Errorf("NATS TLS CA: %w", err)
		}
		return []nats.Option{nats.RootCAs(t.CA)}, nil
	}
	return nil, nil
}

// pinnedCert is the DER of the first certificate in a PEM file.
func pinnedCert(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("NATS TLS certificate: %w", err)
	}
	for {
		var b *pem.Block
		b, raw = pem.Decode(raw)
		if b == nil {
			return nil, fmt.Errorf("NATS TLS certificate %s: no PEM certificate in it", path)
		}
		if b.Type == "CERTIFICATE" {
			return b.Bytes, nil
		}
	}
}
