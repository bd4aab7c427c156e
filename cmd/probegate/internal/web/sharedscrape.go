package web

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"
)

// Encoding the metrics of 10,000 backends costs about as much CPU as
// gathering them, and more with gzip: four scrapes in flight encoding the
// same families at once kept both cores of a small machine busy, and /ready
// on the health listener waited for them. Scrapes in flight at the same
// time that ask for the same encoding get the same bytes instead: one
// gathering and one encoding serve them all.
//
// Sharing made each answer cheap, not rare: scrapers that ask again as
// soon as they have their answer kept one answer in the making at every
// moment, a core busy with it and the garbage collector on the other, and
// /ready still waited behind them. So the answers are made one at a time,
// whatever their encoding, and each follows a rest as long as the last one
// took to make: the metrics take at most half of one core's time however
// hard they are asked, and on a machine whose cores are busy elsewhere,
// where answers take longer, the rests grow with them. A scrape that
// arrives during a rest waits for the next answer, at most as long again
// as the last one took; one that arrives after it waits for nothing.

// ShareScrapes serves concurrent requests that ask for the same encoding
// (the same Accept and Accept-Encoding) with one run of metrics,
// whose answer is kept in memory until its last waiter has it. Runs are
// made one at a time, each after a rest as long as the last run took.
// Bound the scrapes in flight in front of it: sharing makes them cheap,
// not few.
func ShareScrapes(metrics http.Handler) http.Handler {
	var flight singleflight.Group
	// turn is held by the run being made, and through the rest before it.
	turn := make(chan struct{}, 1)
	var rested time.Time // when the last run's rest ends; read and written holding turn
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// promhttp reads no query: scrapes that differ only by theirs get
		// the same answer, and must not each cost an encoding of their own.
		// It negotiates over every line of Accept and Accept-Encoding,
		// not the first alone.
		key := strings.Join([]string{r.Method,
			strings.Join(r.Header.Values("Accept"), ","),
			strings.Join(r.Header.Values("Accept-Encoding"), ",")}, "\n")
		shared, _, _ := flight.Do(key, func() (any, error) {
			turn <- struct{}{}
			defer func() { <-turn }()
			if rest := time.Until(rested); rest > 0 {
				wait := time.NewTimer(rest)
				<-wait.C
			}
			start := time.Now()
			rec := &recordedAnswer{header: http.Header{}}
			metrics.ServeHTTP(rec, r)
			end := time.Now()
			rested = end.Add(end.Sub(start))
			return rec, nil
		})
		rec := shared.(*recordedAnswer)
		for name, values := range rec.header {
			w.Header()[name] = slices.Clone(values)
		}
		w.WriteHeader(rec.statusOrOK())
		_, _ = w.Write(rec.body.Bytes())
	})
}

// recordedAnswer is an http.ResponseWriter that keeps the answer, for
// several clients to be given; it is read only once written whole.
type recordedAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (a *recordedAnswer) Header() http.Header { return a.header }

func (a *recordedAnswer) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
}

func (a *recordedAnswer) Write(p []byte) (int, error) {
	a.WriteHeader(http.StatusOK)
	return a.body.Write(p)
}

func (a *recordedAnswer) statusOrOK() int {
	if a.status == 0 {
		return http.StatusOK
	}
	return a.status
}
