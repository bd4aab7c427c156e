// Package exporter exports what the pool knows: the per-backend and pool
// series Prometheus scrapes (built at scrape time from one pool snapshot, so
// a backend removed by reload vanishes from the next scrape), probegate's
// directly observed metrics, the gathering the scrapes in flight share, and
// the /healthz document.
package exporter
