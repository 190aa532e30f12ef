package bus

import (
	"os"
	"path/filepath"
	"strings"
)

// URLFile is where a running system writes its NATS address.
func URLFile(dataDir string) string { return filepath.Join(dataDir, "nats.url") }

// NKeyFile is where the embedded server's credentials live: a user nkey
// seed that exocortex up writes on its first start (mode 0600) and every
// command given the same data directory sends.
func NKeyFile(dataDir string) string { return filepath.Join(dataDir, "nats.nk") }

// TLSCertFile is a copy of the certificate the embedded server serves
// (written while it runs with TLS): commands on the same data directory trust
// exactly that certificate.
func TLSCertFile(dataDir string) string { return filepath.Join(dataDir, "nats-cert.pem") }

// ClientCredentials are the NATS credentials a command sends: explicit ones
// (flags), else the environment's (EXOCORTEX_NATS_USER and _PASSWORD,
// EXOCORTEX_NATS_NKEY, EXOCORTEX_NATS_CREDS), else the data directory's
// nkey seed when it has one.
func ClientCredentials(dataDir string, explicit Credentials) Credentials {
	if !explicit.IsZero() {
		return explicit
	}
	if env := CredentialsFromEnv(); !env.IsZero() {
		return env
	}
	if dataDir != "" {
		if _, err := os.Stat(NKeyFile(dataDir)); err == nil {
			return Credentials{NKeySeedFile: NKeyFile(dataDir)}
		}
	}
	return Credentials{}
}

// ClientTLS is what a command trusts of url's certificate: explicit CA
// (flags or EXOCORTEX_NATS_TLS_CA), else, for the server of the system that
// runs on dataDir, the certificate it serves.
func ClientTLS(dataDir, url string, explicit TLSFiles) TLSFiles {
	t := TLSFiles{CA: explicit.CA}
	if t.CA == "" {
		t.CA = os.Getenv(EnvNATSTLSCA)
	}
	if t.CA != "" || dataDir == "" || url == "" {
		return t
	}
	raw, err := os.ReadFile(URLFile(dataDir))
	if err != nil || strings.TrimSpace(string(raw)) != url {
		return t
	}
	if _, err := os.Stat(TLSCertFile(dataDir)); err == nil {
		t.Pin = TLSCertFile(dataDir)
	}
	return t
}
