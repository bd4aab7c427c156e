package debugprobe

import (
	"context"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/deadport"
	"github.com/probegate/probegate/internal/testclock"
	"github.com/probegate/probegate/internal/testconfig"
)

// TestShowsLocalFaults: a probe that failed because probegate is out of
// descriptors shows the reason the prober counts it under, local, not a
// transport failure of the backend's.
func TestShowsLocalFaults(t *testing.T) {
	// The fault is injected through the backend's client, which a probe
	// goes through when its http_client_config needs net/http (here for
	// basic auth); a probe that owns its connection reports a real EMFILE
	// alike (collector/probe's TestOutOfDescriptorsJudgesNoBackend).
	cc := config.HTTPClientConfig{BasicAuth: &commoncfg.BasicAuth{Username: "u", Password: "p"}}
	p := newPool(t, testconfig.New(config.Backend{Name: "a", URL: deadport.URL(t), HTTPClientConfig: &cc}))
	p.Backends()[0].Client = &http.Client{Transport: &http.Transport{
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", syscall.EMFILE)}
		},
	}}
	h := Handler(Options{Pool: p, Now: testclock.New(time.Unix(1700000000, 0)).Now})
	_, _, body := get(t, h, "/api/v1/backends/a/probe")
	if rep := decode(t, body); rep.Class != "failed" || rep.Reason != "local" {
		t.Errorf("class %q reason %q, want failed and local: %s", rep.Class, rep.Reason, body)
	}
}
