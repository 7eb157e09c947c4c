// Package retry owns the service's one habit of waiting between tries: a
// capped exponential Backoff (each retry loop owns its own; not safe for
// concurrent use) and Sleep, which always gives way to a stop.
package retry
