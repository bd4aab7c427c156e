package demo

import (
	"fmt"
	"io"
	"strings"
)

// printMaintenance tells the operator how to take a backend out through
// the admin listener at base. self is the command the binary was run as
// (./probegate after make run), so that the hint works as printed.
func printMaintenance(w io.Writer, base, self string) {
	fmt.Fprintf(w, "\nTake a backend out for maintenance under the readiness budget (admin API, on the admin listener, loopback only);\n"+
		"once disruptions_allowed reaches 0, the next one is refused with 429 and the budget's numbers:\n")
	fmt.Fprintf(w, "  curl -s -X POST -d '{\"reason\":\"demo\",\"ttl\":\"5m\"}' %s/api/v1/backends/healthy/maintenance\n", base)
	fmt.Fprintf(w, "  %s maintenance list --url %s\n", shellQuote(self), base)
}

// shellQuote is s as a POSIX shell word: as it is when it holds nothing
// the shell reads specially, otherwise in single quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./+:@%=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
