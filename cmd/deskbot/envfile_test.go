package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// mustEnvFile writes dir/.env and arranges for every variable it names to
// be as it was (unset) once the test ends: loading it sets the process's
// environment.
func mustEnvFile(t *testing.T, dir, body string, names ...string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if _, set := os.LookupEnv(n); set {
			continue // the test set it: t.Setenv restores it
		}
		t.Setenv(n, "")
		os.Unsetenv(n)
	}
}

// .env.example says "copy to .env": deskbot reads it from its working
// directory, in the format the file and godotenv share (comments, quotes,
// export).
func TestEnvFileIsRead(t *testing.T) {
	dir := t.TempDir()
	mustEnvFile(t, dir, "# the bot\nDESKBOT_T_TOKEN=123:abc\nexport DESKBOT_T_CHAT=-1001\nDESKBOT_T_QUOTED=\"a b # not a comment\"\nDESKBOT_T_LIST='111, 222' # a comment\n",
		"DESKBOT_T_TOKEN", "DESKBOT_T_CHAT", "DESKBOT_T_QUOTED", "DESKBOT_T_LIST")
	path, err := loadEnvFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, ".env"); path != want {
		t.Errorf("read %q, want %q", path, want)
	}
	for name, want := range map[string]string{
		"DESKBOT_T_TOKEN": "123:abc", "DESKBOT_T_CHAT": "-1001", "DESKBOT_T_QUOTED": "a b # not a comment", "DESKBOT_T_LIST": "111, 222",
	} {
		if got := os.Getenv(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

// The process's own environment wins over the file: a variable set on the
// command line or by a supervisor, even to nothing, is not replaced.
func TestEnvironmentWinsOverEnvFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DESKBOT_T_CHAT", "-1002")
	t.Setenv("DESKBOT_T_EMPTY", "")
	mustEnvFile(t, dir, "DESKBOT_T_CHAT=-1001\nDESKBOT_T_EMPTY=from-file\nDESKBOT_T_NEW=from-file\n", "DESKBOT_T_CHAT", "DESKBOT_T_EMPTY", "DESKBOT_T_NEW")
	if _, err := loadEnvFile(dir); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"DESKBOT_T_CHAT": "-1002", "DESKBOT_T_EMPTY": "", "DESKBOT_T_NEW": "from-file"} {
		if got := os.Getenv(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

// No .env is no error: the environment alone configures the service.
func TestNoEnvFile(t *testing.T) {
	path, err := loadEnvFile(t.TempDir())
	if path != "" || err != nil {
		t.Errorf("loadEnvFile of a folder without .env = %q, %v; want \"\", nil", path, err)
	}
}

// A file godotenv cannot read stops the start, and the message does not
// quote the file: the mistake may sit next to a secret.
func TestBrokenEnvFileIsRefusedWithoutQuotingIt(t *testing.T) {
	dir := t.TempDir()
	mustEnvFile(t, dir, "TELEGRAM_TOKEN=123:sekrit-value\nTHIS IS \"NOT=a line sekrit-value\n", "TELEGRAM_TOKEN")
	_, err := loadEnvFile(dir)
	if err == nil {
		t.Fatal("a broken .env was read")
	}
	if strings.Contains(err.Error(), "sekrit") {
		t.Errorf("the error quotes the file: %v", err)
	}
	if !strings.Contains(err.Error(), filepath.Join(dir, ".env")) {
		t.Errorf("the error does not name the file: %v", err)
	}
}

// `deskbot check` says which file it read, and checks the values the file
// gave: the telegram line is ok with the file's token and chat.
func TestCheckNamesTheEnvFileItRead(t *testing.T) {
	env := goodEnv(t)
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
	mustEnvFile(t, dir, body.String(), names...)
	t.Chdir(dir)

	path, err := loadEnvFile(".")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code := command(t.Context(), []string{"check"}, path, environMap(os.Environ()), &out, &out)
	if code != 0 {
		t.Fatalf("check failed (%d):\n%s", code, &out)
	}
	lines := map[string]string{}
	for _, m := range lineRE.FindAllStringSubmatch(out.String(), -1) {
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
