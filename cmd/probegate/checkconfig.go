package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/probegate/probegate/cmd/probegate/internal/termsafe"
	"github.com/probegate/probegate/config"
)

// checkConfig is `probegate check-config`: the judgement start-up and
// reloads make (judge), of the same file with the same flags, listen
// addresses included. It prints a one-line summary and returns 0, or
// prints every problem and returns 1. Warnings, of what is valid but most
// likely a mistake, go to stderr.
func checkConfig(o *options, stdout, stderr io.Writer) int {
	listen, err := o.flagListenAddrs()
	if err != nil {
		io.WriteString(stderr, termsafe.Lines(err.Error())+"\n")
		return 1
	}
	cfg, warnings, err := o.judge(listen)
	if err != nil {
		// A configuration's problems come one a line.
		io.WriteString(stderr, termsafe.Lines(err.Error())+"\n")
		return 1
	}
	for _, w := range warnings {
		termsafe.Fprintf(stderr, "warning: %s\n", w)
	}
	source := cfg.File()
	if source == "" {
		source = "defaults and flags (" + defaultConfigFile + " not found)"
	}
	termsafe.Fprintf(stdout, "%s: ok, %s%s%s\n", source, countBackends(len(cfg.Backends)), countDiscovery(cfg), countWarnings(len(warnings)))
	return 0
}

// countWarnings is ", 1 warning" or ", n warnings", or empty for none.
func countWarnings(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return ", 1 warning"
	}
	return fmt.Sprintf(", %d warnings", n)
}

// countBackends is "1 backend" or "n backends".
func countBackends(n int) string {
	if n == 1 {
		return "1 backend"
	}
	return fmt.Sprintf("%d backends", n)
}

// countDiscovery is ", plus those of 2 file_sd_configs and 1 dns_sd_configs"
// naming the service discovery blocks that add backends at run time, or
// empty when there are none.
func countDiscovery(cfg *config.Config) string {
	var blocks []string
	for _, k := range cfg.DiscoveryBlocks() {
		blocks = append(blocks, fmt.Sprintf("%d %s", k.Blocks, k.Key))
	}
	if len(blocks) == 0 {
		return ""
	}
	return ", plus those of " + strings.Join(blocks, " and ")
}
