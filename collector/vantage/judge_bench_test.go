package vantage

import (
	"context"
	"fmt"
	"testing"
	"time"

	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/collector/fleet"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/internal/testconfig"
)

// BenchmarkJudgeAll is the coordinator's once-a-second judgement of
// 10,000 backends over 5 replicas with two vantage points each, every
// verdict published: what shared probing costs a replica beside its
// probes, per second.
func BenchmarkJudgeAll(b *testing.B) {
	const backends, replicas = 10_000, 5
	targets := make([]pool.Target, backends)
	names := make([]string, backends)
	for i := range targets {
		names[i] = fmt.Sprintf("backend-%05d", i)
		targets[i] = pool.Target{Name: names[i], URL: fmt.Sprintf("http://127.0.0.1:%d", 20000+i%40000), Probe: testconfig.Probe(), ClientConfig: commoncfg.DefaultHTTPClientConfig}
	}
	now := time.Unix(1_700_000_000, 0)
	p := pool.New(nil, func() time.Time { return now })
	if err := p.Apply(targets, pool.Settings{}); err != nil {
		b.Fatal(err)
	}
	live := []string{"r1", "r2", "r3", "r4", "r5"}
	members := fleet.NewMembers(live)
	st := newFakeStore()
	for _, r := range live[1:] {
		var ops []fleet.Op
		for _, name := range share(members, r, names, 2) {
			v, _ := fleet.Encode(fleet.Verdict{State: health.StateHealthy, Verified: true, Reachable: true, Probed: true, Since: now})
			ops = append(ops, fleet.Op{Key: st.of(r).VerdictKey(r, name), Value: v})
		}
		st.of(r).PublishVerdicts(context.Background(), ops)
	}
	c := New(Options{Pool: p, Self: "r1", VantagePoints: 2, Store: st.of("r1"),
		Members: func() ([]string, time.Time) { return live, now }, Resync: func() {}, Now: func() time.Time { return now }})
	c.attach()
	c.o.Store.WatchVerdicts(context.Background(), c.onUpdate)
	c.judgeAt(now)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		now = now.Add(rejudge)
		c.state.Lock()
		c.judgeAll(now)
		c.state.Unlock()
	}
}
