// Command metricsflood measures what 16 clients scraping the metrics of
// 10,000 backends without pause cost the rest of probegate: /ready on the
// health listener must keep its p99 at or under 50 ms (the budget), and
// the process's peak RSS is printed. It starts one loopback server that
// answers for every backend, the probegate binary with 10,000 backends on
// it and a health listener, then the scrapers and a /ready poller for the
// length of the run. `make bench-metrics-flood` runs it; -max-in-flight
// sets --web.max-requests-in-flight, so that a run with a high value shows
// what the bound buys.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() { os.Exit(run()) }

func run() int {
	binary := flag.String("binary", "./probegate", "probegate binary to measure")
	backends := flag.Int("backends", 10_000, "backends in the pool")
	scrapers := flag.Int("scrapers", 16, "clients scraping the metrics without pause")
	duration := flag.Duration("duration", 20*time.Second, "length of the flood")
	maxInFlight := flag.Int("max-in-flight", 4, "--web.max-requests-in-flight")
	budget := flag.Duration("budget", 50*time.Millisecond, "greatest acceptable /ready p99")
	settle := flag.Duration("settle", 5*time.Second, "wait after start-up, for the first probes of every backend to be done, before the flood")
	backOff := flag.Bool("retry-after", false, "scrapers wait the Retry-After of a 503 (1s) before the next scrape, as a polite client does; without it they ask again at once, as an attacker does")
	legacy := flag.Bool("legacy", false, "measure a binary older than --web.max-requests-in-flight and --web.admin-listen-address: pass neither")
	flag.Parse()
	if *legacy {
		*maxInFlight = 0
	}
	if err := bench(*binary, *backends, *scrapers, *duration, *settle, *maxInFlight, *budget, *backOff); err != nil {
		fmt.Fprintln(os.Stderr, "metricsflood:", err)
		return 1
	}
	return 0
}

func bench(binary string, backends, scrapers int, duration, settle time.Duration, maxInFlight int, budget time.Duration, backOff bool) error {
	backend, err := serveLoopback(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	if err != nil {
		return err
	}
	p, err := startProbegate(binary, backend, backends, maxInFlight)
	if err != nil {
		return err
	}
	defer p.stop()
	// Every backend is probed within a second of start-up: that burst is
	// not what is measured.
	time.Sleep(settle)
	fmt.Printf("%d backends, %d scrapers without pause for %s, --web.max-requests-in-flight=%d (0: not passed)\n", backends, scrapers, duration, maxInFlight)

	spentBefore, err := cpuTimes(p.cmd.Process.Pid, os.Getpid())
	if err != nil {
		return err
	}
	floodStart := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	// The scrapers ask for gzip, as Prometheus does, but leave the body
	// compressed: decompressing it would spend the cores probegate is
	// measured on.
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: scrapers, DisableCompression: true}}
	var ok, rejected, failed atomic.Int64
	var mu sync.Mutex
	var scrapeTimes []time.Duration
	var wg sync.WaitGroup
	for range scrapers {
		wg.Go(func() {
			for ctx.Err() == nil {
				start := time.Now()
				code, err := get(ctx, client, p.main+"/metrics")
				switch {
				case err != nil:
					if ctx.Err() == nil {
						failed.Add(1)
					}
				case code == http.StatusOK:
					ok.Add(1)
					mu.Lock()
					scrapeTimes = append(scrapeTimes, time.Since(start))
					mu.Unlock()
				case code == http.StatusServiceUnavailable:
					rejected.Add(1)
					if backOff {
						select {
						case <-ctx.Done():
						case <-time.After(time.Second):
						}
					}
				default:
					failed.Add(1)
				}
			}
		})
	}
	var ready []time.Duration
	var readyFailed int
	readyClient := &http.Client{Timeout: 5 * time.Second}
	for tick := time.NewTicker(20 * time.Millisecond); ctx.Err() == nil; <-tick.C {
		start := time.Now()
		code, err := get(context.Background(), readyClient, p.health+"/ready")
		if err != nil || code != http.StatusOK {
			readyFailed++
		}
		ready = append(ready, time.Since(start))
	}
	wg.Wait()
	spentAfter, err := cpuTimes(p.cmd.Process.Pid, os.Getpid())
	if err != nil {
		return err
	}
	elapsed := time.Since(floodStart).Seconds()
	cores, ownCores := (spentAfter[0]-spentBefore[0]).Seconds()/elapsed, (spentAfter[1]-spentBefore[1]).Seconds()/elapsed
	peak, err := peakRSS(p.cmd.Process.Pid)
	if err != nil {
		return err
	}
	fmt.Printf("/metrics: %d served (p50 %s, p99 %s), %d refused 503, %d failed\n",
		ok.Load(), percentile(scrapeTimes, 0.5), percentile(scrapeTimes, 0.99), rejected.Load(), failed.Load())
	p99 := percentile(ready, 0.99)
	fmt.Printf("/ready on the health listener: %d polls, p50 %s, p99 %s, max %s, %d not 200 (budget p99 <= %s)\n",
		len(ready), percentile(ready, 0.5), p99, percentile(ready, 1), readyFailed, budget)
	fmt.Printf("peak RSS: %.0f MiB; CPU during the flood: probegate %.2f cores, the clients %.2f\n", float64(peak)/(1<<20), cores, ownCores)
	if p99 > budget || readyFailed > 0 {
		return fmt.Errorf("/ready p99 %s (budget %s), %d polls not 200", p99, budget, readyFailed)
	}
	return nil
}

