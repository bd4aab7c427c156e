package deploy

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/probegate/probegate/deploy/deploytest"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd, args string
	line      int
}

// stage is one FROM and the instructions up to the next.
type stage struct {
	base, name string
	body       []instruction
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.body {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// parseDockerfile splits a Dockerfile into its stages. No Docker engine
// runs on the machines this is tested on, so the image is checked from its
// source only.
func parseDockerfile(t *testing.T, text string) []stage {
	t.Helper()
	var stages []stage
	var joined string
	start := 0
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if joined == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if joined == "" {
			start = i + 1
		}
		if strings.HasSuffix(trimmed, "\\") {
			joined += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		joined += trimmed
		cmd, args, _ := strings.Cut(joined, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args), line: start}
		joined = ""
		switch {
		case in.cmd == "FROM":
			f := strings.Fields(in.args)
			s := stage{base: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
		case len(stages) == 0 && in.cmd == "ARG":
		case len(stages) == 0:
			t.Fatalf("Dockerfile:%d: %s before the first FROM", in.line, in.cmd)
		default:
			stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
		}
	}
	return stages
}

// execForm decodes the JSON array form of ENTRYPOINT or CMD.
func execForm(t *testing.T, in instruction) []string {
	t.Helper()
	var args []string
	if err := json.Unmarshal([]byte(in.args), &args); err != nil {
		t.Fatalf("Dockerfile:%d: %s is not in exec form (a JSON array): %v", in.line, in.cmd, err)
	}
	return args
}

func TestDockerfile(t *testing.T) {
	stages := parseDockerfile(t, string(deploytest.ReadFile(t, "Dockerfile")))
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a build stage and a runtime stage", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]

	t.Run("the build stage builds a static binary", func(t *testing.T) {
		if !strings.HasPrefix(build.base, "golang:") || build.name == "" {
			t.Errorf("first stage FROM %s AS %q, want a named golang stage", build.base, build.name)
		}
		var built bool
		for _, run := range build.all("RUN") {
			if strings.Contains(run.args, "go build") {
				built = true
				for _, want := range []string{"CGO_ENABLED=0", "./cmd/probegate", "version.Version=", "version.Revision="} {
					if !strings.Contains(run.args, want) {
						t.Errorf("Dockerfile:%d: the go build lacks %s", run.line, want)
					}
				}
			}
		}
		if !built {
			t.Error("the build stage never runs go build")
		}
	})

	t.Run("the image is the binary on an empty base", func(t *testing.T) {
		if final.base != "scratch" && !strings.Contains(final.base, "distroless/static") {
			t.Errorf("runtime stage FROM %s, want scratch or distroless/static", final.base)
		}
		for _, in := range final.all("COPY") {
			if !strings.Contains(in.args, "--from="+build.name) {
				t.Errorf("Dockerfile:%d: the runtime stage copies %q from the context, not from the build stage", in.line, in.args)
			}
		}
		if final.all("RUN") != nil {
			t.Error("the runtime stage runs commands; it has no shell")
		}
	})

	t.Run("it runs as a numeric non-root user", func(t *testing.T) {
		users := final.all("USER")
		if len(users) == 0 {
			t.Fatal("the runtime stage sets no USER, so it runs as root")
		}
		user := users[len(users)-1].args
		for _, id := range strings.Split(user, ":") {
			n, err := strconv.Atoi(id)
			if err != nil || n == 0 {
				t.Errorf("USER %s: want numeric non-zero ids, which runAsNonRoot can check", user)
			}
		}
	})

	t.Run("it exposes the main and the health port", func(t *testing.T) {
		var ports []string
		for _, in := range final.all("EXPOSE") {
			ports = append(ports, strings.Fields(in.args)...)
		}
		for _, want := range []string{"9797", "9798"} {
			if !slices.Contains(ports, want) && !slices.Contains(ports, want+"/tcp") {
				t.Errorf("EXPOSE %v lacks %s", ports, want)
			}
		}
	})

	t.Run("no HEALTHCHECK", func(t *testing.T) {
		for _, s := range stages {
			if hc := s.all("HEALTHCHECK"); hc != nil {
				t.Errorf("Dockerfile:%d: HEALTHCHECK; orchestrators probe /ready themselves", hc[0].line)
			}
		}
	})

	t.Run("entrypoint and flags exist", func(t *testing.T) {
		eps, cmds := final.all("ENTRYPOINT"), final.all("CMD")
		if len(eps) != 1 {
			t.Fatalf("runtime stage has %d ENTRYPOINTs, want 1", len(eps))
		}
		ep := execForm(t, eps[0])
		if len(ep) == 0 || ep[0] != "/bin/probegate" {
			t.Errorf("ENTRYPOINT %v, want the binary /bin/probegate", ep)
		}
		args := ep[1:]
		if len(cmds) > 0 {
			args = append(args, execForm(t, cmds[len(cmds)-1])...)
		}
		flags := deploytest.Flags(t, deploytest.Build(t))
		deploytest.CheckFlags(t, "the image's ENTRYPOINT and CMD", flags, args)
	})

	t.Run("the Go version matches go.mod", func(t *testing.T) {
		m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(deploytest.ReadFile(t, "go.mod"))
		if m == nil {
			t.Fatal("go.mod has no go line")
		}
		want := "ARG GO_VERSION=" + string(m[1])
		if !strings.Contains(string(deploytest.ReadFile(t, "Dockerfile")), want+"\n") {
			t.Errorf("Dockerfile lacks %q: the build image would not have go.mod's Go", want)
		}
	})
}

func TestDockerignoreKeepsBuildOutputsOut(t *testing.T) {
	lines := strings.Split(string(deploytest.ReadFile(t, ".dockerignore")), "\n")
	for _, want := range []string{".git", "dist", "/probegate"} {
		if !slices.Contains(lines, want) {
			t.Errorf(".dockerignore lacks %s", want)
		}
	}
}
