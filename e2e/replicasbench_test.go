package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"
)

// BenchmarkReplicaMaintenance measures, across three replicas on a
// three-member etcd cluster, how long a maintenance write takes (POST and
// DELETE alternately, on the replicas in turn) and how long until every
// other replica shows its result: the convergence lag, which the watch
// keeps far under the one-second promise.
func BenchmarkReplicaMaintenance(b *testing.B) {
	cluster := startEtcdCluster(b, 3)
	cfg := replicaConfig(b, cluster, "/probegate/bench", "{min_available: 1}", unprobed, unprobedURLs(3))
	replicas := startReplicas(b, cfg, cfg, cfg)
	var writes, lags []time.Duration
	b.ResetTimer()
	for i := range b.N {
		r := replicas[i%3]
		method, want := "POST", []string{"b0"}
		if i%2 == 1 {
			method, want = "DELETE", nil
		}
		start := time.Now()
		code, _, body := apiCall(b, method, r.admin+"/api/v1/backends/b0/maintenance", `{"reason":"bench"}`)
		written := time.Now()
		if code != http.StatusOK {
			b.Fatalf("%s: %d %s", method, code, body)
		}
		writes = append(writes, written.Sub(start))
		deadline := written.Add(5 * time.Second)
		for _, other := range replicas {
			for !slices.Equal(inMaintenance(listBackends(b, other.base)), want) {
				if time.Now().After(deadline) {
					b.Fatalf("%s did not converge within 5s", other.base)
				}
			}
		}
		lags = append(lags, time.Since(written))
	}
	b.StopTimer()
	b.ReportMetric(percentile(writes, 50).Seconds()*1e3, "write-p50-ms")
	b.ReportMetric(percentile(writes, 99).Seconds()*1e3, "write-p99-ms")
	b.ReportMetric(percentile(lags, 99).Seconds()*1e3, "converge-p99-ms")
	fmt.Printf("maintenance writes over 3 replicas on 3 etcd members: %d writes, p50 %s, p99 %s; convergence lag p99 %s (budget 200ms)\n",
		len(writes), percentile(writes, 50), percentile(writes, 99), percentile(lags, 99))
}

// percentile is the p-th percentile of ds, nearest rank.
func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, (len(s)*p+99)/100-1)]
}
