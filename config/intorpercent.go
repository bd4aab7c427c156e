package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// UnmarshalYAML accepts an integer or a string "N%".
func (v *IntOrPercent) UnmarshalYAML(unmarshal func(any) error) error {
	var raw any
	if err := unmarshal(&raw); err != nil {
		return err
	}
	parsed, err := ParseIntOrPercent(fmt.Sprint(raw))
	if err != nil {
		return err
	}
	*v = parsed
	return nil
}

// MarshalYAML writes the value back in the form it was given.
func (v IntOrPercent) MarshalYAML() (any, error) {
	if v.Percent {
		return v.String(), nil
	}
	return v.Value, nil
}

// ParseIntOrPercent parses "3" or "30%". Negative values and percentages
// above 100 are errors.
func ParseIntOrPercent(s string) (IntOrPercent, error) {
	s = strings.TrimSpace(s)
	number, percent := strings.CutSuffix(s, "%")
	n, err := strconv.Atoi(number)
	if err != nil {
		return IntOrPercent{}, fmt.Errorf("%q is neither an integer nor a percentage such as \"50%%\"", s)
	}
	if n < 0 {
		return IntOrPercent{}, fmt.Errorf("%q is negative", s)
	}
	if percent && n > 100 {
		return IntOrPercent{}, fmt.Errorf("%q is above 100%%", s)
	}
	return IntOrPercent{Value: n, Percent: percent}, nil
}

func (v IntOrPercent) String() string {
	if v.Percent {
		return strconv.Itoa(v.Value) + "%"
	}
	return strconv.Itoa(v.Value)
}

// Of resolves the value against a total. Percentages round up, as
// Kubernetes does for a PodDisruptionBudget.
func (v IntOrPercent) Of(total int) int {
	if !v.Percent {
		return v.Value
	}
	return int(math.Ceil(float64(v.Value) * float64(total) / 100))
}
