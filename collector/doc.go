// Package collector exports what the pool knows: the per-backend and pool
// series Prometheus scrapes (built at scrape time from one pool snapshot, so
// a backend removed by reload vanishes from the next scrape), probegate's
// directly observed metrics, and the /healthz document.
//
// The work itself lives in the sub-packages, each behind a small face:
//
//	health     the class of a probe result and the state machine (pure)
//	httpclient the one HTTP stack: a shared client per client configuration
//	pool       backends, selection, fail-open, the readiness budget, passive health
//	probe      the scheduler and one function type per probe kind
//	fanout     the fan-out round, forwarding, and the merge formats
//	discovery  where backends come from
//	reconcile  the pool and its prober kept in step with reloads and discovery
//
// docs/design.md tells how they fit together and why.
package collector
