// Package snapshot is the read side of the pool: Pool and Backend are
// consistent copies of a pool and of one backend at one moment, taken
// under the pool's locks and then read without any. /metrics, /healthz,
// the status page and the maintenance API read these, so that what they
// show is plain data and they need none of the pool's machinery to test.
//
// It is plain data: the pool fills it (collector/pool) and nothing here
// reads a clock or takes a lock.
package snapshot
