// Package logging builds probegate's logger: go-kit records in logfmt or
// JSON, each with a UTC timestamp and the caller, every password in a URL
// or address redacted, and a bridge that writes exporter-toolkit's slog
// records into the same stream in the same shape.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	slgk "github.com/tjhop/slog-gokit"
)

// callerDepth is how far up the stack the caller of
// level.Info(logger).Log sits, seen from the caller valuer: the valuer,
// bindValues, the inner context, the level filter, logger.Log and the
// outer context that level.Info made.
const callerDepth = 6

// logger is the go-kit logger New builds. It keeps the undecorated writer
// and the level so that Slog can bridge exporter-toolkit's
// slog records into the same stream without a second timestamp or a
// caller pointing into the bridge.
type logger struct {
	decorated log.Logger
	plain     log.Logger
	level     slog.Level
}

// Log writes one record with ts and caller.
func (l *logger) Log(keyvals ...any) error {
	return l.decorated.Log(keyvals...)
}

// New builds the logger of --log.level and --log.format writing to w: logfmt or JSON, each record with ts (UTC) and caller, records below
// the level dropped, and every password in a URL or address redacted.
func New(lvl, format string, w io.Writer) (log.Logger, error) {
	var base log.Logger
	switch format {
	case "logfmt":
		base = log.NewLogfmtLogger(log.NewSyncWriter(w))
	case "json":
		base = log.NewJSONLogger(log.NewSyncWriter(w))
	default:
		return nil, fmt.Errorf("--log.format: %q is not one of logfmt, json", format)
	}
	base = redacting{base}
	var allow level.Option
	var slogLevel slog.Level
	switch lvl {
	case "debug":
		allow, slogLevel = level.AllowDebug(), slog.LevelDebug
	case "info":
		allow, slogLevel = level.AllowInfo(), slog.LevelInfo
	case "warn":
		allow, slogLevel = level.AllowWarn(), slog.LevelWarn
	case "error":
		allow, slogLevel = level.AllowError(), slog.LevelError
	default:
		return nil, fmt.Errorf("--log.level: %q is not one of debug, info, warn, error", lvl)
	}
	decorated := log.With(base, "ts", log.DefaultTimestampUTC, "caller", log.Caller(callerDepth))
	return &logger{
		decorated: level.NewFilter(decorated, allow),
		plain:     level.NewFilter(base, allow),
		level:     slogLevel,
	}, nil
}

// Slog bridges a logger from New to the *slog.Logger exporter-toolkit
// and Prometheus's discovery want, writing records in the same shape.
// Pass the logger New returned, not one wrapped by log.With: a wrapped or
// foreign logger is bridged as it is, at info level.
func Slog(l log.Logger) *slog.Logger {
	own, ok := l.(*logger)
	if !ok {
		return slog.New(slgk.NewGoKitHandler(l, nil))
	}
	return slog.New(slgk.NewGoKitHandler(slogShape{own.plain}, own.level))
}

// slogShape reorders the bridge's records to look like the go-kit ones:
// ts first, in UTC, then caller, then the rest.
type slogShape struct{ next log.Logger }

func (s slogShape) Log(keyvals ...any) error {
	out := make([]any, 0, len(keyvals)+4)
	rest := make([]any, 0, len(keyvals))
	var ts, caller any
	for i := 0; i+1 < len(keyvals); i += 2 {
		switch keyvals[i] {
		case slog.TimeKey:
			if t, ok := keyvals[i+1].(time.Time); ok {
				ts = t.UTC().Format(time.RFC3339Nano)
				continue
			}
		case "caller":
			caller = keyvals[i+1]
			continue
		}
		rest = append(rest, keyvals[i], keyvals[i+1])
	}
	if ts != nil {
		out = append(out, "ts", ts)
	}
	if caller != nil {
		out = append(out, "caller", caller)
	}
	return s.next.Log(append(out, rest...)...)
}

// Printer is l as the Println logger promhttp reports its errors to.
func Printer(l log.Logger) interface{ Println(v ...any) } {
	return printer{l}
}

type printer struct{ logger log.Logger }

func (p printer) Println(v ...any) {
	level.Error(p.logger).Log("msg", fmt.Sprint(v...))
}
