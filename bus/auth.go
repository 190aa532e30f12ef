package bus

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// Environment variables of the NATS credentials.
const (
	EnvNATSUser     = "EXOCORTEX_NATS_USER"
	EnvNATSPassword = "EXOCORTEX_NATS_PASSWORD"
	EnvNATSNKey     = "EXOCORTEX_NATS_NKEY" // a file holding an nkey user seed (SU...)
	// EnvNATSCreds names a credentials file: an nkey user seed, or a NATS
	// .creds file (a user JWT and its seed) for an external server.
	EnvNATSCreds = "EXOCORTEX_NATS_CREDS"
)

// Credentials authenticate to NATS: a user and password, an nkey whose seed
// is in a file, or a NATS .creds file (decentralised JWT authentication of
// an external server). The embedded server admits the users and nkeys it is
// given; clients send them.
type Credentials struct {
	User     string
	Password string
	// NKeySeedFile holds a user nkey seed ("SU..."), as `nk -gen user`
	// writes it.
	NKeySeedFile string
	// CredsFile is a NATS .creds file (a user JWT and its nkey seed), as
	// `nsc generate creds` writes it: clients of an external server only.
	CredsFile string
}

// IsZero reports whether no credentials are set.
func (c Credentials) IsZero() bool { return c == Credentials{} }

// String names the credentials without their secret.
func (c Credentials) String() string {
	switch {
	case c.NKeySeedFile != "":
		return "the nkey seed in " + c.NKeySeedFile
	case c.CredsFile != "":
		return "the NATS credentials file " + c.CredsFile
	case c.User != "":
		return "user " + c.User + " and its password"
	}
	return "no credentials"
}

// CredentialsFromEnv reads EXOCORTEX_NATS_USER and EXOCORTEX_NATS_PASSWORD,
// or EXOCORTEX_NATS_NKEY, or EXOCORTEX_NATS_CREDS.
func CredentialsFromEnv() Credentials {
	c := Credentials{User: os.Getenv(EnvNATSUser), Password: os.Getenv(EnvNATSPassword), NKeySeedFile: os.Getenv(EnvNATSNKey)}
	if f := os.Getenv(EnvNATSCreds); f != "" && c.IsZero() {
		c, _ = CredentialsFromFile(f)
	}
	return c
}

// CredentialsFromFile reads which kind of credentials file path is: a NATS
// .creds file (it holds a user JWT) or an nkey user seed. A file that cannot
// be read is taken for a seed, so that Validate names it.
func CredentialsFromFile(path string) (Credentials, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Credentials{NKeySeedFile: path}, fmt.Errorf("NATS credentials %s: %w", path, err)
	}
	if strings.Contains(string(raw), "BEGIN NATS USER JWT") {
		return Credentials{CredsFile: path}, nil
	}
	return Credentials{NKeySeedFile: path}, nil
}

// ErrNoCredentials is an embedded server listening beyond loopback
// without credentials.
var ErrNoCredentials = errors.New("the NATS server listens beyond loopback without credentials: set " +
	EnvNATSUser + " and " + EnvNATSPassword + ", or " + EnvNATSNKey + " (a file with an nkey user seed), or listen on 127.0.0.1")

// ErrNotAuthorized is a NATS server that refused the credentials a client
// sent (or their absence).
var ErrNotAuthorized = errors.New("the NATS server turned the client away (missing or wrong credentials)")

