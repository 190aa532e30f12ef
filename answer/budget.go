package answer

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"sync"
	"time"
)

// searchReserve is the part of the time left that the extractive step
// leaves to the passages (search-only) and to delivering the answer: 250 ms
// and the time a stopped run was last seen to take to stop (late), at most
// a quarter of what is left. Showing three passages takes a few
// milliseconds even on a busy machine; a run stops between two of the
// model's operators, and one operator of a large model can take a few
// hundred milliseconds on a saturated CPU.
func searchReserve(left, late time.Duration) time.Duration {
	return min(left/4, 250*time.Millisecond+late)
}

// qaBudget is the time the extractive step has from start: what is left
// before ctx's deadline, less the search-only reserve; never negative.
func qaBudget(ctx context.Context, start time.Time, late time.Duration) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return time.Duration(math.MaxInt64 / 2)
	}
	left := dl.Sub(start)
	return max(0, left-searchReserve(left, late))
}

// costWeight is the weight of a new measurement in the moving estimate.
const costWeight = 0.3

// passageCost is a moving estimate of what the extractive model takes per
// token of input on this machine, as it is now (what else runs on it
// included). It is kept across answers; the zero value knows nothing.
type passageCost struct {
	mu       sync.Mutex
	perToken float64       // seconds; 0: nothing measured yet
	late     time.Duration // how long after its budget a stopped run last returned
}

// stopLatency is how long a run told to stop may still take (lateBy's
// estimate).
func (c *passageCost) stopLatency() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.late
}

// lateBy notes that a run stopped at the end of its budget returned d after
// it: the estimate follows the latest, falling slowly.
func (c *passageCost) lateBy(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.late = max(d, c.late*7/10)
}

// observe adds a passage of tokens that took took and returns its cost per
// token.
func (c *passageCost) observe(took time.Duration, tokens int) float64 {
	sample := took.Seconds() / float64(max(tokens, 1))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.perToken == 0 {
		c.perToken = sample
	} else {
		c.perToken += costWeight * (sample - c.perToken)
	}
	return sample
}

// stoppedAt notes a passage stopped after took, unfinished: it costs more
// than that, so the estimate is raised to it if it was below. It is not
// raised further: the next answer tries a passage again (see extractive),
// since a machine busy now may be quiet by then, and a passage read is a
// better answer than the passages alone.
func (c *passageCost) stoppedAt(took time.Duration, tokens int) {
	sample := took.Seconds() / float64(max(tokens, 1))
	c.mu.Lock()
	defer c.mu.Unlock()
	c.perToken = max(c.perToken, sample)
}

// relax lowers the estimate when it kept the model from reading anything,
// so that a machine busy a while ago is measured again before long.
func (c *passageCost) relax() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.perToken *= 0.75
}

// estimate is the predicted cost of a passage of tokens: the cost per
// token last measured in this answer (last, the machine as it is now), or
// before any, the moving estimate; 0 when nothing was measured.
func (c *passageCost) estimate(tokens int, last float64) time.Duration {
	per := last
	if per == 0 {
		c.mu.Lock()
		per = c.perToken
		c.mu.Unlock()
	}
	return time.Duration(per * float64(tokens) * float64(time.Second))
}

// isNilQA says whether q holds a nil pointer (a nil *models.QA set as the
// Extractor is no extractive model).
func isNilQA(q Extractor) bool {
	v := reflect.ValueOf(q)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// roundDuration rounds d for a reason: to 10 ms below a second, to 100 ms
// above.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

func meanInt(xs []int) int {
	if len(xs) == 0 {
		return 0
	}
	n := 0
	for _, x := range xs {
		n += x
	}
	return n / len(xs)
}

// budgetReason says that the extractive model read read of want passages
// in took, at about per a passage (or more than stopped, when a passage was
// stopped unfinished after that long), and under which deadline.
func (a *Answerer) budgetReason(read, want int, took, per, stopped time.Duration, cfg Config) string {
	cost := "no passage measured yet"
	switch {
	case stopped > 0:
		cost = "one passage takes over " + roundDuration(stopped).String() + " on this machine now: it was stopped unfinished"
	case per > 0:
		cost = "about " + roundDuration(per).String() + " a passage on this machine now"
	}
	return fmt.Sprintf("%s: read %d of %d passages within %s (%s; the answer's deadline is %s)",
		ReasonQABudget, read, want, roundDuration(took), cost, a.deadline(cfg))
}
