package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
)

// EnvRecentHalfLife sets --recent-half-life's default.
const EnvRecentHalfLife = "EXOCORTEX_RECENT_HALF_LIFE"

// EnvRecentWeight sets --recent-weight's default.
const EnvRecentWeight = "EXOCORTEX_RECENT_WEIGHT"

// The bounds of the recency settings: a half-life shorter than an hour
// reads a note's date finer than notes carry it (and is usually "3m" meant
// as months); a weight over 10 lets recency outrank almost any match.
const (
	minHalfLife = time.Hour
	maxHalfLife = 100 * 365 * 24 * time.Hour
	maxWeight   = 10
)

// recencyFlags shape the recency signal of queries that prefer recent notes
// (--recent, recent:true): retrieval.Config's RecencyHalfLife and
// RecencyWeight, where the retrieval runs (up, worker --stage retrieve or
// rerank, and search, ask, research and mcp when they run the stages
// themselves).
type recencyFlags struct {
	halfLife halfLifeValue
	weight   weightValue
	envErr   error // a bad environment value, reported by apply
	fs       *flag.FlagSet
	// Which came from the environment (a flag given overrides it).
	halfLifeEnv, weightEnv bool
}

func (r *recencyFlags) register(fs *flag.FlagSet) {
	r.fs = fs
	r.halfLife, r.weight = halfLifeValue(retrieval.DefaultRecencyHalfLife), weightValue(retrieval.DefaultConfig().RecencyWeight)
	var errs []error
	if v := os.Getenv(EnvRecentHalfLife); v != "" {
		r.halfLifeEnv = true
		errs = append(errs, envValue(EnvRecentHalfLife, v, r.halfLife.Set))
	}
	if v := os.Getenv(EnvRecentWeight); v != "" {
		r.weightEnv = true
		errs = append(errs, envValue(EnvRecentWeight, v, r.weight.Set))
	}
	r.envErr = errors.Join(errs...)
	fs.Var(&r.halfLife, "recent-half-life", "with --recent, the age `SPAN` at which a note's recency share is half a fresh note's: "+
		"90d, 2w, 720h (env "+EnvRecentHalfLife+")")
	fs.Var(&r.weight, "recent-weight", "with --recent, the weight `W` of recency: a fresh note's share is worth W first places in one more ranked list, "+
		"and in rerank mode W logits of the cross-encoder's score; 1 reorders notes that match about equally well; over 0, at most 10 (env "+EnvRecentWeight+")")
}

func envValue(name, v string, set func(string) error) error {
	if err := set(v); err != nil {
		return fmt.Errorf("%s=%q: %w", name, v, err)
	}
	return nil
}

// differsFrom lists the recency settings the user gave (a flag, else the
// environment: "--recent-half-life 7d", "EXOCORTEX_RECENT_WEIGHT=2") that
// the running system st does not use; all given ones when st did not
// record its own (nil, or a system that predates them).
func (r *recencyFlags) differsFrom(st *schemas.SystemSettings) []string {
	if r.fs == nil {
		return nil
	}
	set := map[string]bool{}
	r.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var runHalf time.Duration
	var runWeight float64
	if st != nil {
		runHalf, _ = time.ParseDuration(st.RecentHalfLife)
		runWeight = st.RecentWeight
	}
	var out []string
	given := func(name, env string, fromEnv, same bool, value string) {
		switch {
		case same:
		case set[name]:
			out = append(out, "--"+name+" "+value)
		case fromEnv:
			out = append(out, env+"="+os.Getenv(env))
		}
	}
	given("recent-half-life", EnvRecentHalfLife, r.halfLifeEnv, runHalf == time.Duration(r.halfLife), r.halfLife.String())
	given("recent-weight", EnvRecentWeight, r.weightEnv, runWeight == float64(r.weight), r.weight.String())
	return out
}

// recencyOf says a running system's recency settings, for notes.
func recencyOf(st *schemas.SystemSettings) string {
	if st == nil {
		return "unknown: it did not record its settings"
	}
	h, err := time.ParseDuration(st.RecentHalfLife)
	if err != nil || h <= 0 || st.RecentWeight <= 0 {
		return "unknown: it did not record them"
	}
	return "half-life " + formatSpan(h) + ", weight " + strconv.FormatFloat(st.RecentWeight, 'g', -1, 64)
}

func (r *recencyFlags) apply(cfg *retrieval.Config) error {
	if r.envErr != nil {
		return r.envErr
	}
	cfg.RecencyHalfLife, cfg.RecencyWeight = time.Duration(r.halfLife), float64(r.weight)
	return nil
}

// halfLifeValue is --recent-half-life: days (90d), weeks (2w) or a Go
// duration (720h), from an hour to 100 years.
type halfLifeValue time.Duration

func (h *halfLifeValue) String() string { return formatSpan(time.Duration(*h)) }

func (h *halfLifeValue) Set(s string) error {
	d, err := parseHalfLife(s)
	if err != nil {
		return err
	}
	*h = halfLifeValue(d)
	return nil
}

// parseHalfLife reads a half-life: a positive number of days (90d, 1.5d) or
// weeks (2w), or a Go duration (720h).
func parseHalfLife(s string) (time.Duration, error) {
	want := errors.New("want a positive span such as 90d, 2w or 720h")
	v := strings.ToLower(strings.TrimSpace(s))
	var d time.Duration
	if unit := map[byte]time.Duration{'d': 24 * time.Hour, 'w': 7 * 24 * time.Hour}[last(v)]; unit != 0 {
		n, err := strconv.ParseFloat(v[:len(v)-1], 64)
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) || n*float64(unit) > float64(math.MaxInt64) {
			return 0, want
		}
		d = time.Duration(n * float64(unit))
	} else {
		p, err := time.ParseDuration(v)
		if err != nil {
			return 0, want
		}
		d = p
	}
	switch {
	case d <= 0:
		return 0, want
	case d < minHalfLife:
		return 0, fmt.Errorf("%s is under an hour: want a span such as 90d, 2w or 720h (months as days: 90d, not 3m)", formatSpan(d))
	case d > maxHalfLife:
		return 0, errors.New("over 100 years: want a span such as 90d, 2w or 720h")
	}
	return d, nil
}

func last(s string) byte {
	if s == "" {
		return 0
	}
	return s[len(s)-1]
}

// formatSpan writes whole days as 90d, anything else as Go does (36h0m0s).
func formatSpan(d time.Duration) string {
	if day := 24 * time.Hour; d > 0 && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return d.String()
}

// weightValue is --recent-weight: a number over 0, at most 10.
type weightValue float64

func (w *weightValue) String() string { return strconv.FormatFloat(float64(*w), 'g', -1, 64) }

func (w *weightValue) Set(s string) error {
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(n) || n <= 0 || n > maxWeight {
		return fmt.Errorf("want a number over 0 and at most %d, such as 1 or 2.5", maxWeight)
	}
	*w = weightValue(n)
	return nil
}
