package fanout

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/discovery"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// haproxyBody is what every bench backend answers: a small JSON array,
// the shape of a typical query result page.
const haproxyBody = `[{"id":1,"name":"alpha","value":0.5},{"id":2,"name":"beta","value":1.5}]`

// startHAProxy starts one HAProxy process serving n loopback
// backends that answer haproxyBody to any request, and returns their
// URLs. HAProxy keeps the backends' cost out of this process, so the
// allocations and CPU measured here are probegate's alone.
func startHAProxy(b *testing.B, n int) []string {
	b.Helper()
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		b.Fatal("haproxy is not installed: run `make deps` (benchmarks never skip a missing tool)")
	}
	cfg := "global\n  maxconn 4096\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n"
	urls := make([]string, n)
	for i := range n {
		// A port the kernel just handed out and took back is free for
		// HAProxy to bind a moment later.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		urls[i] = "http://" + addr
		cfg += fmt.Sprintf("frontend backend%d\n  bind %s\n  http-request return status 200 content-type application/json string '%s'\n", i, addr, haproxyBody)
	}
	path := filepath.Join(b.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(haproxy, "-db", "-f", path)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start haproxy: %v", err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for _, u := range urls {
		for {
			conn, err := net.DialTimeout("tcp", u[len("http://"):], time.Second)
			if err == nil {
				conn.Close()
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("haproxy does not listen on %s: %v", u, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return urls
}

// fanoutOver is a Fanout over the given backend URLs with the default
// fan-out settings, passive health and outlier detection on, so that the
// recording and judging of every round are part of the measured cost.
func fanoutOver(b *testing.B, urls []string) *Fanout {
	b.Helper()
	return fanoutTuned(b, urls, func(cfg *config.Config) {
		cfg.PassiveHealth = config.PassiveHealth{Enabled: true, Window: model.Duration(30 * time.Second), MaxFailures: 5, MinRequests: 10, MaxEjectedPercent: 50}
		cfg.Fanout.OutlierDetection = config.DefaultOutlierDetection()
		cfg.Fanout.OutlierDetection.Enabled = true
	})
}

// fanoutTuned is a Fanout over the given backend URLs with the default
// fan-out settings as tune changes them.
func fanoutTuned(b *testing.B, urls []string, tune func(*config.Config)) *Fanout {
	b.Helper()
	cfg := enabledConfig(urlBackends(urls...)...)
	cfg.Fanout = config.Default().Fanout
	cfg.Fanout.Enabled = true
	tune(cfg)
	p := pool.New(log.NewNopLogger(), time.Now)
	if err := p.Apply(discovery.Static(cfg), pool.SettingsOf(cfg)); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		for _, backend := range p.Backends() {
			backend.Client.CloseIdleConnections()
		}
	})
	return New(p, cfg.Fanout, NewMetrics(prometheus.NewRegistry()), log.NewNopLogger(), time.Now)
}

// percentile is the p-quantile of durations, in microseconds.
func percentile(d []time.Duration, p float64) float64 {
	slices.Sort(d)
	return float64(d[int(float64(len(d)-1)*p)].Nanoseconds()) / 1e3
}

// BenchmarkFanoutAddedLatency measures what a fan-out to 3 loopback
// backends adds over one direct request to one of them (budget: 300 µs at
// p50). Each iteration sends one direct request and one fan-out request
// through probegate's real HTTP listener, interleaved, so that both see the
// same machine; added-p50-us is the difference of their medians.
func BenchmarkFanoutAddedLatency(b *testing.B) {
	urls := startHAProxy(b, 3)
	front := httptest.NewServer(fanoutOver(b, urls))
	b.Cleanup(front.Close)
	transport := &http.Transport{MaxIdleConnsPerHost: 4}
	b.Cleanup(transport.CloseIdleConnections)
	client := &http.Client{Transport: transport}
	get := func(url, wantBackends string) time.Duration {
		start := time.Now()
		resp, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		elapsed := time.Since(start)
		if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("X-Backends") != wantBackends {
			b.Fatalf("GET %s: status %d, X-Backends %q, %v", url, resp.StatusCode, resp.Header.Get("X-Backends"), err)
		}
		return elapsed
	}
	direct, fanned := urls[0]+"/query?q=1", front.URL+"/fanout/query?q=1"
	for range 200 {
		get(direct, "")
		get(fanned, "3/3")
	}
	directs := make([]time.Duration, 0, 1<<14)
	fanouts := make([]time.Duration, 0, 1<<14)
	b.ResetTimer()
	for b.Loop() {
		directs = append(directs, get(direct, ""))
		fanouts = append(fanouts, get(fanned, "3/3"))
	}
	b.StopTimer()
	directP50, fanoutP50 := percentile(directs, 0.5), percentile(fanouts, 0.5)
	b.ReportMetric(directP50, "direct-p50-us")
	b.ReportMetric(fanoutP50, "fanout-p50-us")
	b.ReportMetric(fanoutP50-directP50, "added-p50-us")
	b.Logf("%d rounds: direct p50 %.0f µs p99 %.0f µs; fan-out to 3 p50 %.0f µs p99 %.0f µs; added p50 %.0f µs (budget 300)",
		len(directs), directP50, percentile(directs, 0.99), fanoutP50, percentile(fanouts, 0.99), fanoutP50-directP50)
}

// discardResponse is a ResponseWriter that keeps the status and throws
// the body away.
type discardResponse struct {
	header http.Header
	status int
}

func (r *discardResponse) Header() http.Header         { return r.header }
func (r *discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (r *discardResponse) WriteHeader(status int)      { r.status = status }

// BenchmarkFanoutHandler measures one fan-out round to 3 loopback backends
// inside probegate: the handler, the three backend requests over
// keep-alive connections, the merge and the passive-health records. Its
// allocs/op are the allocations per fan-out request (the backends are
// HAProxy, another process).
func BenchmarkFanoutHandler(b *testing.B) {
	f := fanoutOver(b, startHAProxy(b, 3))
	req := httptest.NewRequest(http.MethodGet, "/fanout/query?q=1", nil)
	req.RemoteAddr = "127.0.0.1:40000"
	w := &discardResponse{header: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.header)
		f.ServeHTTP(w, req)
		if w.status != http.StatusOK || w.header.Get("X-Backends") != "3/3" {
			b.Fatalf("status %d, X-Backends %q", w.status, w.header.Get("X-Backends"))
		}
	}
}

// minimalFanout is the fan-out a few lines of net/http make: one
// goroutine per backend over a shared Transport, the arrays' elements
// spliced together. It checks nothing and bounds nothing; the throughput
// budget is 0.9 of its requests per second.
func minimalFanout(urls []string) http.Handler {
	transport := &http.Transport{MaxIdleConnsPerHost: 256}
	client := &http.Client{Transport: transport}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bodies := make([][]byte, len(urls))
		var wg sync.WaitGroup
		for i, u := range urls {
			wg.Go(func() {
				resp, err := client.Get(u + strings.TrimPrefix(r.URL.RequestURI(), Path))
				if err != nil {
					return
				}
				defer resp.Body.Close()
				if body, err := io.ReadAll(resp.Body); err == nil && len(body) >= 2 {
					bodies[i] = bytes.TrimSpace(body)
				}
			})
		}
		wg.Wait()
		out := []byte{'['}
		for _, body := range bodies {
			if len(body) > 2 {
				if len(out) > 1 {
					out = append(out, ',')
				}
				out = append(out, body[1:len(body)-1]...)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(out, ']'))
	})
}

