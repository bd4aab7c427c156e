package deploy

import (
	"bufio"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/probegate/probegate/deploy/deploytest"
)

// platforms are the release targets, each with the executable format and
// machine its binary must have.
var platforms = []struct {
	os, arch string
}{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// binaryPlatform reads the OS and architecture an executable is built for
// from its headers.
func binaryPlatform(path string) (goos, goarch string) {
	if f, err := elf.Open(path); err == nil {
		defer f.Close()
		switch f.Machine {
		case elf.EM_X86_64:
			return "linux", "amd64"
		case elf.EM_AARCH64:
			return "linux", "arm64"
		}
		return "linux", f.Machine.String()
	}
	if f, err := macho.Open(path); err == nil {
		defer f.Close()
		switch f.Cpu {
		case macho.CpuAmd64:
			return "darwin", "amd64"
		case macho.CpuArm64:
			return "darwin", "arm64"
		}
		return "darwin", f.Cpu.String()
	}
	if f, err := pe.Open(path); err == nil {
		defer f.Close()
		switch f.Machine {
		case pe.IMAGE_FILE_MACHINE_AMD64:
			return "windows", "amd64"
		case pe.IMAGE_FILE_MACHINE_ARM64:
			return "windows", "arm64"
		}
		return "windows", "unknown"
	}
	return "unknown", "unknown"
}

// allPlatformsVariable, set by `make release-test`, has TestMakeRelease
// cross-build every release platform rather than this machine's alone.
const allPlatformsVariable = "PROBEGATE_RELEASE_TEST_ALL_PLATFORMS"

// TestMakeRelease runs `make release` into a scratch folder: every target
// is built for its platform, the sums match, and the binary of this
// machine refuses the test hooks (--testing.*) and reports the version,
// revision, branch, build user and date stamped into it. Under make test it builds this machine's platform
// only: six cross-builds take longer than a test may on a 2-core machine
// shared with other work. `make release-test` builds them all.
func TestMakeRelease(t *testing.T) {
	root := deploytest.RepoRoot(t)
	dir := t.TempDir()
	const version = "0.0.0-releasetest"
	args := []string{"-s", "release", "RELEASE_DIR=" + dir, "VERSION=" + version}
	built := platforms
	if os.Getenv(allPlatformsVariable) == "" {
		built = built[:0:0]
		for _, p := range platforms {
			if p.os == runtime.GOOS && p.arch == runtime.GOARCH {
				built = append(built, p)
			}
		}
		if len(built) == 0 {
			t.Skipf("%s/%s is no release platform; make release-test builds them all", runtime.GOOS, runtime.GOARCH)
		}
		args = append(args, "PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH)
	}
	cmd := exec.Command("make", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}

	sums := map[string]string{}
	f, err := os.Open(filepath.Join(dir, "sha256sums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for s := bufio.NewScanner(f); s.Scan(); {
		sum, name, ok := strings.Cut(s.Text(), "  ")
		if !ok {
			t.Fatalf("sha256sums.txt: %q is not \"<sum>  <file>\"", s.Text())
		}
		sums[name] = sum
	}

	for _, p := range built {
		name := "probegate-" + version + "." + p.os + "-" + p.arch
		if p.os == "windows" {
			name += ".exe"
		}
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s/%s: %v", p.os, p.arch, err)
			continue
		}
		if goos, goarch := binaryPlatform(path); goos != p.os || goarch != p.arch {
			t.Errorf("%s is built for %s/%s", name, goos, goarch)
		}
		sum := sha256.Sum256(data)
		if got := sums[name]; got != hex.EncodeToString(sum[:]) {
			t.Errorf("sha256sums.txt has %q for %s, want %x", got, name, sum)
		}
		delete(sums, name)
	}
	for name := range sums {
		t.Errorf("sha256sums.txt lists %s, which is no release target", name)
	}

	native := filepath.Join(dir, "probegate-"+version+"."+runtime.GOOS+"-"+runtime.GOARCH)
	// The test hooks, such as the clock offset the end-to-end tests set,
	// are built only with the faultinject tag: the release refuses them.
	if out, err := exec.Command(native, "check-config", "--testing.clock-offset=20m", "--backend=a=http://127.0.0.1:1").CombinedOutput(); err == nil ||
		!strings.Contains(string(out), "unknown long flag '--testing.clock-offset'") {
		t.Errorf("%s accepts the test hook --testing.clock-offset (%v):\n%s", native, err, out)
	}
	out, err := exec.Command(native, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", native, err, out)
	}
	git := func(args ...string) string {
		c := exec.Command("git", args...)
		c.Dir = root
		b, err := c.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(b))
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`version ` + regexp.QuoteMeta(version) + ` \(branch: ` + regexp.QuoteMeta(git("rev-parse", "--abbrev-ref", "HEAD")) +
			`, revision: ` + git("rev-parse", "HEAD") + `\)`),
		regexp.MustCompile(`build user:\s+\S+@\S+`),
		regexp.MustCompile(`build date:\s+\d{8}-\d\d:\d\d:\d\d`),
	} {
		if !want.Match(out) {
			t.Errorf("--version does not match %s:\n%s", want, out)
		}
	}
}

