package bot

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
)

// A hostile desk names a picture that leads to a host file, or swaps its
// picture for one after the message tool checked it. The secret must never
// reach Telegram, and the desk's words still go out, saying the picture was
// left out.

const hostSecret = "REDIS_URL=redis://:hunter2@127.0.0.1:6379"

// mustFile writes data at path, making its folders.
func mustFile(t *testing.T, path, data string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// checkNothingUploaded fails if any upload to the fake carried the secret.
func checkNothingUploaded(t *testing.T, tg *telegramtest.Server, secret string) {
	t.Helper()
	for _, c := range tg.Calls("") {
		if bytes.Contains(c.Upload, []byte(secret)) || strings.Contains(c.Text, secret) {
			t.Errorf("%s carried the host's secret: %q", c.Method, c.Upload)
		}
	}
}

func TestDeskPictureOutsideItsFolderIsNotUploaded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// plant lays out the desk's folder (and the host) and returns the
		// event's picture path.
		plant func(t *testing.T, desk, secret string) string
		why   string
	}{
		{"symlink to a host file", func(t *testing.T, desk, secret string) string {
			mustSymlink(t, secret, filepath.Join(desk, "chart.png"))
			return "chart.png"
		}, "it is not a file in the desk's folder"},
		{"absolute path to a host file", func(t *testing.T, desk, secret string) string {
			return secret
		}, "it is not a file in the desk's folder"},
		{"absolute path through a symlinked folder", func(t *testing.T, desk, secret string) string {
			mustSymlink(t, filepath.Dir(secret), filepath.Join(desk, "charts"))
			return filepath.Join(desk, "charts", filepath.Base(secret))
		}, "it is not a file in the desk's folder"},
		{"dot dot", func(t *testing.T, desk, secret string) string {
			return "../" + filepath.Base(filepath.Dir(secret)) + "/" + filepath.Base(secret)
		}, "it is not a file in the desk's folder"},
		{"another desk's folder", func(t *testing.T, desk, secret string) string {
			return mustFile(t, filepath.Join(filepath.Dir(desk), "beta", "chart.png"), hostSecret)
		}, "it is not a file in the desk's folder"},
		{"a FIFO", func(t *testing.T, desk, secret string) string {
			if err := syscall.Mkfifo(filepath.Join(desk, "chart.png"), 0o600); err != nil {
				t.Fatal(err)
			}
			return "chart.png"
		}, "it is not a file in the desk's folder"},
		{"a device", func(t *testing.T, desk, secret string) string {
			mustSymlink(t, "/dev/zero", filepath.Join(desk, "chart.png"))
			return "chart.png"
		}, "it is not a file in the desk's folder"},
		{"larger than Telegram takes", func(t *testing.T, desk, secret string) string {
			mustFile(t, filepath.Join(desk, "chart.png"), hostSecret+strings.Repeat("x", maxPicture))
			return "chart.png"
		}, "it is larger than 10 MB"},
		{"missing", func(t *testing.T, desk, secret string) string { return "nothing.png" },
			"there is no such file in the desk's folder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustOutboxRig(t)
			desk := filepath.Join(r.pictures, "alpha")
			if err := os.MkdirAll(desk, 0o755); err != nil {
				t.Fatal(err)
			}
			secret := mustFile(t, filepath.Join(t.TempDir(), "etc", "deskbot.env"), hostSecret)
			pic := tt.plant(t, desk, secret)
			r.publish(t,
				deskbot.Event{Kind: deskbot.EventDeskMessage, Desk: "alpha", Text: "see chart", Picture: pic},
				said("alpha", "after the picture"),
			)
			r.run(t)
			// The message after it proves the outbox went past the picture.
			deskbottest.EventuallyWithin(t, 20e9, "both desk messages delivered", func() bool {
				return len(r.tg.BotMessages(dlGroup)) == 2
			})
			msgs := r.tg.BotMessages(dlGroup)
			if msgs[0].Photo || !strings.Contains(msgs[0].Plain, "see chart") || !strings.Contains(msgs[0].Plain, "(A picture was left out: "+tt.why+".)") {
				t.Errorf("first message: photo %v, reads %q; want the words with the note %q", msgs[0].Photo, msgs[0].Plain, tt.why)
			}
			if r.tg.Count("sendPhoto") != 0 {
				t.Errorf("%d uploads of a refused picture", r.tg.Count("sendPhoto"))
			}
			checkNothingUploaded(t, r.tg, hostSecret)
		})
	}
}

// The picture is uploaded from the handle that was checked: a desk that
// swaps it for a symlink to a host file, or for a FIFO, while the upload is
// under way (here: between a failed attempt and its retry) changes nothing.
func TestDeskPictureSwappedDuringUploadIsNotReopened(t *testing.T) {
	t.Parallel()
	swaps := map[string]func(t *testing.T, tmp, secret string){
		"symlink to a host file": func(t *testing.T, tmp, secret string) { mustSymlink(t, secret, tmp) },
		"FIFO": func(t *testing.T, tmp, secret string) {
			if err := syscall.Mkfifo(tmp, 0o600); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, swap := range swaps {
		t.Run(name, func(t *testing.T) {
			r := mustOutboxRig(t)
			desk := filepath.Join(r.pictures, "alpha")
			secret := mustFile(t, filepath.Join(t.TempDir(), "deskbot.env"), hostSecret)
			chart := mustFile(t, filepath.Join(desk, "chart.png"), "\x89PNG original")
			// The message tool hands over the path it resolved.
			r.tg.Hang("sendPhoto", 0)
			r.tg.Fail(telegramtest.Failure{Method: "sendPhoto", Code: 500, Times: 1})
			r.publish(t, deskbot.Event{Kind: deskbot.EventDeskMessage, Desk: "alpha", Text: "see chart", Picture: chart})
			r.run(t)
			deskbottest.Eventually(t, "the first upload reaches Telegram", func() bool { return r.tg.Count("sendPhoto") == 1 })
			tmp := filepath.Join(desk, ".swap")
			swap(t, tmp, secret)
			if err := os.Rename(tmp, chart); err != nil {
				t.Fatal(err)
			}
			r.tg.Release()
			deskbottest.EventuallyWithin(t, 20e9, "the picture is sent", func() bool { return len(r.tg.Sent("sendPhoto")) == 1 })
			for i, c := range r.tg.Calls("sendPhoto") {
				if string(c.Upload) != "\x89PNG original" {
					t.Errorf("attempt %d uploaded %q, want the bytes checked", i+1, c.Upload)
				}
			}
			checkNothingUploaded(t, r.tg, hostSecret)
		})
	}
}
