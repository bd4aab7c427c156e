package probe

import (
	"fmt"
	"syscall"
	"testing"
)

// benchOtherDescriptors is what the probing benchmark keeps free of its
// open-file limit for everything but the probers' kept connections: the
// test binary's own files, the pipes to the bench servers, and the
// connections of the probes in flight, which at 20,000 backends are up
// to a slot's worth (about 250) at once, more when probes fall behind.
const benchOtherDescriptors = 512

// benchCount is how many backends one prober of the probing benchmark is
// measured at, and why when it is fewer than asked.
type benchCount struct {
	backends int
	why      string
}

// benchFit is the number of backends, at most n, that a prober holding
// perBackend descriptors of this process per backend can probe within
// the open-file limit, benchOtherDescriptors kept free for the rest.
// Fewer than n is rounded down to a thousand, so that the count says
// plainly that it is not the size asked for. A prober whose connections
// live only while a probe is in flight, or in another process, holds
// none per backend (perBackend 0) and always fits.
func benchFit(n, perBackend int, limit uint64) benchCount {
	if perBackend == 0 || uint64(perBackend*n)+benchOtherDescriptors <= limit {
		return benchCount{backends: n}
	}
	fits := 0
	if limit > benchOtherDescriptors {
		fits = int(limit-benchOtherDescriptors) / perBackend / 1000 * 1000
	}
	what := "a kept connection"
	if perBackend > 1 {
		what = fmt.Sprintf("%d connections", perBackend)
	}
	return benchCount{
		backends: fits,
		why: fmt.Sprintf("%d backends need %s each, %d descriptors with the %d this process keeps for the rest, over its open-file limit of %d, which cannot be raised",
			n, what, perBackend*n+benchOtherDescriptors, benchOtherDescriptors, limit),
	}
}

// raisedFileLimit lifts the soft open-file limit to the hard one and
// returns it.
func raisedFileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("read the open-file limit: %w", err)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("raise the open-file limit to %d: %w", lim.Max, err)
	}
	return lim.Cur, nil
}

func TestBenchFit(t *testing.T) {
	cases := []struct {
		name            string
		n, perBackend   int
		limit           uint64
		wantBackends    int
		wantExplanation bool
	}{
		{"fits with room to spare", 5000, 1, 20000, 5000, false},
		{"fits exactly", 19488, 1, 20000, 19488, false},
		{"one backend too many", 19489, 1, 20000, 19000, true},
		{"20,000 kept connections under a limit of 20,000", 20000, 1, 20000, 19000, true},
		{"two connections per backend", 20000, 2, 20000, 9000, true},
		{"a connection per probe in flight always fits", 20000, 0, 20000, 20000, false},
		{"a limit below the reserve fits nothing", 1000, 1, 100, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := benchFit(c.n, c.perBackend, c.limit)
			if got.backends != c.wantBackends || (got.why != "") != c.wantExplanation {
				t.Errorf("benchFit(%d, %d, %d) = %+v, want %d backends (explained: %v)", c.n, c.perBackend, c.limit, got, c.wantBackends, c.wantExplanation)
			}
		})
	}
}
