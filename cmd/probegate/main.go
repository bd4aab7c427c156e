// Command probegate probes a pool of HTTP backends, fans queries out to the
// ones in service, exports it all to Prometheus and answers /ready for the
// load balancers in front of it.
package main

import "os"

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	_ = args
	return 0
}
