package bus

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/schemas"
)

// Header names the bus sets on messages.
const (
	HeaderTraceID      = "Exo-Trace-Id"
	HeaderDLQReason    = "Exo-Dlq-Reason"
	HeaderDLQStage     = "Exo-Dlq-Stage"
	HeaderDLQSubject   = "Exo-Dlq-Subject"
	HeaderDLQDelivered = "Exo-Dlq-Delivered"
	HeaderDLQStream    = "Exo-Dlq-Stream"
	HeaderDLQSeq       = "Exo-Dlq-Seq"
	HeaderDLQTime      = "Exo-Dlq-Time"
	// HeaderDLQBody names the KB_DLQ_BODIES object that keeps the body of a
	// dead letter whose message body was an object (see payload.go).
	HeaderDLQBody = "Exo-Dlq-Body"
	// HeaderReplayStage marks a replayed dead letter with the one stage
	// that should handle it again: the other stages that read the same
	// subject already did (and would dead-letter it a second time).
	HeaderReplayStage = "Exo-Replay-Stage"
)

// Options says how to reach NATS.
type Options struct {
	// URL of an external NATS server with JetStream; empty starts an embedded one.
	URL string
	// Server configures the embedded server when URL is empty.
	Server ServerOptions
	// Name is the client connection name.
	Name string
	// Creds are sent to the server (and admitted by the embedded one, besides
	// Server.Auth); zero means CredentialsFromEnv().
	Creds Credentials
	// TLS says which server certificate the client trusts (CA or Pin); a
	// client of the embedded server with TLS pins the server's own
	// certificate.
	TLS TLSFiles
	// CredsIfAsked sends an nkey in Creds only to a server that asks for
	// credentials: a server without authentication admits the client
	// without them (nats.go would refuse to connect). For credentials
	// found rather than given, such as a data directory's.
	CredsIfAsked bool
	// DiskGuard tunes the watch over the embedded server's disk (see
	// disk.go).
	DiskGuard DiskGuardOptions
	Log       zerolog.Logger
}

// Bus is a connection to NATS JetStream, and the embedded server when it owns one.
type Bus struct {
	NC     *nats.Conn
	JS     jetstream.JetStream
	Server *server.Server // nil when connected to an external server
	Log    zerolog.Logger

	// guard watches the embedded server's disk (nil without one); disk
	// caches the state another process's guard reported.
	guard *diskGuard
	disk  diskView

	// replies are the reply subscriptions, one per subject (replies.go).
	repliesMu sync.Mutex
	replies   map[string]*replyRouter
}

// Open connects to opts.URL or starts the embedded server and connects to it.
func Open(ctx context.Context, opts Options) (*Bus, error) {
	b := &Bus{Log: opts.Log}
	if opts.Creds.IsZero() {
		opts.Creds = CredentialsFromEnv()
	}
	if !opts.Creds.IsZero() && !slices.Contains(opts.Server.Auth, opts.Creds) {
		opts.Server.Auth = append(slices.Clone(opts.Server.Auth), opts.Creds)
	}
	if opts.URL == "" && opts.Server.TLS.ServesTLS() && opts.TLS.CA == "" && opts.TLS.Pin == "" {
		opts.TLS.Pin = opts.Server.TLS.Cert
	}
	connOpts, err := opts.Creds.clientOptions()
	if err != nil {
		return nil, err
	}
	tlsOpts, err := opts.TLS.clientOptions()
	if err != nil {
		return nil, err
	}
	if opts.URL != "" && BeyondLoopback(opts.URL) {
		// TLS beyond loopback: a server that offers none is refused
		// before the credentials are sent (nats.ErrSecureConnWanted).
		tlsOpts = append([]nats.Option{nats.Secure()}, tlsOpts...)
	}
	connOpts = append(connOpts, tlsOpts...)
	url := opts.URL
	if url == "" {
		s, err := StartServer(ctx, opts.Server)
		if err != nil {
			return nil, err
		}
		b.Server = s
		url = s.ClientURL()
	}
	name := opts.Name
	if name == "" {
		name = "exocortex"
	}
	base := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500 * time.Millisecond),
		nats.Timeout(5 * time.Second),
	}
	nc, err := nats.Connect(url, append(slices.Clone(base), connOpts...)...)
	if errors.Is(err, nats.ErrNkeysNotSupported) && opts.CredsIfAsked {
		nc, err = nats.Connect(url, append(base, tlsOpts...)...)
		opts.Creds = Credentials{}
	}
	if errors.Is(err, nats.ErrAuthorization) {
		b.shutdownServer()
		return nil, fmt.Errorf("connect to nats %s with %s: %w: %w (set %s and %s, or %s, or %s, as the server has them)",
			url, opts.Creds, ErrNotAuthorized, err, EnvNATSUser, EnvNATSPassword, EnvNATSNKey, EnvNATSCreds)
	}
	if errors.Is(err, nats.ErrSecureConnWanted) {
		b.shutdownServer()
		return nil, fmt.Errorf("connect to nats %s: %w: %w", url, ErrRemoteWithoutTLS, err)
	}
	if err != nil {
		b.shutdownServer()
		return nil, fmt.Errorf("connect to nats %s: %w", url, err)
	}
	b.NC = nc
	nc.SetErrorHandler(b.asyncError)
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(10*time.Second), jetstream.WithPublishAsyncTimeout(publishAckTimeout))
	if err != nil {
		nc.Close()
		b.shutdownServer()
		return nil, fmt.Errorf("jetstream on %s: %w", url, err)
	}
	b.JS = js
	if b.Server != nil {
		b.guard = startDiskGuard(b, opts.Server.StoreDir, opts.DiskGuard)
	}
	return b, nil
}

