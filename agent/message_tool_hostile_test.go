package agent_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/store/storetest"
)

// A hostile desk plants symlinks out of its folder and names them as
// pictures, to learn which host files exist (another desk's, the service's
// own). The service must not resolve a desk's path on the host: the answer
// is the same whether the target exists or not.
func TestHostilePictureSymlinksRevealNothingOutside(t *testing.T) {
	st := storetest.MustOpen(t)
	data := t.TempDir()
	deskDir := filepath.Join(data, "desks", "main")
	mustFile(t, filepath.Join(deskDir, "charts", "pnl.png"))
	mustFile(t, filepath.Join(data, "desks", "other", "book.png"))
	mustFile(t, filepath.Join(data, "service.env"))
	for link, target := range map[string]string{
		"abs-there.png":   filepath.Join(data, "service.env"),
		"abs-missing.png": filepath.Join(data, "no-such.env"),
		"rel-there.png":   "../other/book.png",
		"rel-missing.png": "../other/no-such.png",
	} {
		if err := os.Symlink(target, filepath.Join(deskDir, link)); err != nil {
			t.Fatal(err)
		}
	}
	tool := &agent.MessageTool{Events: st, DataDir: data, Now: func() time.Time { return deskbottest.FixedNow }}
	answer := func(picture string) string {
		t.Helper()
		args, _ := json.Marshal(map[string]string{"text": "x", "picture": picture})
		res, err := tool.Run(t.Context(), "main", args)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if !res.IsError {
			t.Fatalf("picture %s was accepted: %+v", picture, res)
		}
		return strings.ReplaceAll(res.Text, picture, "P")
	}
	for _, kind := range []string{"abs", "rel"} {
		there, missing := answer(kind+"-there.png"), answer(kind+"-missing.png")
		if there != missing {
			t.Errorf("%s symlinks out: an existing target is answered %q, a missing one %q; the desk learns what exists outside its folder", kind, there, missing)
		}
	}
	// A picture inside the folder, through an inside symlink too, is sent.
	if err := os.Symlink("charts/pnl.png", filepath.Join(deskDir, "inside.png")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"charts/pnl.png", "inside.png"} {
		args, _ := json.Marshal(map[string]string{"text": "x", "picture": p})
		if res, err := tool.Run(t.Context(), "main", args); err != nil || res.IsError {
			t.Errorf("picture %s: %+v, %v; want sent", p, res, err)
		}
	}
}
