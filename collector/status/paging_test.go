package status

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/fanout"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/internal/testconfig"
)

// bigPool is a pool of n backends named b00000, b00001, … whose last round
// asked every one of them. The first 200, which the first pages show, have
// a full probe history, the largest row there is.
func bigPool(t *testing.T, n int, now time.Time) (*pool.Pool, *fanout.RoundSummary) {
	t.Helper()
	probe := testconfig.Probe()
	targets := make([]pool.Target, n)
	round := &fanout.RoundSummary{Time: now, Configured: n, Contributed: n}
	for i := range targets {
		name := fmt.Sprintf("b%05d", i)
		targets[i] = pool.Target{Name: name, URL: fmt.Sprintf("http://127.0.0.1:%d", 10000+i), Probe: probe, ClientConfig: commoncfg.DefaultHTTPClientConfig}
		round.Backends = append(round.Backends, fanout.RoundBackend{Name: name, Outcome: fanout.OutcomeContributed, Status: 200})
	}
	p := pool.New(log.NewNopLogger(), func() time.Time { return now })
	if err := p.Apply(targets, pool.Settings{}); err != nil {
		t.Fatal(err)
	}
	for _, b := range p.Backends()[:200] {
		for range 60 {
			b.RecordProbe(health.StatusResult(200))
		}
	}
	return p, round
}

// TestPageAtTenThousandBackends: at 10,000 backends /status is under
// 1 MB; the backends that need a person come first, whatever their place
// in the configuration; the pool is summed up by state; the other
// backends are on further pages, and the last round lists its failures
// first and leaves the rest out.
func TestPageAtTenThousandBackends(t *testing.T) {
	now := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	p, round := bigPool(t, 10_000, now)
	for range 3 {
		p.Backends()[9_999].RecordProbe(health.StatusResult(503))
	}
	p.SetMaintenance([]entries.Entry{{Backend: "b07777", Reason: "disk", By: "ops"}}, entries.KeptByClock)
	round.Backends[9_998] = fanout.RoundBackend{Name: "b09998", Outcome: fanout.OutcomeFailed, Reason: fanout.MissingTimeout}
	h := Handler(Options{Pool: p, LastRound: func() *fanout.RoundSummary { return round }, Started: now, MetricsPath: "/metrics"})

	rec := get(t, h, "/status")
	body := rec.Body.String()
	if rec.Code != 200 || len(body) > 1<<20 {
		t.Fatalf("/status at 10,000 backends: %d, %d bytes; want 200 and at most 1 MiB", rec.Code, len(body))
	}
	rows := strings.Count(body, "<tr data-backend=")
	if rows != pageSize {
		t.Errorf("%d backend rows; want a page of %d", rows, pageSize)
	}
	first, second := strings.Index(body, `data-backend="`), -1
	if first >= 0 {
		second = strings.Index(body[first+1:], `data-backend="`)
	}
	if !strings.HasPrefix(body[first:], `data-backend="b07777"`) && !strings.HasPrefix(body[first:], `data-backend="b09999"`) || second < 0 {
		t.Errorf("the first rows are not the backends needing attention")
	}
	for _, want := range []string{
		`<tr data-backend="b07777" data-state="maintenance"`,
		`<tr data-backend="b09999" data-state="unhealthy"`,
		`10000 backends:`, `unknown</span> 9798`, `healthy</span> 200`, `maintenance</span> 1`, `unhealthy</span> 1`,
		`page 1 of 100`, `href="?page=2" rel="next"`,
		`<tr data-round-backend="b09998" data-outcome="failed">`,
		`and 9900 more backends of the round`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page 1 lacks %q", want)
		}
	}
	if strings.Index(body, `data-backend="b07777"`) > strings.Index(body, `data-backend="b00000"`) {
		t.Error("a healthy backend comes before one in maintenance")
	}

	last := get(t, h, "/status?page=100&refresh=0").Body.String()
	for _, want := range []string{`<tr data-backend="b09997"`, `page 100 of 100`, `href="?page=99&amp;refresh=0" rel="prev"`} {
		if !strings.Contains(last, want) {
			t.Errorf("page 100 lacks %q", want)
		}
	}
	if strings.Contains(last, `data-backend="b09999"`) {
		t.Error("a backend needing attention is shown again on the last page")
	}
	if code := get(t, h, "/status?page=0").Code; code != 400 {
		t.Errorf("page=0: %d; want 400", code)
	}
}
