// Command probegate probes a pool of HTTP backends, fans queries out to the
// ones in service, exports it all to Prometheus and answers /ready for the
// load balancers in front of it.
package main

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"

	"github.com/probegate/probegate"
	"github.com/probegate/probegate/cmd/probegate/internal/maintcli"
	"github.com/probegate/probegate/cmd/probegate/internal/termsafe"
)

func main() {
	defaultVersion()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// defaultVersion sets the version from the VERSION file when the build did
// not stamp one with -ldflags (go build, go install), so that --version,
// probegate_build_info and /status show the release rather than nothing.
// make build and make release stamp the same file's version.
func defaultVersion() {
	if version.Version == "" {
		version.Version = probegate.Version()
	}
}

// run parses the command line and runs one command, returning the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	app := kingpin.New("probegate", "Probes a pool of HTTP backends, fans queries out to the ones in service and gates readiness for load balancers. "+
		"`probegate serve --help` lists the server's flags, which `probegate` alone takes too.")
	app.Version(version.Print("probegate"))
	app.HelpFlag.Short('h')
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)
	// Each command has the flags it honours, so its help lists only those.
	serveCmd := app.Command("serve", "Probe the configured backends and serve (the default).").Default()
	opts := registerFlags(serveCmd)
	demoCmd := app.Command("demo", "Start built-in loopback backends in every state and serve probegate against them.")
	demoOpts := registerFlags(demoCmd)
	checkCmd := app.Command("check-config", "Validate the configuration and exit.")
	checkOpts := registerCheckFlags(checkCmd)
	simulateCmd := app.Command("simulate", "Feed probe results through the state machine and print each step.")
	sim := registerSimulateFlags(simulateCmd)
	versionCmd := app.Command("version", "Print the version and build information.")
	maint := maintcli.Register(app)

	command, err := app.Parse(args)
	if err != nil {
		termsafe.Fprintf(stderr, "probegate: %v\n", err)
		if slices.Contains(args, checkCmd.FullCommand()) {
			// check-config promises 1 for any invalid setting, flags included.
			return 1
		}
		return 2
	}
	if maint.Handles(command) {
		return maint.Run(command, stdout, stderr)
	}
	switch command {
	case checkCmd.FullCommand():
		return checkConfig(checkOpts, stdout, stderr)
	case simulateCmd.FullCommand():
		if err := sim.load(); err != nil {
			termsafe.Fprintf(stderr, "probegate simulate: %v\n", err)
			return 2
		}
		if err := sim.run(stdout); err != nil {
			termsafe.Fprintf(stderr, "probegate simulate: %v\n", err)
			return 2
		}
		return 0
	case versionCmd.FullCommand():
		fmt.Fprintln(stdout, version.Print("probegate"))
		return 0
	case demoCmd.FullCommand():
		return runDemo(demoOpts, stdout, stderr)
	case serveCmd.FullCommand():
		return serve(opts, stderr)
	}
	return 2
}
