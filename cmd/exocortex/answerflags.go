package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/internal/system"
)

// EnvAnswerDeadline sets --answer-deadline's default.
const EnvAnswerDeadline = "EXOCORTEX_ANSWER_DEADLINE"

// EnvAnswerDeadlineLocal sets --answer-deadline-local's default.
const EnvAnswerDeadlineLocal = "EXOCORTEX_ANSWER_DEADLINE_LOCAL"

// EnvVerify sets --verify's default.
const EnvVerify = "EXOCORTEX_VERIFY"

// answerFlags are the answer stage's settings (up, worker, and ask when it
// answers in this process).
type answerFlags struct {
	deadline, local deadlineFlag
	verify          string
	fs              *flag.FlagSet
}

// deadlineFlag is a deadline set by a flag or its environment variable.
type deadlineFlag struct {
	name, env string
	value     time.Duration
	envErr    error
	fromEnv   bool
}

func (d *deadlineFlag) register(fs *flag.FlagSet, def time.Duration, usage string) {
	if v := os.Getenv(d.env); v != "" {
		p, err := time.ParseDuration(v)
		if err != nil || p <= 0 {
			d.envErr = fmt.Errorf("%s=%q: want a positive duration such as %gs", d.env, v, def.Seconds())
		} else {
			def, d.fromEnv = p, true
		}
	}
	fs.DurationVar(&d.value, d.name, def, usage+" (env "+d.env+")")
}

// given says whether the user chose the deadline (flag or environment), and how.
func (d deadlineFlag) given(fs *flag.FlagSet) (string, bool) {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == d.name })
	switch {
	case set:
		return "--" + d.name + " " + d.value.String(), true
	case d.fromEnv:
		return d.env + "=" + os.Getenv(d.env), true
	}
	return "", false
}

func (d deadlineFlag) check() error {
	if d.envErr != nil {
		return d.envErr
	}
	if d.value <= 0 {
		return fmt.Errorf("--%s %s: want a positive duration", d.name, d.value)
	}
	return nil
}

// given says whether the user chose the deadline of answers with a language
// model (flag or environment).
func (a answerFlags) given() (string, bool) { return a.deadline.given(a.fs) }

// givenLocal says whether the user chose the deadline of answers without one.
func (a answerFlags) givenLocal() (string, bool) { return a.local.given(a.fs) }

func (a *answerFlags) register(fs *flag.FlagSet) {
	a.fs = fs
	a.deadline = deadlineFlag{name: "answer-deadline", env: EnvAnswerDeadline}
	a.local = deadlineFlag{name: "answer-deadline-local", env: EnvAnswerDeadlineLocal}
	verify := answer.VerifyStandard
	if v := os.Getenv(EnvVerify); v != "" {
		verify = v
	}
	fs.StringVar(&a.verify, "verify", verify, "how answers' claims are verified: standard (numbers, dates, names, conditions and clauses against "+
		"the cited block, and the NLI model when installed) or strict (also every claim judged by the strategic language model role) (env "+EnvVerify+")")
	a.deadline.register(fs, answer.DefaultDeadline, "deadline of the whole answer with a language-model provider: past it, the next rung "+
		"(extractive, then passages) answers instead of the language model")
	a.local.register(fs, answer.DefaultLocalDeadline, "deadline of the whole answer without a language-model provider: the extractive model "+
		"reads the passages it has time for, one at a time, and the passages answer when it read none in time")
}

func (a answerFlags) apply(cfg *system.Config) error {
	for _, d := range []deadlineFlag{a.deadline, a.local} {
		if err := d.check(); err != nil {
			return err
		}
	}
	if a.verify != answer.VerifyStandard && a.verify != answer.VerifyStrict {
		return fmt.Errorf("--verify %q: want standard or strict", a.verify)
	}
	cfg.Answer.Deadline, cfg.Answer.LocalDeadline, cfg.Answer.Verify = a.deadline.value, a.local.value, a.verify
	return nil
}
