package main

import (
	"fmt"
	"io"
	"os"
)

// demoMaintenance has the demo show maintenance: the admin API is on, for
// loopback clients only, and its state lives in a temporary directory
// unless --storage.path names one. cleanup removes the directory.
func demoMaintenance(opts *options) (cleanup func(), err error) {
	opts.EnableAdminAPI = true
	opts.adminLoopbackOnly = true
	if opts.storagePath.given() {
		return func() {}, nil
	}
	dir, err := os.MkdirTemp("", "probegate-demo-")
	if err != nil {
		return nil, err
	}
	*opts.storagePath.value, opts.storagePath.set = dir, true
	return func() { os.RemoveAll(dir) }, nil
}

// printDemoMaintenance tells the operator how to take a backend out.
func printDemoMaintenance(w io.Writer, base string) {
	fmt.Fprintf(w, "\nTake a backend out for maintenance under the readiness budget (admin API, loopback only);\n"+
		"once disruptions_allowed reaches 0, the next one is refused with 429 and the budget's numbers:\n")
	fmt.Fprintf(w, "  curl -s -X POST -d '{\"reason\":\"demo\",\"ttl\":\"5m\"}' %s/api/v1/backends/healthy/maintenance\n", base)
	fmt.Fprintf(w, "  probegate maintenance list --url %s\n", base)
}
