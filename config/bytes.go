package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/alecthomas/units"
)

// Bytes is a size such as 1MiB or 64MiB (or a plain number of bytes).
// Units are powers of two: KiB and KB both mean 1024 bytes.
type Bytes int64

// parseBytes parses "1MiB", "512KiB", "64MB" or a plain number of bytes.
func parseBytes(s string) (Bytes, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return Bytes(n), nil
	}
	n, err := units.ParseBase2Bytes(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size: want a number of bytes or a size such as 512KiB, 1MiB or 1GiB", s)
	}
	return Bytes(n), nil
}

// UnmarshalYAML accepts a number of bytes or a size with a unit.
func (b *Bytes) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return err
	}
	parsed, err := parseBytes(s)
	if err != nil {
		return err
	}
	*b = parsed
	return nil
}

// MarshalYAML writes the size with the largest units that express it
// exactly, such as 1MiB.
func (b Bytes) MarshalYAML() (any, error) {
	return b.String(), nil
}

// String is the size with binary units, such as 64MiB or 1KiB512B.
func (b Bytes) String() string {
	return units.Base2Bytes(b).String()
}
