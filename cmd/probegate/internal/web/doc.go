// Package web holds the HTTP guards of probegate's listeners: what every
// request passes before it reaches a handler. Each guard is an
// http.Handler wrapped around the next one; the command chooses which
// listener has which, in which order.
//
// On the main listener, the fan-out's paths go to the fan-out before the
// mux can redirect them (RouteFanout), and the heavy pages and the
// metrics serve a bounded number of reads at once (LimitInFlight,
// LimitMetrics), the scrapes in flight together sharing one answer
// (ShareScrapes). The admin listener bounds its pages the same way; what
// it admits at all is decided by one guard, collector/admin's Guard,
// which each of its routes passes.
package web
