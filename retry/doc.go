// Package retry owns the service's habits of waiting: between tries, a
// capped exponential Backoff (each retry loop owns its own; not safe for
// concurrent use) and Sleep, which always gives way to a stop; for a loop
// that meets the same things at every pass (halts to finish, GTTs to
// delete), a Schedule of when each may be tried again after it failed
// (safe for concurrent use); and for a read the caller can do without,
// Within, which waits a bounded time however the read behaves.
package retry
