package main

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/probegate/probegate/config"
)

// memoryHeadroom is the least memory, beyond fanout.max_buffered_bytes,
// that the soft memory limit leaves for everything else probegate holds.
const memoryHeadroom = 24 << 20

// applyMemoryLimit sets the Go runtime's soft memory limit while the
// fan-out is enabled: fanout.max_buffered_bytes, plus twice the live heap
// or memoryHeadroom, whichever is more. The fan-out never holds more than
// max_buffered_bytes of answers, but the garbage collector, left to its
// default of collecting when the heap has doubled, lets the buffers of
// finished rounds pile up to twice that and more before it runs; the
// limit has it collect as the bound nears. A GOMEMLIMIT in the
// environment is the operator's and is left alone.
func applyMemoryLimit(logger log.Logger, cfg config.Fanout) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit := int64(math.MaxInt64)
	if cfg.Enabled && cfg.MaxBufferedBytes > 0 {
		limit = memoryLimit(int64(cfg.MaxBufferedBytes), liveHeap())
	}
	if previous := debug.SetMemoryLimit(limit); previous != limit {
		level.Info(logger).Log("msg", "Go memory limit set for the fan-out's buffers", "limit", limitString(limit),
			"max_buffered_bytes", cfg.MaxBufferedBytes)
	}
}

// memoryLimit is the soft memory limit for buffers of at most maxBuffered
// bytes and a live heap of liveHeap bytes.
func memoryLimit(maxBuffered, liveHeap int64) int64 {
	return maxBuffered + max(memoryHeadroom, 2*liveHeap)
}

// liveHeap is the heap the last collection found in use.
func liveHeap() int64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(sample[0].Value.Uint64())
}

func limitString(limit int64) string {
	if limit == math.MaxInt64 {
		return "none"
	}
	return config.Bytes(limit).String()
}
