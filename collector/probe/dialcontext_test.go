package probe

import (
	"context"
	"errors"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// TestProbeDialContextKeepsItsDeadline: the context a probe dials under,
// to an IP address over plain HTTP as the Prober runs it (a context that
// ends only when the prober stops, and a deadline apart), reports the
// probe's deadline, and is done at that deadline with
// context.DeadlineExceeded, as the Context contract says a context with
// a deadline is. The dialer's Control hook sees that context.
func TestProbeDialContextKeepsItsDeadline(t *testing.T) {
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	const timeout = 100 * time.Millisecond
	b := &pool.Backend{URL: srv.URL, Client: newClient(t), Probe: config.HealthProbe{Enabled: true, Timeout: model.Duration(timeout)}}
	spec, err := newHTTPProbe(b)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newConnProbe(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.release)

	type seen struct {
		deadline    time.Time
		hasDeadline bool
		doneAfter   time.Duration
		err         error
	}
	seenCh := make(chan seen, 1)
	// A bound on the wait for the context to end, far beyond its
	// deadline; not a timing claim.
	const bound = 5 * time.Second
	p.dialer.ControlContext = func(ctx context.Context, _, _ string, _ syscall.RawConn) error {
		var s seen
		s.deadline, s.hasDeadline = ctx.Deadline()
		if ctx.Err() != nil {
			t.Errorf("the dial's context was done before the connect: %v", ctx.Err())
		}
		wait := time.NewTimer(bound)
		defer wait.Stop()
		select {
		case <-ctx.Done():
			s.doneAfter = time.Until(s.deadline)
		case <-wait.C:
			s.doneAfter = -bound
		}
		s.err = ctx.Err()
		seenCh <- s
		return errors.New("the test stops the dial here")
	}
	deadline := time.Now().Add(timeout)
	p.probeBy(t.Context(), deadline)

	s := <-seenCh
	if !s.hasDeadline || !s.deadline.Equal(deadline) {
		t.Errorf("the dial's context reports the deadline %v (%v), want the probe's %v", s.deadline, s.hasDeadline, deadline)
	}
	if s.doneAfter == -bound {
		t.Fatalf("the dial's context was not done %v after its deadline", bound)
	}
	if s.doneAfter > 0 {
		t.Errorf("the dial's context was done %v before its deadline", s.doneAfter)
	}
	if !errors.Is(s.err, context.DeadlineExceeded) {
		t.Errorf("the dial's context ended with %v, want %v", s.err, context.DeadlineExceeded)
	}
}
