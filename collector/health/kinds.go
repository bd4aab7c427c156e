package health

// The answers of the probe kinds without an HTTP status, as Result.Status
// holds them. The gRPC ones are the names of grpc.health.v1 statuses and
// of gRPC codes as the gRPC specification spells them.
const (
	// StatusConnected is a tcp probe whose connection was accepted.
	StatusConnected = "connected"
	// StatusServing is a gRPC health check answered SERVING.
	StatusServing = "SERVING"
	// StatusNotServing is a gRPC health check answered NOT_SERVING.
	StatusNotServing = "NOT_SERVING"
	// StatusUnknown is a gRPC health check answered UNKNOWN.
	StatusUnknown = "UNKNOWN"
	// StatusServiceUnknown is a gRPC health check answered SERVICE_UNKNOWN.
	StatusServiceUnknown = "SERVICE_UNKNOWN"
	// StatusUnimplemented is the gRPC code of a server without the health
	// service.
	StatusUnimplemented = "UNIMPLEMENTED"
	// StatusNotFound is the gRPC code of a health check asking about a
	// service the server does not know.
	StatusNotFound = "NOT_FOUND"
)

// BodyMismatchResult is the result of an HTTP probe answered with the ok
// status code whose body did not match the expected regexp: failed, and
// answered, so it latches like a 5xx.
func BodyMismatchResult(code int) Result {
	return Result{Class: ClassFailed, Reason: ReasonBodyMismatch, StatusCode: code,
		Err: "the body does not match expect_body_regexp"}
}

// ConnectedResult is the result of a tcp probe whose connection was
// accepted within the timeout. A tcp probe has no refusal: a refused
// connection is a TransportResult.
func ConnectedResult() Result {
	return Result{Class: ClassOK, Status: StatusConnected}
}

// GRPCResult classifies what a gRPC server answered a health check with:
// the health status, or the gRPC code of the error it returned instead.
// SERVING is ok. NOT_SERVING, UNKNOWN and any other status are failed
// with reason grpc_not_serving. UNIMPLEMENTED (no health service),
// NOT_FOUND and SERVICE_UNKNOWN (no such service name) are refused: like
// an HTTP 404 they say the probe asks the wrong question, not that the
// backend is down. All of them are answered. Other gRPC codes are not
// answers but transport failures; the probe classifies them.
func GRPCResult(status string) Result {
	switch status {
	case StatusServing:
		return Result{Class: ClassOK, Status: status}
	case StatusUnimplemented, StatusNotFound, StatusServiceUnknown:
		return Result{Class: ClassRefused, Status: status}
	}
	return Result{Class: ClassFailed, Reason: ReasonGRPCNotServing, Status: status,
		Err: "the health service answered " + status}
}
