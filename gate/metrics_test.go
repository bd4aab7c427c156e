package gate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	g := New(Options{})
	reg.MustRegister(g)
	g.Register("db", func(context.Context) error { return nil })
	g.Register("cache", func(context.Context) error { return errors.New("down") })

	const notReady = `
# HELP probegate_gate_check_success Whether the readiness check passed in its latest evaluation (1) or not (0).
# TYPE probegate_gate_check_success gauge
probegate_gate_check_success{check="cache"} 0
probegate_gate_check_success{check="db"} 1
# HELP probegate_gate_draining Whether the drain has begun (1) or not (0).
# TYPE probegate_gate_draining gauge
probegate_gate_draining 0
# HELP probegate_gate_ready Whether /ready answers 200: not draining and every check passes (1) or not (0).
# TYPE probegate_gate_ready gauge
probegate_gate_ready 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(notReady)); err != nil {
		t.Error(err)
	}
}

func TestMetricsReadyThenDraining(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	g := New(Options{Namespace: "app"})
	reg.MustRegister(g)
	g.Register("db", func(context.Context) error { return nil })
	for _, tc := range []struct{ ready, draining string }{{"1", "0"}, {"0", "1"}} {
		if tc.draining == "1" {
			g.beginDrain()
		}
		want := `
# HELP app_gate_draining Whether the drain has begun (1) or not (0).
# TYPE app_gate_draining gauge
app_gate_draining ` + tc.draining + `
# HELP app_gate_ready Whether /ready answers 200: not draining and every check passes (1) or not (0).
# TYPE app_gate_ready gauge
app_gate_ready ` + tc.ready + `
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "app_gate_ready", "app_gate_draining"); err != nil {
			t.Errorf("draining=%s: %v", tc.draining, err)
		}
	}
}
