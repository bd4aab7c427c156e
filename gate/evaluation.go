package gate

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/go-kit/log/level"
)

// evaluation is one run of every registered check, with the /ready bodies
// rendered once so that serving it costs no encoding.
type evaluation struct {
	generation uint64
	finished   time.Time
	results    []checkResult
	pass       bool
	// ready and draining are the full /ready responses without exclude,
	// for draining false and true.
	ready    renderedBody
	draining renderedBody
}

// renderedBody is a /ready body with its header value ready to share.
type renderedBody struct {
	body          []byte
	contentLength []string
}

// flight is an evaluation in progress that concurrent callers share.
type flight struct {
	generation uint64
	done       chan struct{}
	result     *evaluation
}

// healthJSON is the application/health+json body of /ready.
type healthJSON struct {
	Status   string               `json:"status"`
	Draining bool                 `json:"draining"`
	Checks   map[string]checkJSON `json:"checks"`
}

// checkJSON is one check inside the /ready body.
type checkJSON struct {
	Status string `json:"status"`
	Output string `json:"output"`
}

// current returns an evaluation no older than the check interval, running
// one when there is none. Concurrent callers share a single run; a caller
// whose ctx ends stops waiting, but the run goes on for the others.
func (g *Gate) current(ctx context.Context) (*evaluation, error) {
	if ev := g.latest.Load(); ev != nil && g.fresh(ev) {
		return ev, nil
	}
	g.mu.Lock()
	if ev := g.latest.Load(); ev != nil && g.fresh(ev) {
		g.mu.Unlock()
		return ev, nil
	}
	generation := g.generation.Load()
	f := g.inflight
	if f == nil || f.generation != generation {
		f = &flight{generation: generation, done: make(chan struct{})}
		g.inflight = f
		go g.fly(f, slices.Clone(g.checks))
	}
	g.mu.Unlock()
	select {
	case <-f.done:
		return f.result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fresh reports whether ev covers every registered check and is younger
// than the check interval.
func (g *Gate) fresh(ev *evaluation) bool {
	return ev.generation == g.generation.Load() && g.now().Sub(ev.finished) < g.timings.Load().checkInterval
}

// fly runs the checks of one flight and publishes the result.
func (g *Gate) fly(f *flight, checks []check) {
	ev := newEvaluation(f.generation, g.runChecks(checks), g.now())
	g.mu.Lock()
	if prev := g.latest.Load(); prev == nil || prev.generation <= ev.generation {
		g.latest.Store(ev)
	}
	if g.inflight == f {
		g.inflight = nil
	}
	g.logChanges(ev)
	g.mu.Unlock()
	f.result = ev
	close(f.done)
}

// logChanges logs each check whose verdict differs from the last
// evaluation's (or that fails the first time), once, never every poll.
// Called with g.mu held.
func (g *Gate) logChanges(ev *evaluation) {
	for _, r := range ev.results {
		was, seen := g.lastPass[r.name]
		g.lastPass[r.name] = r.pass
		switch {
		case seen && was == r.pass:
		case r.pass && seen:
			level.Info(g.logger).Log("msg", "Readiness check passes again", "check", r.name, "output", r.output)
		case !r.pass:
			level.Warn(g.logger).Log("msg", "Readiness check fails", "check", r.name, "output", r.output)
		}
	}
}

// newEvaluation gathers the results of one run and renders its two
// common /ready bodies.
func newEvaluation(generation uint64, results []checkResult, finished time.Time) *evaluation {
	ev := &evaluation{generation: generation, finished: finished, results: results}
	var readyBody []byte
	readyBody, ev.pass = ev.body(false, nil)
	drainingBody, _ := ev.body(true, nil)
	ev.ready, ev.draining = render(readyBody), render(drainingBody)
	return ev
}

// body builds the /ready verdict for draining, leaving out the excluded
// checks. It returns the JSON and whether the gate is ready.
func (ev *evaluation) body(draining bool, exclude []string) ([]byte, bool) {
	h := healthJSON{Draining: draining, Checks: make(map[string]checkJSON, len(ev.results))}
	pass := !draining
	for _, r := range ev.results {
		if slices.Contains(exclude, r.name) {
			continue
		}
		status := "pass"
		switch {
		case !r.pass:
			status = "fail"
			pass = false
		case r.warn:
			status = "warn"
		}
		h.Checks[r.name] = checkJSON{Status: status, Output: r.output}
	}
	h.Status = "fail"
	if pass {
		h.Status = "pass"
	}
	// A map of strings and bools always encodes.
	b, _ := json.Marshal(h)
	return append(b, '\n'), pass
}

// response returns the /ready body for draining and exclude, and whether
// the gate is ready. Without exclude it is the rendering made once per
// evaluation.
func (ev *evaluation) response(draining bool, exclude []string) (renderedBody, bool) {
	switch {
	case len(exclude) > 0:
		body, pass := ev.body(draining, exclude)
		return render(body), pass
	case draining:
		return ev.draining, false
	default:
		return ev.ready, ev.pass
	}
}

func render(body []byte) renderedBody {
	return renderedBody{body: body, contentLength: []string{strconv.Itoa(len(body))}}
}
