package discovery

import (
	"strings"
	"testing"

	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/testconfig"
)

// TestStaticBackendAtAPeerIsLeftOut: a static backend the loop rule
// reports (a peer replica's listener, learned after the configuration
// was loaded) is left out of the targets while the rule reports it, and
// logged once while it lasts; its name stays the configuration's, so no
// discovered target takes it; and it is back once the rule no longer
// reports it.
func TestStaticBackendAtAPeerIsLeftOut(t *testing.T) {
	cfg := testconfig.New(config.Backend{Name: "real", URL: "http://127.0.0.1:19001"}, config.Backend{Name: "peer", URL: "http://127.0.0.1:19797"})
	r := startDiscovery(t, cfg)
	names := func() string {
		var n []string
		for _, tg := range r.Targets(cfg) {
			n = append(n, tg.Name)
		}
		return strings.Join(n, ",")
	}
	if got := names(); got != "real,peer" {
		t.Fatalf("targets %s before any loop rule; want real,peer", got)
	}
	r.DetectLoops(func(u string) bool { return u == "http://127.0.0.1:19797" })
	for range 2 {
		if got := names(); got != "real" {
			t.Errorf("targets %s with peer's URL a loop; want real alone", got)
		}
	}
	if n := strings.Count(r.logs.String(), "Static backend points at a peer replica's listener"); n != 1 {
		t.Errorf("logged %d times; want once while it lasts:\n%s", n, r.logs)
	}
	if !strings.Contains(r.logs.String(), "backend=peer") {
		t.Errorf("the log does not name the backend:\n%s", r.logs)
	}
	r.DetectLoops(func(string) bool { return false })
	if got := names(); got != "real,peer" {
		t.Errorf("targets %s once the rule no longer reports peer; want real,peer", got)
	}
}
