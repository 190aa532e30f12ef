package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/internal/pipeline"
)

// EnvAnswerDeadline sets --answer-deadline's default.
const EnvAnswerDeadline = "EXOCORTEX_ANSWER_DEADLINE"

// EnvVerify sets --verify's default.
const EnvVerify = "EXOCORTEX_VERIFY"

// answerFlags are the answer stage's settings (up, worker, and ask when it
// answers in this process).
type answerFlags struct {
	deadline time.Duration
	verify   string
	envErr   error
	fromEnv  bool
	fs       *flag.FlagSet
}

// given says whether the user chose the deadline (flag or environment).
func (a answerFlags) given() (string, bool) {
	set := false
	a.fs.Visit(func(f *flag.Flag) { set = set || f.Name == "answer-deadline" })
	switch {
	case set:
		return "--answer-deadline " + a.deadline.String(), true
	case a.fromEnv:
		return EnvAnswerDeadline + "=" + os.Getenv(EnvAnswerDeadline), true
	}
	return "", false
}

func (a *answerFlags) register(fs *flag.FlagSet) {
	a.fs = fs
	def := answer.DefaultDeadline
	if v := os.Getenv(EnvAnswerDeadline); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			a.envErr = fmt.Errorf("%s=%q: want a positive duration such as 60s", EnvAnswerDeadline, v)
		} else {
			def, a.fromEnv = d, true
		}
	}
	verify := answer.VerifyStandard
	if v := os.Getenv(EnvVerify); v != "" {
		verify = v
	}
	fs.StringVar(&a.verify, "verify", verify, "how answers' claims are verified: standard (numbers, dates, names, conditions and clauses against "+
		"the cited block, and the NLI model when installed) or strict (also every claim judged by the strategic language model role) (env "+EnvVerify+")")
	fs.DurationVar(&a.deadline, "answer-deadline", def, "deadline of the whole answer: past it, the next rung (extractive, then passages) answers "+
		"instead of the language model (env "+EnvAnswerDeadline+")")
}

func (a answerFlags) apply(cfg *pipeline.Config) error {
	if a.envErr != nil {
		return a.envErr
	}
	if a.deadline <= 0 {
		return fmt.Errorf("--answer-deadline %s: want a positive duration", a.deadline)
	}
	if a.verify != answer.VerifyStandard && a.verify != answer.VerifyStrict {
		return fmt.Errorf("--verify %q: want standard or strict", a.verify)
	}
	cfg.Answer.Deadline, cfg.Answer.Verify = a.deadline, a.verify
	return nil
}
