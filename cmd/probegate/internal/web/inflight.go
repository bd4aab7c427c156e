package web

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The heavy pages (/healthz, the /status pages, /api/v1/) cost time and
// memory in proportion to the pool: at 10,000 backends a handful of
// clients asking without pause would take the process's memory and CPU,
// and with them /ready. Each serves at most --web.max-requests-in-flight
// requests at once and answers the excess 503 at once, as promhttp does
// for the metrics with MaxRequestsInFlight. Writes (a maintenance POST or
// DELETE, a reload) are not pages: they are small, served on the admin
// listener alone with its own connection limit, and must not be refused
// because someone reads a page; they pass unbounded here.

// PageWriteTimeout bounds the time a heavy page's answer may take to be
// written. A client that does not read would otherwise hold its slot, and
// the memory of its answer, for as long as it likes: four of them would
// refuse every scrape. A minute is longer than any Prometheus
// scrape_timeout can usefully be, at any scrape interval up to a minute.
const PageWriteTimeout = time.Minute

// refusalRetryAfter is the Retry-After of a refused read of a heavy page,
// and how long its connection then waits before its next request is read.
const refusalRetryAfter = time.Second

// heavyPages are the groups of paths that share one in-flight bound. The
// metrics, whose path is a flag, are bounded where they are mounted, and
// counted as "metrics".
var heavyPages = []string{"healthz", "status", "api"}

// heavyPage is the group of a request path, or "" for a light one.
func heavyPage(path string) string {
	switch {
	case path == "/healthz":
		return "healthz"
	case path == "/status" || strings.HasPrefix(path, "/status/"):
		return "status"
	case strings.HasPrefix(path, "/api/v1/"):
		return "api"
	}
	return ""
}

// NewRejectedCounter is probegate_http_requests_rejected_total, by group.
func NewRejectedCounter(reg prometheus.Registerer) *prometheus.CounterVec {
	rejected := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "probegate_http_requests_rejected_total",
		Help: "Requests to a heavy page answered 503 because --web.max-requests-in-flight of them were being served, by page group.",
	}, []string{"handler"})
	for _, page := range append(heavyPages, "metrics") {
		rejected.WithLabelValues(page)
	}
	reg.MustRegister(rejected)
	return rejected
}

// LimitInFlight serves next with at most limit reads (GET, HEAD) of each
// heavy page group in flight at once, each written within writeTimeout;
// one more is answered 503 with Retry-After and counted in rejected.
// Light paths and writes pass through unbounded.
func LimitInFlight(next http.Handler, limit int, writeTimeout time.Duration, rejected *prometheus.CounterVec) http.Handler {
	bounded := make(map[string]http.Handler, len(heavyPages))
	for _, page := range heavyPages {
		bounded[page] = limitPage(page, next, limit, writeTimeout, rejected)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, ok := bounded[heavyPage(r.URL.Path)]; ok {
			h.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// LimitMetrics serves the metrics handler next for GET and HEAD only,
// at most limit at once as limitPage bounds them, and answers any other
// method 405: promhttp serves every method, and limitPage lets writes
// through unbounded, so a POST would otherwise be a scrape past the bound.
func LimitMetrics(next http.Handler, limit int, writeTimeout time.Duration, rejected *prometheus.CounterVec) http.Handler {
	bounded := limitPage("metrics", next, limit, writeTimeout, rejected)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "the metrics answer GET and HEAD only", http.StatusMethodNotAllowed)
			return
		}
		bounded.ServeHTTP(w, r)
	})
}

// limitPage serves next with at most limit of its reads in flight at once;
// one more is answered 503 with Retry-After and counted under page. Writes
// pass through. A read's answer must be written within writeTimeout: the
// slot is held until it is, and a client that does not read must not
// keep it.
func limitPage(page string, next http.Handler, limit int, writeTimeout time.Duration, rejected *prometheus.CounterVec) http.Handler {
	slots := make(chan struct{}, limit)
	refused := rejected.WithLabelValues(page)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			refused.Inc()
			refuse(w, r, fmt.Sprintf("%d requests to the %s endpoints are being served, the most --web.max-requests-in-flight allows: retry shortly", limit, page))
			return
		}
		defer func() { <-slots }()
		// The deadline bounds the server's flush of the answer's end too;
		// net/http lifts it before the next request on the connection. A
		// writer that cannot set deadlines (a test's recorder) holds no
		// connection.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(writeTimeout))
		next.ServeHTTP(w, r)
	})
}

// refuse answers a read of a full heavy page 503 with Retry-After, at
// once, and then keeps its connection from asking again until the
// Retry-After has passed, unless the client goes away first. A client
// that ignores Retry-After and asks again at once would otherwise be
// refused thousands of times a second per connection, and the refusals
// alone, cheap one by one, kept both cores of a small machine busy while
// 16 clients scraped without pause. Held so, a connection is refused at
// most once per Retry-After; a client that opens new connections instead
// is bounded by --web.max-connections. The answer is complete before the
// wait (its length is declared), so the client has it at once.
func refuse(w http.ResponseWriter, r *http.Request, message string) {
	body := message + "\n"
	h := w.Header()
	h.Set("Retry-After", strconv.Itoa(int(refusalRetryAfter/time.Second)))
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, body)
	_ = http.NewResponseController(w).Flush()
	wait := time.NewTimer(refusalRetryAfter)
	defer wait.Stop()
	select {
	case <-wait.C:
	case <-r.Context().Done():
	}
}
