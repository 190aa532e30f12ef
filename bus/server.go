package bus

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// ServerOptions configures the embedded NATS server.
type ServerOptions struct {
	// StoreDir holds the JetStream file store.
	StoreDir string
	// Listen is host:port; port -1 picks a free port. Default 127.0.0.1:4222.
	Listen string
	// MaxPayload is the largest message accepted (default 8 MiB: a whole
	// document travels in one kb.doc.changed event).
	MaxPayload int32
	// Auth lists the credentials the server admits: a client must send one
	// of them. Empty admits every client, which only a loopback Listen may
	// (ErrNoCredentials).
	Auth []Credentials
	// TLS's Cert and Key make the server speak TLS only. A Listen beyond
	// loopback needs them as well as Auth (ErrNoTLS).
	TLS TLSFiles
	// MaxStore bounds JetStream's file store in bytes; 0 leaves the
	// server's own limit, 75% of the free space of StoreDir's volume.
	MaxStore int64
}

// DefaultMaxPayload is the embedded server's message size limit.
const DefaultMaxPayload = 8 << 20

// ErrPortTaken is returned by StartServer when its listen address is
// already in use by another process.
var ErrPortTaken = errors.New("port already in use")

// StartServer starts an embedded NATS server with JetStream and waits until it
// accepts connections, or ctx ends. A taken port fails at once.
func StartServer(ctx context.Context, o ServerOptions) (*server.Server, error) {
	o, tlsConfig, err := o.prepare()
	if err != nil {
		return nil, err
	}
	host, port, err := probeListen(o.Listen)
	if err != nil {
		return nil, err
	}
	// The store holds the notes' text: its owner's alone.
	if err := os.MkdirAll(o.StoreDir, 0o700); err != nil {
		return nil, fmt.Errorf("start nats: %w", err)
	}
	abs, err := filepath.Abs(o.StoreDir)
	if err != nil {
		return nil, fmt.Errorf("start nats: %w", err)
	}
	opts := &server.Options{
		ServerName: "exocortex",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   abs,
		MaxPayload: o.MaxPayload,
		// JetStreamMaxStore 0 is the server's default: 75% of free space.
		JetStreamMaxStore: o.MaxStore,
		NoSigs:            true,
		NoLog:             true,
		TLSConfig:         tlsConfig,
		TLSTimeout:        5,
	}
	if err := serverAuth(opts, o.Auth); err != nil {
		return nil, fmt.Errorf("start nats: %w", err)
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("start nats: %w", err)
	}
	go s.Start()
	if err := waitReady(ctx, s, o.Listen, abs); err != nil {
		s.Shutdown()
		return nil, err
	}
	return s, nil
}

// prepare checks the options and fills in their defaults: a server off
// the loopback needs credentials and TLS. It returns the TLS config to
// serve with (nil: none).
func (o ServerOptions) prepare() (ServerOptions, *tls.Config, error) {
	if o.StoreDir == "" {
		return o, nil, fmt.Errorf("start nats: store dir is empty")
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:4222"
	}
	for _, c := range o.Auth {
		if err := c.Validate(); err != nil {
			return o, nil, fmt.Errorf("start nats: %w", err)
		}
	}
	if !IsLoopbackListen(o.Listen) {
		var errs []error
		if len(o.Auth) == 0 {
			errs = append(errs, ErrNoCredentials)
		}
		if !o.TLS.ServesTLS() {
			errs = append(errs, ErrNoTLS)
		}
		if len(errs) > 0 {
			return o, nil, fmt.Errorf("start nats on %s: %w", o.Listen, errors.Join(errs...))
		}
	}
	var tlsConfig *tls.Config
	if o.TLS.ServesTLS() {
		var err error
		if tlsConfig, err = o.TLS.serverConfig(); err != nil {
			return o, nil, fmt.Errorf("start nats: %w", err)
		}
	}
	if o.MaxPayload == 0 {
		o.MaxPayload = DefaultMaxPayload
	}
	if o.MaxStore < 0 {
		return o, nil, fmt.Errorf("start nats: max store %d bytes is negative", o.MaxStore)
	}
	return o, tlsConfig, nil
}

// probeListen splits the listen address and, for a fixed port, tries it:
// the server would only log the failed listen and never become ready, so
// a port in use is reported at once (ErrPortTaken).
func probeListen(listen string) (host string, port int, err error) {
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("start nats: listen address %q: %w", listen, err)
	}
	port, err = strconv.Atoi(portStr)
	if err != nil {
		return "", 0, fmt.Errorf("start nats: listen port %q: %w", portStr, err)
	}
	if port > 0 {
		l, err := net.Listen("tcp", net.JoinHostPort(host, portStr))
		if errors.Is(err, syscall.EADDRINUSE) {
			return "", 0, fmt.Errorf("start nats on %s: %w (another exocortex up, or another NATS server?)", listen, ErrPortTaken)
		}
		if err != nil {
			return "", 0, fmt.Errorf("start nats: %w", err)
		}
		_ = l.Close()
	}
	return host, port, nil
}

// waitReady waits up to 30 seconds for the started server s to take
// connections (abs: its store directory, for the error).
func waitReady(ctx context.Context, s *server.Server, listen, abs string) error {
	deadline := time.Now().Add(30 * time.Second)
	for !s.ReadyForConnections(100 * time.Millisecond) {
		if ctx.Err() != nil {
			return fmt.Errorf("start nats on %s: %w", listen, ctx.Err())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("start nats on %s: not ready after 30s (store %s locked by another process?)", listen, abs)
		}
	}
	return nil
}
