// Package hedge decides when a fan-out round asks a second replica of a
// group whose chosen replica is late, and how many such hedges the
// fan-out may send: the delay (Delay), the group's recent answers it is
// read from (Window), and the token bucket that keeps hedges within a
// share of the backend requests (Bucket).
//
// Nothing here does I/O or reads a clock: the fan-out passes in each
// answer's latency and is told how long to wait before it hedges.
//
// # The p95 of the last 1,000 answers, in bounded memory
//
// The automatic delay is the group's 95th percentile over its last 1,000
// answers, read once a round and recorded once an answer, so both must be
// cheap and the memory a group keeps must not grow with its traffic. Two
// ways keep exactly the last 1,000 answers: a ring of their durations with
// a sorted copy beside it (exact; 16 KB a group; a record finds the evicted
// and the new duration by binary search and shifts the sorted copy to take
// one out and put the other in), or a ring of bucket numbers over a fixed
// histogram of log-scale buckets (within 1/16 of the true value, never
// below it; 3 KB a group; a record is two counter updates). Window is the
// second. BenchmarkWindowRecord and BenchmarkExactWindowRecord measure them
// side by side: on the shared 2-core development machine 7 to 33 ns a
// record against 400 to 1,200 ns (30 to 60 times less within one run), both
// without allocation; a read is 18 to 25 ns against 3 to 5 ns, the
// histogram visiting at most 51 non-empty buckets, found through a bitmap.
// A round reads once and each of its answers records once, so the histogram
// is the cheaper of the two per round as well as per group. A hedge delay
// within 6% of the true p95 and never shorter than it hedges no more than
// the exact one would, and the memory matters more than the precision: a
// pool of 5,000 backends in pairs keeps 2,500 windows, 7.5 MB of histograms
// against 40 MB of exact durations.
package hedge
