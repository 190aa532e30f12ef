package bus

import (
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
)

// Credentials authenticate to NATS: a user and password, or an nkey whose
// seed is in a file. The embedded server requires them when they are set;
// clients send them.
type Credentials struct {
	User     string
	Password string
	// NKeySeedFile holds a user nkey seed ("SU..."), as `nk -gen user`
	// writes it.
	NKeySeedFile string
}

// IsZero reports whether no credentials are set.
func (c Credentials) IsZero() bool { return c == Credentials{} }

// CredentialsFromEnv reads EXOCORTEX_NATS_USER and EXOCORTEX_NATS_PASSWORD,
// or EXOCORTEX_NATS_NKEY.
func CredentialsFromEnv() Credentials {
	return Credentials{User: os.Getenv(EnvNATSUser), Password: os.Getenv(EnvNATSPassword), NKeySeedFile: os.Getenv(EnvNATSNKey)}
}

// ErrNoCredentials is an embedded server listening beyond loopback
// without credentials.
var ErrNoCredentials = errors.New("the NATS server listens beyond loopback without credentials: set " +
	EnvNATSUser + " and " + EnvNATSPassword + ", or " + EnvNATSNKey + " (a file with an nkey user seed), or listen on 127.0.0.1")

// Validate checks that the credentials are complete and usable.
func (c Credentials) Validate() error {
	var errs []error
	if (c.User == "") != (c.Password == "") {
		errs = append(errs, fmt.Errorf("NATS credentials: give both %s and %s", EnvNATSUser, EnvNATSPassword))
	}
	if c.NKeySeedFile != "" {
		if c.User != "" {
			errs = append(errs, fmt.Errorf("NATS credentials: give a user and password or an nkey (%s), not both", EnvNATSNKey))
		}
		if _, err := c.nkeyPublic(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c Credentials) nkeyPublic() (string, error) {
	raw, err := os.ReadFile(c.NKeySeedFile)
	if err != nil {
		return "", fmt.Errorf("NATS nkey seed (%s): %w", EnvNATSNKey, err)
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

// serverAuth sets the embedded server's authentication from c.
func (c Credentials) serverAuth(opts *server.Options) error {
	switch {
	case c.NKeySeedFile != "":
		pub, err := c.nkeyPublic()
		if err != nil {
			return err
		}
		opts.Nkeys = []*server.NkeyUser{{Nkey: pub}}
	case c.User != "":
		opts.Username, opts.Password = c.User, c.Password
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
	case c.User != "":
		return []nats.Option{nats.UserInfo(c.User, c.Password)}, nil
	}
	return nil, nil
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
