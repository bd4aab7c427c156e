// Command readybench measures probegate's /ready under wrk against a bare
// net/http handler in the same run (the budget: at least 0.8 of its
// requests per second). It starts a loopback backend, the probegate binary
// in front of it and the bare handler, runs wrk against each in alternating
// rounds and prints every round. The verdict is the median of the rounds'
// ratios: each round pairs two runs moments apart, so a burst of other work
// on the machine spoils one round, not the result. It exits 1 when the
// median is below the budget. `make bench-ready` runs it.
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
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() { os.Exit(run()) }

func run() int {
	binary := flag.String("binary", "./probegate", "probegate binary to measure")
	duration := flag.Duration("duration", 3*time.Second, "length of one wrk run")
	rounds := flag.Int("rounds", 5, "alternating rounds of bare handler and /ready")
	connections := flag.Int("connections", 64, "wrk connections")
	threads := flag.Int("threads", 2, "wrk threads")
	budget := flag.Float64("budget", 0.8, "least acceptable ratio of /ready to bare requests per second")
	flag.Parse()

	if err := bench(*binary, *duration, *rounds, *connections, *threads, *budget); err != nil {
		fmt.Fprintln(os.Stderr, "readybench:", err)
		return 1
	}
	return 0
}

func bench(binary string, duration time.Duration, rounds, connections, threads int, budget float64) error {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		return errors.New("wrk is not installed: run `make deps`")
	}
	backend, err := serveLoopback(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	if err != nil {
		return err
	}
	// The bare handler: what any net/http server answers at the least.
	bare, err := serveLoopback(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok")
	}))
	if err != nil {
		return err
	}
	probegate, stop, err := startProbegate(binary, backend)
	if err != nil {
		return err
	}
	defer stop()

	wrkArgs := []string{"-t", strconv.Itoa(threads), "-c", strconv.Itoa(connections), "-d", duration.String()}
	fmt.Printf("wrk %s, %d rounds, GOMAXPROCS of both servers: the machine's %d cores shared with wrk\n",
		strings.Join(wrkArgs, " "), rounds, numCPU())
	var bareSum, readySum float64
	var ratios []float64
	for round := 1; round <= rounds; round++ {
		bareRPS, err := runWrk(wrk, wrkArgs, bare+"/")
		if err != nil {
			return fmt.Errorf("bare handler: %w", err)
		}
		readyRPS, err := runWrk(wrk, wrkArgs, probegate+"/ready")
		if err != nil {
			return fmt.Errorf("probegate /ready: %w", err)
		}
		fmt.Printf("round %d: bare %10.0f req/s   /ready %10.0f req/s   ratio %.2f\n", round, bareRPS, readyRPS, readyRPS/bareRPS)
		bareSum += bareRPS
		readySum += readyRPS
		ratios = append(ratios, readyRPS/bareRPS)
	}
	slices.Sort(ratios)
	median := ratios[len(ratios)/2]
	fmt.Printf("mean:    bare %10.0f req/s   /ready %10.0f req/s   ratio %.2f\n",
		bareSum/float64(rounds), readySum/float64(rounds), readySum/bareSum)
	fmt.Printf("median ratio of the rounds: %.2f (budget >= %.2f)\n", median, budget)
	if median < budget {
		return fmt.Errorf("/ready reaches %.2f of the bare handler's requests per second, below the budget %.2f", median, budget)
	}
	return nil
}

// serveLoopback serves h on a free loopback port for the life of the
// process and returns its base URL.
func serveLoopback(h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go http.Serve(ln, h)
	return "http://" + ln.Addr().String(), nil
}

// startProbegate runs the binary against backend on a free loopback port
// and waits until /ready passes.
func startProbegate(binary, backend string) (base string, stop func(), err error) {
	dir, err := os.MkdirTemp("", "readybench")
	if err != nil {
		return "", nil, err
	}
	cfg := filepath.Join(dir, "probegate.yml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "health_probe: {path: /, interval: 5s, timeout: 1s}\nbackends:\n  - {name: a, url: %q}\n", backend), 0o644); err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	// No admin listener: its default port may be another probegate's.
	cmd := exec.Command(binary, "--config.file="+cfg, "--web.listen-address="+addr, "--web.admin-listen-address=", "--log.level=warn")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start %s: %w", binary, err)
	}
	stop = func() {
		cmd.Process.Kill()
		cmd.Wait()
		os.RemoveAll(dir)
	}
	base = "http://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if resp, err := http.Get(base + "/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base, stop, nil
			}
		}
		select {
		case <-ctx.Done():
			stop()
			return "", nil, fmt.Errorf("probegate /ready did not pass within 10s")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

var (
	requestsPerSecond = regexp.MustCompile(`(?m)^Requests/sec:\s+([0-9.]+)`)
	errorsLine        = regexp.MustCompile(`(?m)^\s*(Non-2xx or 3xx responses|Socket errors):.*$`)
)

// runWrk runs wrk against url and returns its requests per second. Any
// error or non-2xx answer makes the run invalid: a failing /ready would be
// measured cheaper than a passing one.
func runWrk(wrk string, args []string, url string) (float64, error) {
	out, err := exec.Command(wrk, append(args, url)...).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("wrk: %w\n%s", err, out)
	}
	if m := errorsLine.FindString(string(out)); m != "" {
		return 0, fmt.Errorf("wrk saw failures (%s):\n%s", strings.TrimSpace(m), out)
	}
	m := requestsPerSecond.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no Requests/sec in wrk's output:\n%s", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

func numCPU() int { return runtime.NumCPU() }
