package system

import (
	"slices"
	"strings"
	"sync"
)

// stopState tells what a stopping system is waiting for, so a stop that
// does not finish in time can say what was stuck.
type stopState struct {
	mu      sync.Mutex
	step    string
	running map[string]bool // stages (and helpers) still running
}

func (st *stopState) started(name string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.running == nil {
		st.running = map[string]bool{}
	}
	st.running[name] = true
}

func (st *stopState) finished(name string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.running, name)
}

func (st *stopState) at(step string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.step = step
}

// StopStep says what Stop is doing now: the stages still finishing their
// messages, or the part being closed; "" before Stop was called.
func (s *System) StopStep() string {
	st := &s.stopping
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.step == stepStages && len(st.running) > 0 {
		names := make([]string, 0, len(st.running))
		for n := range st.running {
			names = append(names, n)
		}
		slices.Sort(names)
		return "stages finishing their messages in hand: " + strings.Join(names, ", ")
	}
	return st.step
}

const stepStages = "stages finishing their messages in hand"
