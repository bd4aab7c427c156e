// Package e2e runs the real probegate binary against real loopback servers,
// a real HAProxy and a real Prometheus.
package e2e

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/probegate/probegate/internal/syncbuffer"
)

// TestMain builds the probegate binary once for every test in the package,
// with its test hooks.
func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "probegate-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "probegate")
	// The faultinject tag builds the --testing.* hooks in (a clock offset
	// among them), which a release binary lacks.
	build := exec.Command("go", "build", "-tags", "faultinject", "-o", bin, "../cmd/probegate")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build probegate:", err)
		return 1
	}
	os.Setenv("PROBEGATE_E2E_BINARY", bin)
	return m.Run()
}

// binary is the path of the probegate binary TestMain built.
func binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("PROBEGATE_E2E_BINARY")
	if bin == "" {
		t.Fatal("PROBEGATE_E2E_BINARY is not set: run the e2e tests through go test, which builds it")
	}
	return bin
}

// requireTool fails the test (never skips it) when a tool the test needs is
// missing: `make deps` installs it.
func requireTool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: run `make deps` (the tests never skip a missing tool)", name)
	}
	return path
}

// freeAddr returns a loopback address whose port was free a moment ago. The
// port is drawn from below the kernel's ephemeral range: a port the kernel
// handed out for port 0 is soon handed out again, to the local end of some
// outgoing connection or to another test's listener, and the process the
// address is meant for then fails to bind it.
func freeAddr(t testing.TB) string {
	t.Helper()
	low := ephemeralLow(t)
	for range 200 {
		addr := fmt.Sprintf("127.0.0.1:%d", 10000+rand.IntN(low-10000))
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			ln.Close()
			return addr
		}
	}
	t.Fatalf("no free loopback port below %d after 200 tries", low)
	return ""
}

// ephemeralLow is the first port of the kernel's ephemeral range.
func ephemeralLow(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var low, high int
	if _, err := fmt.Sscan(string(b), &low, &high); err != nil || low <= 11000 {
		t.Fatalf("unusable ephemeral port range %q", b)
	}
	return low
}

// probegateProcess is a running probegate binary.
type probegateProcess struct {
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:port
	admin  string // the admin listener, http://127.0.0.1:port
	output *syncbuffer.Buffer
	done   <-chan struct{} // closed when the process exited
}

// startProbegate runs the binary with args plus a --web.listen-address on a
// free loopback port and waits until /healthz answers over plain HTTP. A
// port that was free when drawn may be taken before probegate binds it
// (by another test, or another make test beside this one): then it starts
// again on other ports, at most three times.
func startProbegate(t testing.TB, args ...string) *probegateProcess {
	t.Helper()
	for attempt := 1; ; attempt++ {
		p := launchProbegate(t, freeAddr(t), args...)
		if p.awaitServing(t, attempt < 3) {
			return p
		}
		t.Logf("a port was taken before probegate bound it; starting again:\n%s", p.output)
	}
}

// waitServing waits until /healthz answers over plain HTTP, and fails at
// once, with the output, if the process exits first.
func (p *probegateProcess) waitServing(t testing.TB) {
	t.Helper()
	p.awaitServing(t, false)
}

// awaitServing waits until /healthz answers over plain HTTP and reports
// true. If the process exits first it fails the test, unless retryBind is
// set and the process could not bind a port: then it reports false.
func (p *probegateProcess) awaitServing(t testing.TB, retryBind bool) bool {
	t.Helper()
	serving := false
	waitFor(t, 10*time.Second, "probegate /healthz", func() bool {
		select {
		case <-p.done:
			if retryBind && strings.Contains(p.output.String(), "address already in use") {
				return true
			}
			t.Fatalf("probegate exited before serving:\n%s", p.output)
		default:
		}
		resp, err := http.Get(p.base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		serving = resp.StatusCode == http.StatusOK
		return serving
	})
	return serving
}

// launchProbegate runs the binary with args plus --web.listen-address=addr
// and, unless args name one, an admin listener address on a free loopback
// port (never the default port, which another probegate on this host may
// hold), and stops it (SIGKILL if still running) when the test ends. It
// does not wait for the listener. probegate opens the admin listener only
// when args enable something there (--web.enable-admin-api,
// --web.enable-lifecycle, or the demo).
func launchProbegate(t testing.TB, addr string, args ...string) *probegateProcess {
	t.Helper()
	return launchProbegateVia(t, nil, addr, args...)
}

// launchProbegateVia is launchProbegate with the binary run through the
// command prefix via, such as `ip netns exec <name>` (which execs the
// binary in the same process, so that killing the process kills probegate).
func launchProbegateVia(t testing.TB, via []string, addr string, args ...string) *probegateProcess {
	t.Helper()
	p := &probegateProcess{base: "http://" + addr}
	args = withAdminListener(t, p, args)
	argv := append(slices.Clip(via), binary(t))
	argv = append(append(argv, args...), "--web.listen-address="+addr)
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.output, p.done = startProcess(t, "probegate", p.cmd)
	return p
}

// withAdminListener is args with an admin listener on a free loopback
// port unless they name one, and records its URL in p.
func withAdminListener(t testing.TB, p *probegateProcess, args []string) []string {
	t.Helper()
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--web.admin-listen-address="); ok {
			p.admin = "http://" + v
			return args
		}
	}
	addr := freeAddr(t)
	p.admin = "http://" + addr
	return append(slices.Clip(args), "--web.admin-listen-address="+addr)
}

// startProcess starts cmd with its stdout and stderr captured, and kills
// it when the test ends, logging the output under name if the test failed.
// done closes when the process has exited.
func startProcess(t testing.TB, name string, cmd *exec.Cmd) (output *syncbuffer.Buffer, done <-chan struct{}) {
	t.Helper()
	output = &syncbuffer.Buffer{}
	cmd.Stdout, cmd.Stderr = output, output
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("%s output:\n%s", name, output.String())
		}
	})
	return output, exited
}

// waitFor polls cond every 50ms until it holds or the deadline passes.
func waitFor(t testing.TB, deadline time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("%s: not within %s", what, deadline)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
