package siyuan

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// Run keeps the index in step with the kernel until ctx ends. It checks
// the token (a refused token ends Run with ErrAuth: retrying cannot help),
// connects to /ws, reconciles after every (re)connect and every
// Config.Reconcile, applies the events, and reconnects with backoff.
func (s *Source) Run(ctx context.Context) error {
	backoff := 500 * time.Millisecond
	wait := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
			backoff = min(2*backoff, 30*time.Second)
			return true
		}
	}
	s.setStatus(func(x *Status) { x.Stopped = false })
	// What an earlier run indexed counts until the first reconciliation.
	if n, err := s.remembered(ctx); err == nil {
		s.setStatus(func(x *Status) { x.DocsSynced = n })
	}
	for ctx.Err() == nil {
		// /api/system/version is not checked against the token: lsNotebooks is.
		if err := s.client.Check(ctx); err != nil {
			if errors.Is(err, ErrAuth) {
				return s.refused(err)
			}
			s.disconnected(err, backoff)
			if !wait() {
				break
			}
			continue
		}
		conn, err := s.dial(ctx)
		if err != nil {
			s.disconnected(err, backoff)
			if !wait() {
				break
			}
			continue
		}
		backoff = 500 * time.Millisecond
		s.setStatus(func(x *Status) { x.Connected, x.Error = true, "" })
		s.log.Info().Msg("siyuan: connected to /ws")
		err = s.session(ctx, conn)
		_ = conn.CloseNow()
		if errors.Is(err, ErrAuth) {
			return s.refused(err) // the token changed while connected
		}
		if ctx.Err() != nil {
			break
		}
		s.disconnected(err, backoff)
		if !wait() {
			break
		}
	}
	s.setStatus(func(x *Status) { x.Connected, x.Stopped = false, true })
	return nil
}

// refused records a refused token in the status and the log; the bridge
// then stops with err.
func (s *Source) refused(err error) error {
	s.setStatus(func(x *Status) { x.Connected, x.Error, x.Stopped = false, err.Error(), true })
	s.log.Error().Err(err).Msg("siyuan: the kernel refused the API token; the bridge stops")
	return err
}

func (s *Source) disconnected(err error, retry time.Duration) {
	s.setStatus(func(x *Status) { x.Connected, x.Error = false, err.Error() })
	s.log.Warn().Err(err).Dur("retry_in", retry).Msg("siyuan: kernel unreachable; reconnecting")
}

// session reads one /ws connection's events until it fails.
func (s *Source) session(ctx context.Context, conn *websocket.Conn) error {
	readErr := make(chan error, 1)
	go func() {
		for {
			_, raw, err := conn.Read(ctx)
			if err != nil {
				readErr <- fmt.Errorf("siyuan /ws: %w", err)
				return
			}
			var ev Event
			if json.Unmarshal(raw, &ev) != nil || ev.Cmd == "" {
				continue
			}
			select {
			case s.inbox <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	// Whatever changed while disconnected is found by a reconciliation.
	if _, err := s.Reconcile(ctx, nil); err != nil {
		if errors.Is(err, ErrAuth) || ctx.Err() != nil {
			return err
		}
		s.log.Warn().Err(err).Msg("siyuan: reconciliation failed")
	}
	tick := time.NewTicker(s.cfg.Reconcile)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-readErr:
			return err
		case ev := <-s.inbox:
			if err := s.Handle(ctx, ev); err != nil {
				s.log.Warn().Err(err).Str("cmd", ev.Cmd).Msg("siyuan: event not applied; the next reconciliation catches up")
			}
		case <-s.kick:
			if _, err := s.Flush(ctx); err != nil {
				s.log.Warn().Err(err).Msg("siyuan: changed documents not read yet")
			}
		case <-tick.C:
			if _, err := s.Reconcile(ctx, nil); err != nil {
				if errors.Is(err, ErrAuth) {
					return err
				}
				s.log.Warn().Err(err).Msg("siyuan: reconciliation failed")
			}
		}
	}
}

// dial opens the kernel's /ws as a main window would.
func (s *Source) dial(ctx context.Context) (*websocket.Conn, error) {
	u, err := url.Parse(s.cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("siyuan url %q: %w", s.cfg.URL, err)
	}
	u.Scheme = strings.Replace(u.Scheme, "http", "ws", 1)
	u.Path = strings.TrimRight(u.Path, "/") + "/ws"
	var id [6]byte
	_, _ = rand.Read(id[:])
	u.RawQuery = url.Values{"app": {"exocortex"}, "id": {"exocortex-" + hex.EncodeToString(id[:])}, "type": {"main"}}.Encode()
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(dctx, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("siyuan /ws: %w", err)
	}
	conn.SetReadLimit(64 << 20) // a document create carries its whole tree
	return conn, nil
}

// Deliver queues an event as if it came from /ws (the plugin endpoint).
func (s *Source) Deliver(ctx context.Context, ev Event) error {
	select {
	case s.inbox <- ev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// remembered counts the documents the source has sent and not deleted.
func (s *Source) remembered(ctx context.Context) (int, error) {
	keys, err := s.state.Keys(ctx)
	n := 0
	for _, k := range keys {
		if strings.HasPrefix(k, statePrefix) {
			n++
		}
	}
	return n, err
}
