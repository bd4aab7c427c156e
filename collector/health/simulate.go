package health

import (
	"fmt"
	"strconv"
)

// ParseSimulatedResult turns one input of `probegate simulate` into a
// result: an HTTP status code (100-599), "timeout" or "error" (a transport
// error).
func ParseSimulatedResult(input string) (Result, error) {
	switch input {
	case "timeout":
		return TimeoutResult("simulated timeout"), nil
	case "error":
		return TransportResult("simulated transport error"), nil
	}
	code, err := strconv.Atoi(input)
	if err != nil || code < 100 || code > 599 {
		return Result{}, fmt.Errorf("%q is not a probe result: want an HTTP status code (100-599), \"timeout\" or \"error\"", input)
	}
	return StatusResult(code), nil
}
