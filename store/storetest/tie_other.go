//go:build !linux

package storetest

import "os/exec"

const canTieToParent = false

func dieWithParent(*exec.Cmd) {}
