package health

import (
	"fmt"
	"strconv"
	"strings"
)

// simulatedGRPCFailures are the gRPC codes a simulated grpc probe may name
// besides those GRPCResult classifies: the codes that are no answer of the
// health service but a failure to reach it.
var simulatedGRPCFailures = []string{
	"CANCELLED", "INVALID_ARGUMENT", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
}

// SimulatedResultSyntax describes the inputs ParseSimulatedResult accepts,
// for help texts and error messages.
const SimulatedResultSyntax = `[KIND:]ANSWER, KIND http (the default), tcp or grpc; ` +
	`http: a status code (100-599), body_mismatch, timeout or error; ` +
	`tcp: ok, refused, reset, timeout or error; ` +
	`grpc: SERVING, NOT_SERVING, UNKNOWN, UNIMPLEMENTED, NOT_FOUND, SERVICE_UNKNOWN, DEADLINE_EXCEEDED, ` +
	`UNAVAILABLE or another gRPC code name`

// ParseSimulatedResult turns one input of `probegate simulate` into the
// result a probe of that kind classifies the same answer as. An input is
// [KIND:]ANSWER (SimulatedResultSyntax): "503", "timeout" and "error" are
// HTTP as before, "body_mismatch" an ok status whose body does not match,
// "tcp:ok" an accepted connection, "grpc:NOT_SERVING" a health check
// answer. The answers of tcp and grpc are case-insensitive.
func ParseSimulatedResult(input string) (Result, error) {
	kind, answer, found := strings.Cut(input, ":")
	if !found {
		kind, answer = "http", input
	}
	var (
		r  Result
		ok bool
	)
	switch kind {
	case "http":
		r, ok = simulatedHTTP(answer)
	case "tcp":
		r, ok = simulatedTCP(strings.ToLower(answer))
	case "grpc":
		r, ok = simulatedGRPC(strings.ToUpper(answer))
	default:
		return Result{}, fmt.Errorf("%q is not a probe result: %q is not a probe kind (want %s)", input, kind, SimulatedResultSyntax)
	}
	if !ok {
		return Result{}, fmt.Errorf("%q is not a probe result: want %s", input, SimulatedResultSyntax)
	}
	return r, nil
}

func simulatedHTTP(answer string) (Result, bool) {
	switch answer {
	case "timeout":
		return TimeoutResult("simulated timeout"), true
	case "error":
		return TransportResult("simulated transport error"), true
	case "body_mismatch":
		return BodyMismatchResult(200), true
	}
	code, err := strconv.Atoi(answer)
	if err != nil || code < 100 || code > 599 {
		return Result{}, false
	}
	return StatusResult(code), true
}

func simulatedTCP(answer string) (Result, bool) {
	switch answer {
	case "ok":
		return ConnectedResult(), true
	case "refused", "reset", "error":
		return TransportResult("simulated connection " + answer), true
	case "timeout":
		return TimeoutResult("simulated timeout"), true
	}
	return Result{}, false
}

func simulatedGRPC(answer string) (Result, bool) {
	switch answer {
	case StatusServing, StatusNotServing, StatusUnknown, StatusUnimplemented, StatusNotFound, StatusServiceUnknown:
		return GRPCResult(answer), true
	case "DEADLINE_EXCEEDED":
		return TimeoutResult("simulated DEADLINE_EXCEEDED"), true
	}
	for _, code := range simulatedGRPCFailures {
		if answer == code {
			return TransportResult("simulated " + code), true
		}
	}
	return Result{}, false
}
