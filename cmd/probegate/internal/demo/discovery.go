package demo

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/prometheus/discovery/file"
)

// swapEvery is how often the demo's discovery file swaps its backend.
const swapEvery = 10 * time.Second

// discovery is the demo's service discovery: a file_sd file listing
// one of two live loopback backends, rewritten every swapEvery to list
// the other, so the tour shows backends joining and leaving the pool.
type discovery struct {
	path string
	// listed is how many backends the file lists at a time.
	listed int
	stop   func()
}

// startDiscovery starts the two backends and the file that lists them
// in turn, and returns the file_sd block to read it.
func startDiscovery(probePath string) (*discovery, *file.SDConfig, error) {
	dir, err := os.MkdirTemp("", "probegate-demo-sd")
	if err != nil {
		return nil, nil, err
	}
	var servers []*http.Server
	var releases []func() error
	closeAll := func() {
		for _, s := range servers {
			s.Close()
		}
		os.RemoveAll(dir)
	}
	var entries [2]string
	for i, name := range []string{"discovered-a", "discovered-b"} {
		d := backend{name: name, health: func() int { return http.StatusOK }, query: http.StatusOK}
		url, _, err := d.start(probePath, &servers, &releases)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("demo backend %s: %w", name, err)
		}
		entries[i] = fmt.Sprintf("- targets: [%q]\n  labels: {backend: %s}\n", strings.TrimPrefix(url, "http://"), name)
	}
	path := filepath.Join(dir, "discovered.yml")
	write := func(i int) error {
		// A rename, so that the watcher never reads half a file.
		if err := os.WriteFile(path+".tmp", []byte(entries[i%2]), 0o644); err != nil {
			return err
		}
		return os.Rename(path+".tmp", path)
	}
	if err := write(0); err != nil {
		closeAll()
		return nil, nil, err
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(swapEvery)
		defer tick.Stop()
		for i := 1; ; i++ {
			select {
			case <-tick.C:
				write(i)
			case <-done:
				return
			}
		}
	})
	d := &discovery{path: path, listed: 1, stop: func() {
		close(done)
		wg.Wait()
		closeAll()
	}}
	return d, &file.SDConfig{Files: []string{path}, RefreshInterval: file.DefaultSDConfig.RefreshInterval}, nil
}

// printBanner tells the operator about the discovered backends.
func (d *discovery) printBanner(w io.Writer) {
	fmt.Fprintf(w, "Service discovery: %s lists discovered-a, then discovered-b,\nswapped every %s: watch them join and leave /healthz.\n\n", d.path, swapEvery)
}
