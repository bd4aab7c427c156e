package httpprobe

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

type contextTestKey struct{}

func TestWithDeadlineBehavesAsAContext(t *testing.T) {
	t.Run("deadline without Done", func(t *testing.T) {
		ctx, release := WithDeadline(context.Background(), time.Now().Add(50*time.Millisecond))
		defer release()
		if d, ok := ctx.Deadline(); !ok || time.Until(d) > 50*time.Millisecond {
			t.Fatalf("deadline %v %v", d, ok)
		}
		if err := ctx.Err(); err != nil {
			t.Fatalf("Err before the deadline: %v", err)
		}
		time.Sleep(60 * time.Millisecond)
		if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Err after the deadline: %v", err)
		}
	})
	t.Run("Done closes at the deadline", func(t *testing.T) {
		ctx, release := WithDeadline(context.Background(), time.Now().Add(50*time.Millisecond))
		defer release()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
			t.Fatal("Done did not close at the deadline")
		}
		if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Err: %v", err)
		}
	})
	t.Run("parent cancellation", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.WithValue(context.Background(), contextTestKey{}, "v"))
		ctx, release := WithDeadline(parent, time.Now().Add(time.Hour))
		defer release()
		if ctx.Value(contextTestKey{}) != "v" {
			t.Fatal("the parent's value is lost")
		}
		done := ctx.Done()
		cancel()
		select {
		case <-done:
		case <-time.After(time.Second):
			t.Fatal("Done did not close when the parent was cancelled")
		}
		if err := ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Err: %v", err)
		}
	})
	t.Run("parent cancellation without Done", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		ctx, release := WithDeadline(parent, time.Now().Add(time.Hour))
		defer release()
		cancel()
		if err := ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Err: %v", err)
		}
	})
	t.Run("release", func(t *testing.T) {
		ctx, release := WithDeadline(context.Background(), time.Now().Add(time.Hour))
		release()
		if err := ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Err after release: %v", err)
		}
		select {
		case <-ctx.Done():
		default:
			t.Fatal("Done is open after release")
		}
	})
}

// net/http's transport watches Done, not the deadline: it must still time
// out on this context.
func TestWithDeadlineBoundsNetHTTP(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	ctx, cancel := WithDeadline(context.Background(), time.Now().Add(100*time.Millisecond))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := transport.RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the deadline exceeded", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the request ran %v past its 100ms deadline", d)
	}
}

func BenchmarkWithDeadline(b *testing.B) {
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		ctx, release := WithDeadline(parent, time.Now().Add(time.Second))
		stop := context.AfterFunc(watchedContext(ctx), func() {})
		stop()
		release()
	}
}
