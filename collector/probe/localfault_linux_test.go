package probe

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// TestOutOfDescriptorsJudgesNoBackend reproduces the audit's finding:
// probegate out of file descriptors (a real EMFILE, under a lowered
// RLIMIT_NOFILE) took healthy backends out of service. Every probe kind
// that opens a connection fails alike; each failure must count as local
// and leave the backend healthy.
func TestOutOfDescriptorsJudgesNoBackend(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	for _, kind := range []string{config.KindHTTP, config.KindTCP} {
		t.Run(kind, func(t *testing.T) {
			cfg := newConfig(config.Backend{Name: "a", URL: srv.URL})
			cfg.HealthProbe.Kind = kind
			p := newPool(t, cfg)
			b := p.Backends()[0]
			target := newProbeTarget(b, newFunc)
			ctx := context.Background()
			for range cfg.HealthProbe.Successes {
				b.RecordProbe(target.run(ctx, time.Now))
			}
			if st := b.Health().State; st != health.StateHealthy {
				t.Fatalf("before the fault the backend is %s, want healthy", st)
			}
			// A kept-alive connection would spare the probe its dial: the
			// HTTP probe's own is closed (it dials anew on its next probe).
			if target.release != nil {
				target.release()
			}
			// The server's ends of the earlier probes' connections close
			// now, not later: a descriptor they freed after the limit was
			// reached would let a probe dial after all.
			srv.CloseClientConnections()

			var results []health.Result
			withoutDescriptors(t, func() {
				for range cfg.HealthProbe.Failures + 1 {
					results = append(results, target.run(ctx, time.Now))
				}
			})
			judgedNobody(t, b, results)
		})
	}
}

// judgedNobody records results, probes that failed with EMFILE, on a
// healthy backend b, and checks that each counted as local and left b
// healthy and in service.
func judgedNobody(t *testing.T, b *pool.Backend, results []health.Result) {
	t.Helper()
	for _, r := range results {
		if !strings.Contains(r.Err, "too many open files") {
			t.Fatalf("the probe failed with %q, not with EMFILE", r.Err)
		}
		b.RecordProbe(r)
	}
	s := b.Snapshot()
	if s.Health.State != health.StateHealthy || !s.Health.InService() {
		t.Errorf("after %d probes without descriptors the backend is %s, want healthy and in service", len(results), s.Health.State)
	}
	if got := s.Failures[health.ReasonLocal]; got != uint64(len(results)) {
		t.Errorf("local failures counted %d, want %d", got, len(results))
	}
	if got := s.Failures[health.ReasonTransport]; got != 0 {
		t.Errorf("transport failures counted %d, want 0: EMFILE is not the backend's", got)
	}
}

// withoutDescriptors runs f with every file descriptor the soft
// RLIMIT_NOFILE allows in use, so that any socket or open fails with
// EMFILE, and gives everything back afterwards.
func withoutDescriptors(t *testing.T, f func()) {
	t.Helper()
	var saved syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &saved); err != nil {
		t.Fatal(err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	// A little above the descriptors open now: the rest is filled below.
	lowered := saved
	lowered.Cur = uint64(len(fds)) + 64
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lowered); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &saved); err != nil {
			t.Error(err)
		}
	}()
	var held []*os.File
	defer func() {
		for _, h := range held {
			h.Close()
		}
	}()
	for range lowered.Cur {
		h, err := os.Open(os.DevNull)
		if errors.Is(err, syscall.EMFILE) {
			f()
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, h)
	}
	t.Fatalf("%d files opened under a limit of %d without EMFILE", len(held), lowered.Cur)
}
