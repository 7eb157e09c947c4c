// Package docs carries the documentation files the binary itself needs:
// the example desks file, which `deskbot demo` runs so that its desks show
// four eyes, hard limits and risk rules as a team would write them.
// It holds data only, read once; nothing here changes after the build.
package docs

import _ "embed"

// DesksExample is docs/desks.example.toml, as shipped.
//
//go:embed desks.example.toml
var DesksExample []byte
