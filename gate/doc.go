// Package gate is a liveness and readiness gate with a drain lifecycle for
// any Go HTTP server.
//
// /health answers 200 "ok" whenever the process serves. /ready answers 200
// when the server is not draining and every registered check passes, else
// 503, with an application/health+json body naming each check. Checks run
// behind recover and under a timeout; concurrent /ready requests share one
// evaluation, reused for the check interval.
//
// On SIGTERM or SIGINT, Run fails /ready and switches keep-alive off at
// once, serves on for the drain window so that load balancers notice and
// stop sending traffic, then shuts the server down gracefully and runs the
// cleanup callbacks. A second signal ends the window early.
//
// Wrapping a plain http.Server:
//
//	g := gate.New(gate.Options{Drain: 10 * time.Second})
//	g.Register("database", func(ctx context.Context) error { return db.PingContext(ctx) })
//	mux := http.NewServeMux()
//	mux.Handle("/health", g.HealthHandler())
//	mux.Handle("/ready", g.ReadyHandler())
//	mux.Handle("/", app)
//	srv := &http.Server{Addr: ":8080", Handler: mux}
//	if err := g.Run(context.Background(), srv, srv.ListenAndServe); err != nil {
//		log.Fatal(err)
//	}
//
// See README.md for sizing the drain window behind HAProxy, an AWS ALB or
// Kubernetes.
package gate
