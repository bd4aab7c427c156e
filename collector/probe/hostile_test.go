package probe

import (
	"bufio"
	"context"
	"crypto/rand"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/deadport"
)

// readHead reads a request head so that the answer does not
// race the request (a close with unread input is a reset).
func readHead(c net.Conn) bool {
	_, err := http.ReadRequest(bufio.NewReader(c))
	return err == nil
}

// hugeBody answers 200 with a 1 GiB body, produced lazily as
// the client reads, and counts what it managed to write.
func hugeBody(written *atomic.Int64, finished chan<- struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if finished != nil {
			defer func() { finished <- struct{}{} }()
		}
		const size = 1 << 30
		w.Header().Set("Content-Length", strconv.Itoa(size))
		chunk := make([]byte, 32<<10)
		for sent := 0; sent < size; sent += len(chunk) {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}
}

// trickleBody answers 200 and then sends a byte of body every 10ms
// for as long as the client stays.
func trickleBody(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
	for {
		if _, err := w.Write([]byte("x")); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// sendEndlessHeaders sends a status line and then header lines,
// one every pause, never ending the head. It counts what it wrote.
func sendEndlessHeaders(pause time.Duration, written *atomic.Int64) func(net.Conn) {
	return func(c net.Conn) {
		if !readHead(c) {
			return
		}
		line := []byte("X-Endless: " + strings.Repeat("a", 100) + "\r\n")
		if pause == 0 {
			// As fast as the socket takes them: long lines, which reach
			// the client's limit on the head in fewer lines to parse.
			line = []byte("X-Endless: " + strings.Repeat("a", 16<<10) + "\r\n")
		}
		if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\n")); err != nil {
			return
		}
		for {
			n, err := c.Write(line)
			written.Add(int64(n))
			if err != nil {
				return
			}
			if pause > 0 {
				time.Sleep(pause)
			}
		}
	}
}

func redirectLoop(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, r.URL.Path, http.StatusFound)
}

func sendGarbage(c net.Conn) {
	if !readHead(c) {
		return
	}
	garbage := make([]byte, 4096)
	rand.Read(garbage)
	c.Write(garbage)
}

// probeVia probes url once on path with a client of its own.
func probeVia(t *testing.T, path probePath, url string, timeout time.Duration) health.Result {
	t.Helper()
	return httpTarget(t, newClient(t), url, timeout, path).run(context.Background(), time.Now)
}

func TestHostileHugeBodyIsCutShort(t *testing.T) {
	for _, path := range probePaths() {
		t.Run(path.name, func(t *testing.T) {
			var written atomic.Int64
			finished := make(chan struct{}, 1)
			srv := startServer(t, hugeBody(&written, finished))
			timeout := 10 * time.Second
			r := probeVia(t, path, srv.URL+"/healthz", timeout)
			if r.Class != health.ClassOK || r.StatusCode != 200 {
				t.Fatalf("got %+v, want ok 200: the status decides, not the body", r)
			}
			if r.Duration > timeout/2 {
				t.Errorf("the probe took %v, want well within its %v timeout", r.Duration, timeout)
			}
			select {
			case <-finished:
			case <-time.After(5 * time.Second):
				t.Fatal("the backend was still writing its 1 GiB body 5s after the probe ended")
			}
			// The backend writes what fits in the loopback socket buffers
			// before the probe hangs up; far less than the body.
			if n := written.Load(); n > 64<<20 {
				t.Errorf("the backend wrote %d MiB of its 1 GiB body", n>>20)
			}
			if n := srv.connections.Load(); n != 1 {
				t.Errorf("%d connections, want 1", n)
			}
		})
	}
}

func TestHostileEndlessTrickleTimesOut(t *testing.T) {
	t.Parallel()
	for _, path := range probePaths() {
		t.Run(path.name, func(t *testing.T) {
			srv := startServer(t, trickleBody)
			timeout := 100 * time.Millisecond
			r := probeVia(t, path, srv.URL+"/healthz", timeout)
			checkTimeout(t, r, timeout, "reading the body after status 200")
		})
	}
}

func TestHostileHeadersThatNeverEnd(t *testing.T) {
	for _, path := range probePaths() {
		t.Run(path.name+"/slowly", func(t *testing.T) {
			var written atomic.Int64
			url := listenRaw(t, sendEndlessHeaders(10*time.Millisecond, &written))
			timeout := 100 * time.Millisecond
			r := probeVia(t, path, url+"/healthz", timeout)
			checkTimeout(t, r, timeout, "probe timeout")
		})
		t.Run(path.name+"/as fast as the socket takes them", func(t *testing.T) {
			var written atomic.Int64
			url := listenRaw(t, sendEndlessHeaders(0, &written))
			timeout := 5 * time.Second
			r := probeVia(t, path, url+"/healthz", timeout)
			if r.Class != health.ClassFailed || r.Reason != health.ReasonTransport || !strings.Contains(r.Err, "headers exceeded") {
				t.Fatalf("got %+v, want a transport failure for too large a header", r)
			}
			// The header limit ends it, not the timeout; how much sooner
			// depends on the machine's load, which a unit test does not
			// measure.
			if r.Duration >= timeout {
				t.Errorf("the probe took %v, its whole %v timeout: the header limit did not end it", r.Duration, timeout)
			}
			if n := written.Load(); n > 64<<20 {
				t.Errorf("the backend wrote %d MiB of headers", n>>20)
			}
		})
	}
}

