package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/probegate/probegate/config"
)

// checkConfig is `probegate check-config`: it loads the configuration as
// serve would (file, environment, flags), builds every HTTP client (which
// reads the TLS files they name) and checks --web.config.file. It prints a
// one-line summary and returns 0, or prints every problem and returns 1.
func checkConfig(o *options, stdout, stderr io.Writer) int {
	cfg, err := o.loadConfig()
	if err == nil {
		err = cfg.CheckHTTPClients()
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := web.Validate(o.WebConfigFile); err != nil {
		fmt.Fprintf(stderr, "--web.config.file %s: %v\n", o.WebConfigFile, err)
		return 1
	}
	source := cfg.File()
	if source == "" {
		source = "defaults and flags (" + defaultConfigFile + " not found)"
	}
	fmt.Fprintf(stdout, "%s: ok, %s%s\n", source, countBackends(len(cfg.Backends)), countDiscovery(cfg))
	return 0
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
	if n := len(cfg.FileSDConfigs); n > 0 {
		blocks = append(blocks, fmt.Sprintf("%d file_sd_configs", n))
	}
	if n := len(cfg.DNSSDConfigs); n > 0 {
		blocks = append(blocks, fmt.Sprintf("%d dns_sd_configs", n))
	}
	if len(blocks) == 0 {
		return ""
	}
	return ", plus those of " + strings.Join(blocks, " and ")
}
