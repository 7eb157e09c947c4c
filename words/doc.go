// Package words owns the words people and models read: books, orders and
// fills in trading words (₹, Indian digit grouping), the texts a desk's
// model is told (the hold message, a refusal by a hard limit, a flatten),
// a desk's state and a policy as a desk team reads them, and the India
// clock every message shows. Texts a model reads are a contract: tests pin
// them word for word. Pure functions, safe for concurrent use.
package words
