package web

import (
	"bytes"
	"net/http"
	"slices"
	"strings"

	"golang.org/x/sync/singleflight"
)

// Encoding the metrics of 10,000 backends costs about as much CPU as
// gathering them, and more with gzip: four scrapes in flight encoding the
// same families at once kept both cores of a small machine busy, and /ready
// on the health listener waited for them. Scrapes in flight at the same
// time that ask for the same encoding get the same bytes instead: one
// gathering and one encoding serve them all.

// ShareScrapes serves concurrent requests that ask for the same encoding
// (the same Accept and Accept-Encoding) with one run of metrics,
// whose answer is kept in memory until its last waiter has it. Bound the
// scrapes in flight in front of it: sharing makes them cheap, not few.
func ShareScrapes(metrics http.Handler) http.Handler {
	var flight singleflight.Group
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// promhttp reads no query: scrapes that differ only by theirs get
		// the same answer, and must not each cost an encoding of their own.
		// It negotiates over every line of Accept and Accept-Encoding,
		// not the first alone.
		key := strings.Join([]string{r.Method,
			strings.Join(r.Header.Values("Accept"), ","),
			strings.Join(r.Header.Values("Accept-Encoding"), ",")}, "\n")
		shared, _, _ := flight.Do(key, func() (any, error) {
			rec := &recordedAnswer{header: http.Header{}}
			metrics.ServeHTTP(rec, r)
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
