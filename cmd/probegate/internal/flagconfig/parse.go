package flagconfig

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/alecthomas/units"
	"github.com/prometheus/common/model"
)

// The parsers of flag values. Each error says what was wrong with the
// value and what is wanted; Value.Set adds which flag gave it.

// String accepts any value.
func String(s string) (string, error) { return s, nil }

// Duration accepts a Prometheus duration, such as 500ms, 5s or 1m30s.
func Duration(s string) (model.Duration, error) {
	d, err := model.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: want one such as 500ms, 5s or 1m30s", s)
	}
	return d, nil
}

// Count accepts a whole number of at least 1.
func Count(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%q is not a whole number of at least 1", s)
	}
	return n, nil
}

// Path accepts a URL path, which starts with "/".
func Path(s string) (string, error) {
	if !strings.HasPrefix(s, "/") {
		return "", fmt.Errorf("%q must start with \"/\"", s)
	}
	return s, nil
}

// Choice accepts one of choices.
func Choice(choices ...string) func(string) (string, error) {
	return func(s string) (string, error) {
		if !slices.Contains(choices, s) {
			return "", fmt.Errorf("%q is not one of %s", s, strings.Join(choices, ", "))
		}
		return s, nil
	}
}

// Size accepts a number of bytes of at least 1, or a size such as 64KiB
// or 1MiB (KiB and KB both mean 1024 bytes).
func Size(s string) (int, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		var b units.Base2Bytes
		b, err = units.ParseBase2Bytes(s)
		n = int64(b)
	}
	if err != nil || n < 1 || n > math.MaxInt32 {
		return 0, fmt.Errorf("%q is not a size: want a number of bytes or a size such as 64KiB or 1MiB", s)
	}
	return int(n), nil
}