// URL is the address other processes use to reach this bus.
func (b *Bus) URL() string { return b.NC.ConnectedUrl() }

// Close drains the connection and stops the embedded server, if any.
func (b *Bus) Close() {
	if b.guard != nil {
		b.guard.close()
	}
	b.repliesMu.Lock()
	for _, r := range b.replies {
		untrackSub(r.sub)
	}
	b.repliesMu.Unlock()
	if b.NC != nil {
		_ = b.NC.Drain()
		deadline := time.Now().Add(5 * time.Second)
		for b.NC.IsDraining() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		b.NC.Close()
	}
	b.shutdownServer()
}

func (b *Bus) shutdownServer() {
	if b.Server != nil {
		b.Server.Shutdown()
		b.Server.WaitForShutdown()
	}
}

// Publish stamps ev (type, id, time, trace id), marshals it and publishes it
// on its registered subject with Nats-Msg-Id = ev.MsgID(), so a republish
// after a crash is dropped by JetStream's duplicate window. A body larger than
// the server's max payload travels through the KB_PAYLOADS object store (see
// payload.go) when js is a full JetStream. A publish that gets no answer
// while a NATS cluster fails over is sent again (see FailoverBudget). It
// returns the ack.
func Publish(ctx context.Context, js jetstream.Publisher, ev schemas.Event, traceID string) (*jetstream.PubAck, error) {
	msg, err := eventMsg(ev, traceID)
	if err != nil {
		return nil, err
	}
	if err := offload(ctx, js, msg, *ev.Env(), ev.MsgID()); err != nil {
		return nil, err
	}
	// Sent again while a cluster fails over: the message id makes a second
	// copy of one that did arrive a duplicate, which JetStream drops.
	ack, err := retryFailover(ctx, "publish "+ev.MsgID(), func() (*jetstream.PubAck, error) {
		return js.PublishMsg(ctx, msg, jetstream.WithMsgID(ev.MsgID()))
	})
	if err != nil {
		return nil, fmt.Errorf("publish %s %s: %w", msg.Subject, ev.MsgID(), err)
	}
	return ack, nil
}

// eventMsg stamps ev and builds its message: the registered subject, the
// JSON payload and the trace id header.
func eventMsg(ev schemas.Event, traceID string) (*nats.Msg, error) {
	subject := schemas.Stamp(ev, traceID)
	data, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("marshal %s: %w", ev.Env().Type, err)
	}
	msg := nats.NewMsg(subject)
	msg.Data = data
	if tid := ev.Env().TraceID; tid != "" {
		msg.Header.Set(HeaderTraceID, tid)
	}
	return msg, nil
}

// PublishAll publishes events asynchronously and waits until JetStream has
// acknowledged every one of them (or ctx ends). An ack that does not come
// within publishAckTimeout, or a publish that gets no answer while a
// cluster fails over, is sent again (see FailoverBudget). It returns the
// first failure.
func PublishAll(ctx context.Context, js jetstream.JetStream, evs []schemas.Event, traceID string) error {
	futures := make([]jetstream.PubAckFuture, 0, len(evs))
	for _, ev := range evs {
		msg, err := eventMsg(ev, traceID)
		if err != nil {
			return err
		}
		if err := offload(ctx, js, msg, *ev.Env(), ev.MsgID()); err != nil {
			return err
		}
		f, err := js.PublishMsgAsync(msg, jetstream.WithMsgID(ev.MsgID()))
		if err != nil {
			return fmt.Errorf("publish %s %s: %w", msg.Subject, ev.MsgID(), err)
		}
		futures = append(futures, f)
	}
	for i, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			if IsFailover(err) && ctx.Err() == nil {
				// The ack was lost (a cluster node died with the message
				// in hand, or before answering): send it again and wait;
				// JetStream drops a second copy by its message id.
				id := evs[i].MsgID()
				_, err = retryFailover(ctx, "publish "+id, func() (*jetstream.PubAck, error) {
					return js.PublishMsg(ctx, f.Msg(), jetstream.WithMsgID(id))
				})
				if err == nil {
					continue
				}
			}
			return fmt.Errorf("publish %s: %w", evs[i].MsgID(), err)
		case <-ctx.Done():
			return fmt.Errorf("publish %s: %w", evs[i].MsgID(), ctx.Err())
		}
	}
	return nil
}

// Publish publishes ev on this bus; see the package-level Publish.
func (b *Bus) Publish(ctx context.Context, ev schemas.Event, traceID string) (*jetstream.PubAck, error) {
	return Publish(ctx, b.JS, ev, traceID)
}

// Reachable reports whether a NATS server answers at url: it greets a TCP
// connection with its INFO line, before any TLS or credentials.
func Reachable(url string) bool {
	u, err := neturl.Parse(url)
	if err != nil || u.Host == "" {
		return false
	}
	conn, err := net.DialTimeout("tcp", u.Host, time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "INFO ")
}
