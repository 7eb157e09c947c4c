package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/config/configtest"
)

// .env.example says "copy to .env": deskbot reads it from its working
// directory, in the format the file and godotenv share (comments, quotes,
// export).
func TestEnvFileIsRead(t *testing.T) {
	dir := t.TempDir()
	configtest.EnvFile(t, dir, "# the bot\nDESKBOT_T_TOKEN=123:abc\nexport DESKBOT_T_CHAT=-1001\nDESKBOT_T_QUOTED=\"a b # not a comment\"\nDESKBOT_T_LIST='111, 222' # a comment\n",
		"DESKBOT_T_TOKEN", "DESKBOT_T_CHAT", "DESKBOT_T_QUOTED", "DESKBOT_T_LIST")
	path, err := LoadEnvFile(dir)
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
	configtest.EnvFile(t, dir, "DESKBOT_T_CHAT=-1001\nDESKBOT_T_EMPTY=from-file\nDESKBOT_T_NEW=from-file\n", "DESKBOT_T_CHAT", "DESKBOT_T_EMPTY", "DESKBOT_T_NEW")
	if _, err := LoadEnvFile(dir); err != nil {
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
	path, err := LoadEnvFile(t.TempDir())
	if path != "" || err != nil {
		t.Errorf("loadEnvFile of a folder without .env = %q, %v; want \"\", nil", path, err)
	}
}

// A file godotenv cannot read stops the start, and the message does not
// quote the file: the mistake may sit next to a secret.
func TestBrokenEnvFileIsRefusedWithoutQuotingIt(t *testing.T) {
	dir := t.TempDir()
	configtest.EnvFile(t, dir, "TELEGRAM_TOKEN=123:sekrit-value\nTHIS IS \"NOT=a line sekrit-value\n", "TELEGRAM_TOKEN")
	_, err := LoadEnvFile(dir)
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
