package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/config"
	"github.com/deskbot/deskbot/config/configtest"
)

// `deskbot check` says which file it read, and checks the values the file
// gave: the telegram line is ok with the file's token and chat.
func TestCheckNamesTheEnvFileItRead(t *testing.T) {
	env := configtest.GoodEnv(t)
	dir := t.TempDir()
	var body strings.Builder
	var names []string
	for _, k := range []string{"TELEGRAM_TOKEN", "TELEGRAM_API_URL", "TELEGRAM_CHAT_ID", "TELEGRAM_APPROVERS"} {
		fmt.Fprintf(&body, "%s=%s\n", k, env[k])
		names = append(names, k)
	}
	for k, v := range env {
		if !slices.Contains(names, k) && k != "PATH" {
			t.Setenv(k, v) // the rest from the environment
		}
	}
	configtest.EnvFile(t, dir, body.String(), names...)
	t.Chdir(dir)

	path, err := config.LoadEnvFile(".")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code := command(t.Context(), []string{"check"}, path, environMap(os.Environ()), &out, &out)
	if code != 0 {
		t.Fatalf("check failed (%d):\n%s", code, &out)
	}
	lines := map[string]string{}
	for _, m := range configtest.LineRE.FindAllStringSubmatch(out.String(), -1) {
		lines[m[1]] = m[2] + " " + m[3]
	}
	if want := "ok read " + filepath.Join(dir, ".env") + " "; !strings.HasPrefix(lines["env file"], want) {
		t.Errorf("check does not say which file it read (want %q):\n%s", want, &out)
	}
	if !strings.Contains(out.String(), "token valid: the bot is @") {
		t.Errorf("check did not use the file's token:\n%s", &out)
	}

	out.Reset()
	command(t.Context(), []string{"check"}, "", env, &out, &out)
	if want := "no .env in "; !strings.Contains(out.String(), want) {
		t.Errorf("check without a file does not say so (want %q):\n%s", want, &out)
	}
}