// get asks url and reads the whole answer.
func get(ctx context.Context, client *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// percentile is the q-quantile of ds, nearest rank; 0 for none.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))].Round(100 * time.Microsecond)
}

// peakRSS is the process's peak resident set (VmHWM), in bytes.
func peakRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kib << 10, err
		}
	}
	return 0, errors.New("no VmHWM in /proc/PID/status")
}

// cpuTimes is the CPU time each process has spent, user and system, from
// /proc/PID/stat (fields 14 and 15, in clock ticks of 1/100 s, as on
// every Linux architecture Go builds for).
func cpuTimes(pids ...int) ([]time.Duration, error) {
	spent := make([]time.Duration, len(pids))
	for i, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return nil, err
		}
		// The command name, field 2, is in parentheses and may hold
		// spaces: the fields counted start after its closing one, at
		// field 3.
		_, rest, ok := strings.Cut(string(data), ") ")
		fields := strings.Fields(rest)
		if !ok || len(fields) < 13 {
			return nil, fmt.Errorf("/proc/%d/stat: too few fields", pid)
		}
		for _, f := range fields[11:13] {
			ticks, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("/proc/%d/stat: %w", pid, err)
			}
			spent[i] += time.Duration(ticks) * 10 * time.Millisecond
		}
	}
	return spent, nil
}

// serveLoopback serves h on a free loopback port for the life of the
// process and returns its host:port.
func serveLoopback(h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go http.Serve(ln, h)
	return ln.Addr().String(), nil
}

type probegate struct {
	cmd          *exec.Cmd
	main, health string
	dir          string
}

func (p *probegate) stop() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
	os.RemoveAll(p.dir)
}

// startProbegate runs the binary with n backends, all answered by
// backend, and waits until /ready passes on its health listener.
func startProbegate(binary, backend string, n, maxInFlight int) (*probegate, error) {
	dir, err := os.MkdirTemp("", "metricsflood")
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	// The budget always holds: /ready answers 200 unless probegate is too
	// slow to answer at all, which is what is measured.
	b.WriteString("health_probe: {path: /, interval: 30s, timeout: 1s}\nreadiness: {max_unavailable: 100%}\nbackends:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {name: b%05d, url: \"http://%s/b%05d\"}\n", i, backend, i)
	}
	cfg := filepath.Join(dir, "probegate.yml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	main, health := freeAddr(), freeAddr()
	args := []string{"--config.file=" + cfg, "--web.listen-address=" + main, "--web.health-listen-address=" + health, "--log.level=error"}
	if maxInFlight > 0 {
		args = append(args, "--web.admin-listen-address=", "--web.max-requests-in-flight="+strconv.Itoa(maxInFlight))
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", binary, err)
	}
	p := &probegate{cmd: cmd, main: "http://" + main, health: "http://" + health, dir: dir}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if code, err := get(context.Background(), http.DefaultClient, p.health+"/ready"); err == nil && code == http.StatusOK {
			return p, nil
		}
	}
	p.stop()
	return nil, errors.New("probegate /ready did not pass within 60s")
}

// freeAddr is a loopback address whose port was free a moment ago.
func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	defer ln.Close()
	return ln.Addr().String()
}
