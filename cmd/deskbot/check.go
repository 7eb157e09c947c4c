package main

import (
	"context"
	"fmt"
	"io"
)

// runCheck validates the configuration without starting anything. Issue 6
// extends it to probe Redis, Telegram, the models and bubblewrap.
func runCheck(ctx context.Context, environ map[string]string, w io.Writer) int {
	if _, err := LoadConfig(environ); err != nil {
		fmt.Fprintln(w, err.Error())
		return 1
	}
	fmt.Fprintln(w, "configuration: ok")
	return 0
}
