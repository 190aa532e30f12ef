package system

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/exocortex/exocortex/workers/stage"
)

// roles are the stages and the services this process runs: those named in
// Stages, else every stage and every service configured (none with
// NoStages; no service with StagesOnly).
func (c Config) roles(cat stage.Catalog) (stages, services []stage.Declaration) {
	if c.NoStages {
		return nil, nil
	}
	if len(c.Stages) > 0 {
		for _, name := range c.Stages {
			d, _ := cat.Lookup(name)
			if d.IsService() {
				services = append(services, d)
			} else {
				stages = append(stages, d)
			}
		}
		return stages, services
	}
	stages = slices.Clone(cat.Stages)
	if c.StagesOnly {
		return stages, nil
	}
	probe := &stage.Deps{Config: c.roleConfig()}
	for _, d := range cat.Services {
		if d.Configured(probe) {
			services = append(services, d)
		}
	}
	return stages, services
}

// roleConfig is the roles' configuration values (stage.ConfigOf).
func (c Config) roleConfig() []any { return append([]any{c.Chunk}, c.StageConfig...) }

// startService builds service role d and runs it until the system stops.
// A Reporter's state goes to KB_STATS every second and once more when it
// stops; an error from Run goes to Failed.
func (s *System) startService(ctx context.Context, d stage.Declaration) error {
	deps := s.deps(d)
	svc, err := d.Serve(ctx, deps)
	if err != nil {
		return fmt.Errorf("%s %s: %w", d.KindOf(), d.Name, err)
	}
	s.services[d.Name] = svc
	s.serviceOrder = append(s.serviceOrder, d.Name)
	rep, reports := svc.(stage.Reporter)
	s.wg.Add(1)
	s.stopping.started(d.Name)
	go func() {
		defer s.wg.Done()
		defer s.stopping.finished(d.Name)
		err := svc.Run(ctx)
		// The last state (a refused token, say) is written before anyone
		// hears of the failure and stops the system.
		if reports {
			s.putStat(ctx, rep.StatusKey(), rep.Report())
		}
		if err != nil && !(ctx.Err() != nil && errors.Is(err, context.Canceled)) {
			deps.Log.Error().Err(err).Msg("role stopped")
			select {
			case s.failed <- fmt.Errorf("%s: %w", d.Name, err):
			default:
			}
		}
	}()
	if reports {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.publishStat(ctx, rep.StatusKey(), stage.ReportEvery, rep.Report)
		}()
	}
	return nil
}

// Service is the service role of that name running here (nil when none):
// a source's or a door's own type (siyuan.Service, watch.Service...).
func (s *System) Service(name string) stage.Service { return s.services[name] }

// Failed delivers the first error that stopped a service role here (the
// SiYuan bridge's refused token, say): retrying cannot help, and up and
// worker stop.
func (s *System) Failed() <-chan error { return s.failed }

// Announcements are the lines the services running here have for the
// person who started them (stage.Announcer), in the order they started.
func (s *System) Announcements() []string {
	var out []string
	for _, name := range s.serviceOrder {
		if a, ok := s.services[name].(stage.Announcer); ok {
			out = append(out, a.Announce())
		}
	}
	return out
}