// wrkRequestsPerSecond is the Requests/sec line of wrk's report.
var wrkRequestsPerSecond = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)

// cpuUsed is the CPU time this process has used so far.
func cpuUsed() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runWrk runs wrk with 16 connections for d against url and returns
// its requests per second and the CPU this process spent per request
// (the servers run here; HAProxy and wrk elsewhere), which other work on
// the machine disturbs less than the rate.
func runWrk(b *testing.B, wrk, url string, d time.Duration) (rps float64, cpu time.Duration) {
	b.Helper()
	before := cpuUsed()
	out, err := exec.Command(wrk, "-c16", "-t2", "-d"+d.String(), url).CombinedOutput()
	spent := cpuUsed() - before
	if err != nil {
		b.Fatalf("wrk: %v\n%s", err, out)
	}
	if bytes.Contains(out, []byte("Non-2xx")) {
		b.Fatalf("wrk saw errors:\n%s", out)
	}
	m := wrkRequestsPerSecond.FindSubmatch(out)
	if m == nil {
		b.Fatalf("no Requests/sec in wrk's report:\n%s", out)
	}
	rps, _ = strconv.ParseFloat(string(m[1]), 64)
	return rps, time.Duration(float64(spent) / (rps * d.Seconds()))
}

// BenchmarkFanoutThroughput compares the requests per second of
// probegate's fan-out to 3 loopback backends, outlier detection and
// passive health on, with the minimal net/http fan-out's, under wrk -c16
// (budget: at least 0.9). The two alternate for seven rounds of 2 s; the
// verdict is the median of the rounds' ratios, so that a burst of other
// work on the machine spoils one round, not the result.
func BenchmarkFanoutThroughput(b *testing.B) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Fatal("wrk is not installed: run `make deps` (benchmarks never skip a missing tool)")
	}
	urls := startHAProxy(b, 3)
	ours := httptest.NewServer(fanoutOver(b, urls))
	b.Cleanup(ours.Close)
	minimal := httptest.NewServer(minimalFanout(urls))
	b.Cleanup(minimal.Close)
	path := "/fanout/query?q=1"
	var ratios, cpuRatios []float64
	for b.Loop() {
		for round := range 7 {
			// Which runs first alternates, so that a machine getting
			// busier or quieter favours neither.
			var mine, theirs float64
			var mineCPU, theirCPU time.Duration
			if round%2 == 0 {
				theirs, theirCPU = runWrk(b, wrk, minimal.URL+path, 2*time.Second)
				mine, mineCPU = runWrk(b, wrk, ours.URL+path, 2*time.Second)
			} else {
				mine, mineCPU = runWrk(b, wrk, ours.URL+path, 2*time.Second)
				theirs, theirCPU = runWrk(b, wrk, minimal.URL+path, 2*time.Second)
			}
			ratios = append(ratios, mine/theirs)
			cpuRatios = append(cpuRatios, float64(mineCPU)/float64(theirCPU))
			b.Logf("round %d: probegate %.0f req/s (%v CPU each), minimal net/http fan-out %.0f req/s (%v CPU each), ratio %.2f",
				round+1, mine, mineCPU, theirs, theirCPU, mine/theirs)
		}
	}
	slices.Sort(ratios)
	median := ratios[len(ratios)/2]
	b.ReportMetric(median, "ratio-vs-minimal")
	slices.Sort(cpuRatios)
	b.ReportMetric(cpuRatios[len(cpuRatios)/2], "cpu-per-request-vs-minimal")
	if median < 0.9 {
		b.Errorf("median ratio %.2f of the minimal fan-out's requests per second; budget 0.9", median)
	}
}