// Validate checks that the credentials are complete and usable.
func (c Credentials) Validate() error {
	var errs []error
	if (c.User == "") != (c.Password == "") {
		errs = append(errs, fmt.Errorf("NATS credentials: give both %s and %s", EnvNATSUser, EnvNATSPassword))
	}
	n := 0
	for _, set := range []bool{c.User != "", c.NKeySeedFile != "", c.CredsFile != ""} {
		if set {
			n++
		}
	}
	if n > 1 {
		errs = append(errs, fmt.Errorf("NATS credentials: give one of a user and password, an nkey seed (%s) or a credentials file (%s)", EnvNATSNKey, EnvNATSCreds))
	}
	if c.NKeySeedFile != "" {
		if _, err := c.nkeyPublic(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.CredsFile != "" {
		if _, err := os.Stat(c.CredsFile); err != nil {
			errs = append(errs, fmt.Errorf("NATS credentials file: %w", err))
		}
	}
	return errors.Join(errs...)
}

func (c Credentials) nkeyPublic() (string, error) {
	raw, err := os.ReadFile(c.NKeySeedFile)
	if err != nil {
		return "", fmt.Errorf("NATS nkey seed: %w", err)
	}
	kp, err := nkeys.ParseDecoratedNKey(raw)
	if err != nil {
		kp, err = nkeys.FromSeed([]byte(strings.TrimSpace(string(raw))))
	}
	if err != nil {
		return "", fmt.Errorf("NATS nkey seed %s: %w", c.NKeySeedFile, err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return "", fmt.Errorf("NATS nkey seed %s: %w", c.NKeySeedFile, err)
	}
	if !strings.HasPrefix(pub, "U") {
		return "", fmt.Errorf("NATS nkey seed %s: want a user seed (SU...)", c.NKeySeedFile)
	}
	return pub, nil
}

// serverAuth makes the embedded server admit every one of creds (a client
// sends any one of them). No credentials leave it open.
func serverAuth(opts *server.Options, creds []Credentials) error {
	for _, c := range creds {
		switch {
		case c.NKeySeedFile != "":
			pub, err := c.nkeyPublic()
			if err != nil {
				return err
			}
			opts.Nkeys = append(opts.Nkeys, &server.NkeyUser{Nkey: pub})
		case c.CredsFile != "":
			return fmt.Errorf("NATS credentials file %s: a user JWT is for an external server in operator mode; the embedded server takes an nkey seed (%s) or a user and password", c.CredsFile, EnvNATSNKey)
		case c.User != "":
			opts.Users = append(opts.Users, &server.User{Username: c.User, Password: c.Password})
		}
	}
	return nil
}

// clientOptions are the connection options that send c.
func (c Credentials) clientOptions() ([]nats.Option, error) {
	switch {
	case c.NKeySeedFile != "":
		o, err := nats.NkeyOptionFromSeed(c.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("NATS nkey seed %s: %w", c.NKeySeedFile, err)
		}
		return []nats.Option{o}, nil
	case c.CredsFile != "":
		return []nats.Option{nats.UserCredentials(c.CredsFile)}, nil
	case c.User != "":
		return []nats.Option{nats.UserInfo(c.User, c.Password)}, nil
	}
	return nil, nil
}

// EnsureNKeySeed returns the user nkey seed kept in path, writing a new one
// (mode 0600) when there is none. created reports a new seed. An nkey is a
// key pair: the server keeps only the public key, and a client proves it
// holds the seed by signing the server's nonce, so the secret never crosses
// the wire.
func EnsureNKeySeed(path string) (c Credentials, created bool, err error) {
	c = Credentials{NKeySeedFile: path}
	if _, err := os.Stat(path); err == nil {
		if _, err := c.nkeyPublic(); err != nil {
			return c, false, err
		}
		return c, false, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return c, false, fmt.Errorf("NATS nkey seed: %w", err)
	}
	kp, err := nkeys.CreatePair(nkeys.PrefixByteUser)
	if err != nil {
		return c, false, fmt.Errorf("generate NATS nkey: %w", err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return c, false, fmt.Errorf("generate NATS nkey: %w", err)
	}
	// Write under a temporary name and link it in place: a concurrent
	// starter either wins or reads the complete winner.
	tmp := fmt.Sprintf("%s.%x.tmp", path, randomBytes(6))
	if err := os.WriteFile(tmp, append(seed, '\n'), 0o600); err != nil {
		return c, false, fmt.Errorf("write NATS nkey seed: %w", err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, os.ErrExist) {
			_, err := c.nkeyPublic()
			return c, false, err
		}
		return c, false, fmt.Errorf("write NATS nkey seed %s: %w", path, err)
	}
	return c, true, nil
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// IsLoopbackListen reports whether a host:port only listens on this machine.
func IsLoopbackListen(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
