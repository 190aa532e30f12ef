package system

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/exocortex/exocortex/bus"
)

// openBus opens the bus of cfg: the embedded server, which admits the data
// directory's nkey (generated on first start) and any explicit credentials,
// or cfg.NATSURL with the credentials ClientCredentials finds.
func openBus(ctx context.Context, cfg Config, name string) (*bus.Bus, error) {
	opts := bus.Options{URL: cfg.NATSURL, Name: name, Log: cfg.Log}
	if cfg.NATSURL == "" {
		local, created, err := bus.EnsureNKeySeed(bus.NKeyFile(cfg.DataDir))
		if err != nil {
			return nil, fmt.Errorf("NATS credentials of %s: %w", cfg.DataDir, err)
		}
		if created {
			cfg.Log.Info().Str("file", local.NKeySeedFile).Msg("generated the NATS credentials (an nkey seed, mode 0600): commands given this data directory send them; give the file to workers on other machines with --nats-creds")
		}
		opts.Server = bus.ServerOptions{StoreDir: filepath.Join(cfg.DataDir, "nats"), Listen: cfg.Listen, MaxStore: cfg.MaxStore,
			Auth: []bus.Credentials{local}, TLS: bus.TLSFiles{Cert: cfg.TLS.Cert, Key: cfg.TLS.Key}}
		if explicit := bus.ClientCredentials("", cfg.Creds); !explicit.IsZero() {
			// Admitted besides the data directory's own.
			opts.Server.Auth = append(opts.Server.Auth, explicit)
		}
		// This process's own client pins the server's certificate (bus.Open).
		opts.Creds = local
	} else {
		opts.Creds = bus.ClientCredentials(cfg.DataDir, cfg.Creds)
		// The data directory's key goes to a server that asks for one.
		opts.CredsIfAsked = bus.ClientCredentials("", cfg.Creds).IsZero()
		opts.TLS = bus.ClientTLS(cfg.DataDir, cfg.NATSURL, cfg.TLS)
	}
	b, err := bus.Open(ctx, opts)
	if errors.Is(err, bus.ErrNotAuthorized) {
		return nil, fmt.Errorf("%w\n'exocortex up' keeps its NATS credentials in DATA/nats.nk (here %s, mode 0600): give this command --data on that "+
			"data directory, or the file with --nats-creds FILE (env %s; a NATS .creds file works too)", err, bus.NKeyFile(cfg.DataDir), bus.EnvNATSCreds)
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

// writeTLSCert copies the certificate the embedded server serves into the
// data directory, for the commands that reach it there; without TLS it
// removes an old copy.
func writeTLSCert(cfg Config) error {
	if cfg.TLS.Cert == "" {
		if err := os.Remove(bus.TLSCertFile(cfg.DataDir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", bus.TLSCertFile(cfg.DataDir), err)
		}
		return nil
	}
	raw, err := os.ReadFile(cfg.TLS.Cert)
	if err != nil {
		return fmt.Errorf("NATS TLS certificate: %w", err)
	}
	return writePrivate(bus.TLSCertFile(cfg.DataDir), raw)
}
