// Package collector holds no code: it is the folder of the packages that
// probe the backends, judge them and export what they know. Each is a
// package of its own, and none imports this one or another folder above it:
//
//	health      the class of a probe result and the state machine (pure)
//	budget      the readiness budget's arithmetic (pure)
//	history     a backend's past: probe rings, transitions, downtime (pure)
//	passive     passive health: a backend's window and ejections (pure)
//	outlier     outlier detection's rules and per-backend state (pure)
//	traffic     the words of fan-out traffic (plain data)
//	entries     the maintenance entry and the set in force (plain data)
//	httpclient  the one HTTP stack: a shared client per client configuration
//	pool        backends, selection, fail-open, overlays, timed work, snapshots
//	probe       the scheduler and one file per probe kind
//	debugprobe  the admin API's debug probe of one backend
//	fanout      the fan-out round, forwarding, and the merge formats
//	discovery   where backends come from
//	maintenance maintenance decisions; store keeps the entries
//	readiness   whether this replica is ready
//	exporter    the /metrics series, probegate's own metrics, and /healthz
//	status      the /status pages and the JSON introspection endpoints
//	admin       the admin API's guard and the client's address
//
// docs/design.md tells how they fit together and why.
package collector