// releaseVersion is the VERSION file, which must be a plain semantic
// version: release files, tags (v + version) and images are named by it.
func releaseVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(deploytest.RepoRoot(t), "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimSpace(string(data))
	if !regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`).MatchString(v) || string(data) != v+"\n" {
		t.Fatalf("VERSION holds %q, want one semantic version such as 0.5.0 and a newline", data)
	}
	return v
}

// TestMakeReleaseStampsTheVersionFile: without VERSION on the command
// line, make release names its files after the VERSION file and stamps
// that version into the binaries. (make -n prints the commands without
// building; TestMakeRelease builds them.)
func TestMakeReleaseStampsTheVersionFile(t *testing.T) {
	v := releaseVersion(t)
	cmd := exec.Command("make", "-n", "release", "RELEASE_DIR=dist-test")
	cmd.Dir = deploytest.RepoRoot(t)
	cmd.Env = append(os.Environ(), "VERSION=9.9.9") // An exported VERSION must not hide the file's.
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n release: %v\n%s", err, out)
	}
	for _, p := range platforms {
		if want := p.os + "/" + p.arch; !strings.Contains(string(out), want) {
			t.Errorf("make release does not build %s, a release platform", want)
		}
	}
	for _, want := range []string{
		"dist-test/probegate-" + v + ".$os-$arch$ext",
		"-X github.com/prometheus/common/version.Version=" + v + " ",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("make release does not use VERSION %s: no %q in\n%s", v, want, out)
		}
	}
}

// TestChangelogHasTheVersion: CHANGELOG.md is kept as the Prometheus
// repositories keep theirs, and its newest release section is the VERSION
// file's; above it, "## main / unreleased" may gather what is to come.
func TestChangelogHasTheVersion(t *testing.T) {
	v := releaseVersion(t)
	data, err := os.ReadFile(filepath.Join(deploytest.RepoRoot(t), "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile(`^## (\S+) / (\d{4}-\d\d-\d\d)$`)
	entry := regexp.MustCompile(`^\* \[(CHANGE|FEATURE|ENHANCEMENT|BUGFIX|SECURITY)\] \S`)
	var sections []string
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case line == "## main / unreleased" && len(sections) == 0:
		case strings.HasPrefix(line, "## "):
			m := heading.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("CHANGELOG.md:%d: %q is not \"## VERSION / YYYY-MM-DD\"", i+1, line)
				continue
			}
			sections = append(sections, m[1])
		case strings.HasPrefix(line, "* ") && !entry.MatchString(line):
			t.Errorf("CHANGELOG.md:%d: an entry does not start with [CHANGE], [FEATURE], [ENHANCEMENT], [BUGFIX] or [SECURITY]", i+1)
		}
	}
	if len(sections) == 0 || sections[0] != v {
		t.Errorf("CHANGELOG.md's newest section is %v, want VERSION %s", sections, v)
	}
}