func TestHostileRedirectLoopIsNotFollowed(t *testing.T) {
	t.Parallel()
	for _, path := range probePaths() {
		t.Run(path.name, func(t *testing.T) {
			srv := startServer(t, redirectLoop)
			r := probeVia(t, path, srv.URL+"/healthz", time.Second)
			if r.Class != health.ClassOK || r.StatusCode != http.StatusFound {
				t.Fatalf("got %+v, want ok 302", r)
			}
			if n := srv.requests.Load(); n != 1 {
				t.Errorf("the backend got %d requests, want 1: redirects are not followed", n)
			}
		})
	}
}

func TestHostileNotHTTP(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		serve func(net.Conn)
	}{
		{"random bytes", sendGarbage},
		{"closes at once", func(net.Conn) {}},
		{"closes after the request", func(c net.Conn) { readHead(c) }},
		{"status out of range", func(c net.Conn) {
			if readHead(c) {
				c.Write([]byte("HTTP/1.1 999 Whatever\r\nContent-Length: 0\r\n\r\n"))
			}
		}},
		{"negative length", func(c net.Conn) {
			if readHead(c) {
				c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n"))
			}
		}},
		{"body cut short", func(c net.Conn) {
			if readHead(c) {
				c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"))
			}
		}},
	}
	for _, path := range probePaths() {
		for _, tc := range cases {
			t.Run(path.name+"/"+tc.name, func(t *testing.T) {
				url := listenRaw(t, tc.serve)
				r := probeVia(t, path, url+"/healthz", 2*time.Second)
				if r.Class != health.ClassFailed || r.Reason != health.ReasonTransport || r.Answered() || r.Err == "" {
					t.Fatalf("got %+v, want an unanswered transport failure", r)
				}
			})
		}
	}
}

// TestHostileBackendsKeepOthersOnSchedule probes every hostile backend
// above next to a normal one: while more hostile probes hang until their
// timeout than the prober keeps workers, the normal backend is still
// probed. A prober whose workers the hanging probes held would probe it
// only between them.
func TestHostileBackendsKeepOthersOnSchedule(t *testing.T) {
	// hanging counts the probes of the backends that hang until the
	// timeout (trickle, headers) in flight; most is the largest count
	// a probe of the normal backend saw.
	var hanging, most atomic.Int64
	hang := func(serve func()) {
		hanging.Add(1)
		defer hanging.Add(-1)
		serve()
	}
	var written, headerBytes atomic.Int64
	endlessHeaders := sendEndlessHeaders(10*time.Millisecond, &headerBytes)
	hostile := map[string]string{
		"huge":      startServer(t, hugeBody(&written, nil)).URL,
		"trickle":   startServer(t, func(w http.ResponseWriter, r *http.Request) { hang(func() { trickleBody(w, r) }) }).URL,
		"headers":   listenRaw(t, func(c net.Conn) { hang(func() { endlessHeaders(c) }) }),
		"redirect":  startServer(t, redirectLoop).URL,
		"garbage":   listenRaw(t, sendGarbage),
		"refused":   deadport.URL(t),
		"blackhole": listenRaw(t, func(c net.Conn) { c.Read(make([]byte, 1)) }),
	}
	normal := startServer(t, func(http.ResponseWriter, *http.Request) {
		for n := hanging.Load(); n > most.Load(); {
			if most.CompareAndSwap(most.Load(), n) {
				break
			}
		}
	})
	// Long enough against the prober's 50 ms slots that the normal
	// backend, probed once a slot, is probed many times while the hanging
	// probes overlap.
	interval, timeout := model.Duration(time.Second), model.Duration(time.Second)
	failures := 1
	cfg := newConfig(config.Backend{Name: "normal", URL: normal.URL, HealthProbe: config.NewHealthProbeOverride(
		config.HealthProbe{Interval: model.Duration(20 * time.Millisecond), Timeout: model.Duration(5 * time.Second)}, "interval", "timeout")})
	// Several of each, so that the ones hanging until their timeout far
	// outnumber the workers the prober keeps idle.
	const copies = 5
	for name, url := range hostile {
		for i := range copies {
			cfg.Backends = append(cfg.Backends, config.Backend{Name: name + strconv.Itoa(i), URL: url,
				HealthProbe: config.NewHealthProbeOverride(config.HealthProbe{Interval: interval, Timeout: timeout, Failures: failures}, "interval", "timeout", "failures")})
		}
	}
	want := map[string]health.State{"normal": health.StateHealthy, "huge": health.StateHealthy, "redirect": health.StateHealthy, "trickle": health.StateUnhealthy,
		"headers": health.StateUnhealthy, "garbage": health.StateUnhealthy, "refused": health.StateUnhealthy, "blackhole": health.StateUnhealthy}
	rig := startRig(t, cfg, false, nil)
	// Every hostile backend reaches its state after a probe or two, the
	// hanging ones once their probes timed out.
	await(t, "every backend in its state", rig.recorded, func() bool {
		for name, state := range want {
			if name == "normal" {
				if rig.backend(name).Health().State != state {
					return false
				}
				continue
			}
			for i := range copies {
				if rig.backend(name+strconv.Itoa(i)).Health().State != state {
					return false
				}
			}
		}
		return true
	})
	rig.stop(t)
	// The ten hanging probes overlap: each lasts a second from a first
	// probe within the first second. Held workers would let the normal backend
	// be probed only with fewer hanging than the idle workers (a backend
	// hangs up a moment after its probe gave up, hence twice as many).
	if n := most.Load(); n < 2*minProbeWorkers {
		t.Errorf("the normal backend was probed with at most %d hanging probes in flight, want it probed while %d or more hang", n, 2*minProbeWorkers)
	}
}
