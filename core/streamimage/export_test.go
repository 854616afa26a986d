package streamimage

// The two readings of DecodeEvent, for the external tests.
var (
	DecodeEventFast    = decodeEventFast
	DecodeEventSlow    = decodeEventSlow
	ErrFastUnsupported = errUnsupported
)
