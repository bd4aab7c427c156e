package fanout

import (
	"errors"
	"net"
	"testing"

	"github.com/probegate/probegate/config"
)

// TestCheckBackendsNamesEveryLoop: every static backend on one of
// probegate's own listeners is named, by its index and with its password
// hidden, and backends elsewhere are not.
func TestCheckBackendsNamesEveryLoop(t *testing.T) {
	self := NewSelf([]net.Addr{&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 9797}}, nil, nil)
	cfg := config.Default()
	cfg.Backends = []config.Backend{
		{Name: "other", URL: "http://127.0.0.1:9798"},
		{Name: "fanout", URL: "http://127.0.0.1:9797/fanout"},
		{Name: "root", URL: "http://user:hunter2@localhost:9797"},
	}
	var e *config.Error
	if err := self.CheckBackends(cfg); !errors.As(err, &e) || len(e.Problems) != 2 {
		t.Fatalf("CheckBackends = %v, want two problems", err)
	}
	for i, want := range []config.Problem{
		{Field: "backends[1].url", Message: `backend "fanout": http://127.0.0.1:9797/fanout points at one of probegate's own listeners: probegate would probe and fan out to itself`},
		{Field: "backends[2].url", Message: `backend "root": http://user:xxxxx@localhost:9797 points at one of probegate's own listeners: probegate would probe and fan out to itself`},
	} {
		if e.Problems[i] != want {
			t.Errorf("problem %d = %+v, want %+v", i, e.Problems[i], want)
		}
	}
	cfg.Backends = cfg.Backends[:1]
	if err := self.CheckBackends(cfg); err != nil {
		t.Errorf("CheckBackends without a loop = %v, want nil", err)
	}
	if err := (*Self)(nil).CheckBackends(cfg); err != nil {
		t.Errorf("a nil Self = %v, want nil", err)
	}
}
