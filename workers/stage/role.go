package stage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/exocortex/exocortex/bus"
)

// Kind says what sort of role a declaration is.
type Kind string

const (
	// KindStage consumes subjects of the bus (the default: a Declaration
	// with New).
	KindStage Kind = "stage"
	// KindSource follows a store of notes and publishes its changes
	// (kb.doc.changed): the SiYuan bridge, the folder watcher.
	KindSource Kind = "source"
	// KindDoor serves people or programs (the HTTP gateway).
	KindDoor Kind = "door"
)

// Service is a running role that consumes no subject: it runs until its
// context ends. An error from Run stops the process that runs it (up,
// worker): a role that can go on after a failure logs it and returns nil.
type Service interface {
	Run(ctx context.Context) error
}

// Reporter is a Service that keeps its state in the KB_STATS bucket for
// status (and for another process's check): the system writes Report()
// under StatusKey every second while it runs, and once when it stops.
type Reporter interface {
	StatusKey() string
	Report() any
}

// Announcer is a Service with a line for the person who started it (up
// prints it on stderr once everything runs).
type Announcer interface {
	Announce() string
}

// ReportEvery is how often a Reporter's state is written.
const ReportEvery = time.Second

// IsService reports whether d is a service role (Serve instead of New).
func (d Declaration) IsService() bool { return d.Serve != nil }

// KindOf is d's kind: Kind, else KindStage for a consumer.
func (d Declaration) KindOf() Kind {
	if d.Kind != "" {
		return d.Kind
	}
	return KindStage
}

// Configured reports whether up runs the role: a stage always, a service
// when its configuration is present (Enabled says; nil: always).
func (d Declaration) Configured(deps *Deps) bool {
	return d.Enabled == nil || d.Enabled(deps)
}

// validateService joins the problems of a service role's declaration.
func (d Declaration) validateService() error {
	var errs []error
	if d.Name == "" {
		errs = append(errs, errors.New("role without a name"))
	}
	if len(d.Inputs) > 0 || d.Stream != "" || d.New != nil {
		errs = append(errs, fmt.Errorf("role %q: a service (Serve) consumes no stream; declare New for a stage", d.Name))
	}
	return errors.Join(errs...)
}

// ReadReport reads the state a Reporter last wrote under key into out;
// false when there is none.
func ReadReport(ctx context.Context, b *bus.Bus, key string, out any) (bool, error) {
	kv, err := b.KV(ctx, bus.BucketStats)
	if err != nil {
		return false, err
	}
	raw, err := kv.Get(ctx, key)
	if err != nil || raw == nil {
		return false, err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return false, fmt.Errorf("%s: %w", key, err)
	}
	return true, nil
}

// TraceID is a new trace id for what a service role named name publishes.
func TraceID(name string) string { return fmt.Sprintf("%s-%d", name, time.Now().UnixNano()) }
