package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
)

// here is the file:line of its caller, as the logger's caller key writes it.
func here() string {
	_, file, line, _ := runtime.Caller(1)
	return fmt.Sprintf("%s:%d", file[strings.LastIndexByte(file, '/')+1:], line)
}

func TestLogfmtRecordsHaveTimestampCallerAndLevel(t *testing.T) {
	var out bytes.Buffer
	logger, err := New("info", "logfmt", &out)
	if err != nil {
		t.Fatal(err)
	}
	level.Debug(logger).Log("msg", "dropped")
	level.Info(logger).Log("msg", "kept", "backend", "pdb-1")
	call := here()
	level.Warn(log.With(logger, "component", "pool")).Log("msg", "wrapped")
	wrappedCall := here()

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d records, want 2 (debug dropped at info):\n%s", len(lines), out.String())
	}
	ts := `ts=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`
	want := regexp.MustCompile("^" + ts + " caller=" + regexp.QuoteMeta(lineBefore(call)) + " level=info msg=kept backend=pdb-1$")
	if !want.MatchString(lines[0]) {
		t.Errorf("record %q does not match %s", lines[0], want)
	}
	if !strings.Contains(lines[1], "caller="+lineBefore(wrappedCall)+" ") || !strings.Contains(lines[1], "component=pool") {
		t.Errorf("record through log.With %q lacks caller %s or its key", lines[1], lineBefore(wrappedCall))
	}
}

// lineBefore is the file:line one line above fileLine.
func lineBefore(fileLine string) string {
	file, line, _ := strings.Cut(fileLine, ":")
	var n int
	fmt.Sscan(line, &n)
	return fmt.Sprintf("%s:%d", file, n-1)
}

func TestJSONRecords(t *testing.T) {
	var out bytes.Buffer
	logger, err := New("debug", "json", &out)
	if err != nil {
		t.Fatal(err)
	}
	level.Debug(logger).Log("msg", "hello", "status", 503)
	call := here()
	var record map[string]any
	if err := json.Unmarshal(out.Bytes(), &record); err != nil {
		t.Fatalf("not JSON: %q: %v", out.String(), err)
	}
	if record["level"] != "debug" || record["msg"] != "hello" || record["status"] != 503.0 ||
		record["caller"] != lineBefore(call) || record["ts"] == nil {
		t.Errorf("record = %v", record)
	}
}

func TestSlogBridgeWritesTheSameShape(t *testing.T) {
	var out bytes.Buffer
	logger, err := New("warn", "logfmt", &out)
	if err != nil {
		t.Fatal(err)
	}
	slogger := Slog(logger)
	slogger.Info("dropped below warn")
	slogger.Warn("Listening on", "address", "[::]:9797")
	call := here()
	got := strings.TrimSpace(out.String())
	want := regexp.MustCompile(`^ts=\S+Z caller=` + regexp.QuoteMeta(lineBefore(call)) + ` level=warn msg="Listening on" address=\[::\]:9797$`)
	if !want.MatchString(got) {
		t.Errorf("bridged record %q does not match %s", got, want)
	}
}

func TestNewLoggerRejectsUnknownLevelAndFormat(t *testing.T) {
	if _, err := New("verbose", "logfmt", &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--log.level") {
		t.Errorf("unknown level: %v", err)
	}
	if _, err := New("info", "xml", &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--log.format") {
		t.Errorf("unknown format: %v", err)
	}
}

// TestLogsNeverShowAPassword: a password in a URL or an address, as a
// string, an error or a *url.URL, and in a record bridged from slog, is
// written as "xxxxx"; the caller's values are left as they were.
func TestLogsNeverShowAPassword(t *testing.T) {
	var out bytes.Buffer
	logger, err := New("info", "logfmt", &out)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("http://carol:pa55@h/")
	keyvals := []any{"msg", "Target alice:hunter2@127.0.0.1:28001", "err", errors.New(`get "http://bob:s3cret@h/": refused`), "url", u}
	level.Warn(logger).Log(keyvals...)
	Slog(logger).Warn("bridged", "target", "dave:letmein@h:1")
	for _, secret := range []string{"hunter2", "s3cret", "pa55", "letmein"} {
		if strings.Contains(out.String(), secret) {
			t.Errorf("the log shows the password %s:\n%s", secret, out.String())
		}
	}
	if got := strings.Count(out.String(), ":xxxxx@"); got != 4 {
		t.Errorf("%d passwords redacted, want 4:\n%s", got, out.String())
	}
	if keyvals[1] != "Target alice:hunter2@127.0.0.1:28001" {
		t.Errorf("the caller's values were changed: %v", keyvals)
	}
}
