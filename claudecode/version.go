package claudecode

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
)

// MinVersion is the oldest Claude Code CLI deskbot runs, and the one CI
// installs (.ci/run reads it from this line): the oldest tried that keeps
// a session's first prompt on --resume and, with the flags args gives,
// ignores the desk folder's settings, hooks and git config. Older ones
// fail: those before 2.1.257 refuse --system-prompt-snapshot (without
// which 2.1.197 ran a command planted in the folder's git config), and
// 2.1.257 was seen losing the first prompt on resume (it passes the
// real-CLI tests against a fake API that gives each reply its own id, but
// CI runs this version, so this is the one known to work). Change it only
// with the real-CLI tests (DESKBOT_REAL_CLAUDE) passing on the new one.
const MinVersion = "2.1.332"

// Install installs MinVersion. It is pinned: on Node 20 an unpinned
// install resolves to 2.1.197, the last release that does not declare
// Node 22 (a pinned one installs on Node 20 too: its claude is a native
// program).
const (
	Install = "npm install -g @anthropic-ai/claude-code@" + MinVersion
	Node    = "Node.js 22 or newer"
)

// installHint is the words every refusal ends with.
const installHint = Install + " (" + Node + ")"

// versionRE is the version at the start of `claude --version`'s answer
// ("2.1.332 (Claude Code)"); a pre-release ("2.1.332-beta.1") keeps its
// suffix.
var versionRE = regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?(\s|$)`)

// version is a parsed CLI version.
type version struct {
	n   [3]int
	pre string // the pre-release part, "" for a release
}

// parseVersion reads what `claude --version` printed.
func parseVersion(s string) (version, bool) {
	m := versionRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return version{}, false
	}
	var v version
	for i := range v.n {
		n, err := strconv.Atoi(m[i+1])
		if err != nil {
			return version{}, false // a number too long for an int
		}
		v.n[i] = n
	}
	v.pre = m[4]
	return v, true
}

func (v version) String() string { return fmt.Sprintf("%d.%d.%d%s", v.n[0], v.n[1], v.n[2], v.pre) }

// atLeast says whether v is min or newer. A pre-release comes before its
// release (semver), so 2.1.332-beta is older than 2.1.332.
func (v version) atLeast(min version) bool {
	for i := range v.n {
		if v.n[i] != min.n[i] {
			return v.n[i] > min.n[i]
		}
	}
	return v.pre == "" || min.pre != ""
}

// CheckVersion runs bin --version and refuses a CLI older than
// MinVersion, or one whose version cannot be read: the error (EINVALID)
// says which version was found and how to install the one deskbot needs.
// It returns what the CLI printed.
func CheckVersion(ctx context.Context, bin string) (string, error) {
	bin = cmp.Or(bin, DefaultBin)
	got, err := Version(ctx, bin)
	if err != nil {
		return "", deskbot.Errorf(deskbot.EINVALID, "cannot run Claude Code: %v; install it with %s", err, installHint)
	}
	v, ok := parseVersion(got)
	if !ok {
		return got, deskbot.Errorf(deskbot.EINVALID, "%s --version printed %q, not a version; install Claude Code with %s", bin, argtext.Clip(got, 100, "…"), installHint)
	}
	if min, _ := parseVersion(MinVersion); !v.atLeast(min) {
		return got, deskbot.Errorf(deskbot.EINVALID, "%s is Claude Code %s, older than %s, the oldest deskbot runs; install it with %s", bin, v, MinVersion, installHint)
	}
	return got, nil
}

// Version runs bin --version.
func Version(ctx context.Context, bin string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cmp.Or(bin, DefaultBin), "--version")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "DISABLE_AUTOUPDATER=1"}
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("%s --version: %v: %s", bin, err, argtext.Clip(strings.TrimSpace(string(ee.Stderr)), 200, "…"))
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}
