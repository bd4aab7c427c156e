package gate

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/go-kit/log/level"
)

// check is one registered readiness check.
type check struct {
	name string
	fn   func(ctx context.Context) (output string, err error)
}

// checkResult is what one run of a check said.
type checkResult struct {
	name   string
	pass   bool
	output string
	// warn marks a check that passes with a warning: it does not fail
	// /ready, and its status says "warn".
	warn bool
}

// Warning is an error a check returns to pass with status "warn": the
// gate stays ready, and the body shows the warning's text as the check's
// output, for a check that chose not to fail although something is wrong.
type Warning struct{ Output string }

func (w *Warning) Error() string { return w.Output }

// Warn returns a *Warning with output, for a check to return.
func Warn(output string) error { return &Warning{Output: output} }

// Register adds a readiness check. The check passes when fn returns nil;
// otherwise the error's text is its output. fn gets a context that ends
// at the check timeout and runs behind recover (a panic fails the check,
// with output naming the panic; a panic in a goroutine fn starts is beyond
// reach). fn may be called from several goroutines over time: a call
// that outlived its timeout may still be running when the next evaluation
// calls fn again.
//
// Register panics when name is empty or already registered, or fn is nil:
// those are wiring mistakes, heard at start-up.
func (g *Gate) Register(name string, fn func(ctx context.Context) error) {
	if fn == nil {
		panic(fmt.Sprintf("gate: check %q registered with a nil function", name))
	}
	g.RegisterWithOutput(name, func(ctx context.Context) (string, error) {
		return "", fn(ctx)
	})
}

// RegisterWithOutput adds a readiness check that also reports an output
// when it passes (numbers an operator wants to see either way). When fn
// returns an error, the check fails and its output is the error's text, so
// a check that wants its numbers shown on failure puts them in the error.
// It panics like Register.
func (g *Gate) RegisterWithOutput(name string, fn func(ctx context.Context) (output string, err error)) {
	if name == "" {
		panic("gate: check registered with an empty name")
	}
	if fn == nil {
		panic(fmt.Sprintf("gate: check %q registered with a nil function", name))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.checks {
		if c.name == name {
			panic(fmt.Sprintf("gate: check %q registered twice", name))
		}
	}
	g.checks = append(g.checks, check{name: name, fn: fn})
	g.generation.Add(1)
}

// runChecks runs every check concurrently, each under the check timeout
// and behind recover, and returns their results in registration order. A
// check that outlives its timeout is reported failed and left to finish on
// its own: a Go function cannot be stopped from outside.
func (g *Gate) runChecks(checks []check) []checkResult {
	timeout := g.timings.Load().checkTimeout
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make([]chan checkResult, len(checks))
	for i, c := range checks {
		done[i] = make(chan checkResult, 1)
		go func() { done[i] <- g.callCheck(ctx, c) }()
	}
	results := make([]checkResult, len(checks))
	for i, c := range checks {
		r, ok := awaitCheck(ctx, done[i])
		switch {
		case !ok:
			r = checkResult{name: c.name, output: fmt.Sprintf("timed out after %s", timeout)}
		case !r.pass && errors.Is(ctx.Err(), context.DeadlineExceeded):
			r.output = fmt.Sprintf("timed out after %s: %s", timeout, r.output)
		}
		results[i] = r
	}
	return results
}

// awaitCheck waits for a check's result until ctx ends. A result already
// there wins over an ended context, which a plain select would pick at
// random.
func awaitCheck(ctx context.Context, done <-chan checkResult) (checkResult, bool) {
	select {
	case r := <-done:
		return r, true
	default:
	}
	select {
	case r := <-done:
		return r, true
	case <-ctx.Done():
		return checkResult{}, false
	}
}

// callCheck runs one check, turning a panic into a failed result so that
// neither the process nor the other checks notice.
func (g *Gate) callCheck(ctx context.Context, c check) (r checkResult) {
	defer func() {
		if p := recover(); p != nil {
			r = checkResult{name: c.name, output: fmt.Sprintf("panic: %v", p)}
			level.Error(g.logger).Log("msg", "Readiness check panicked", "check", c.name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	output, err := c.fn(ctx)
	var warning *Warning
	if errors.As(err, &warning) {
		return checkResult{name: c.name, pass: true, warn: true, output: warning.Output}
	}
	if err != nil {
		return checkResult{name: c.name, output: err.Error()}
	}
	return checkResult{name: c.name, pass: true, output: output}
}
