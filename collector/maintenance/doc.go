// Package maintenance decides the taking of backends out of service for
// maintenance: the manager that grants an entry by the readiness budget
// and writes it by a compare-and-swap on the store, the admin API and the
// wire types the CLI shares, and the views that replicas sharing a store
// publish of themselves. The entry itself and the set in force live in
// collector/entries, the stores in collector/maintenance/store;
// the pool applies the entries in force (collector/pool, maintenance.go).
package maintenance
