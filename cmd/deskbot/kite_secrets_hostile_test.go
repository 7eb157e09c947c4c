package main

import (
	"os"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
)

// The hostile desk of a service logged in to Kite hunts for the API secret
// and the day's access token from its terminal: its environment, every
// process's environment and command line it can see, the files it can
// read, and Redis on the host's loopback. What it finds goes back to its
// model, so the model's requests are where a leak would show; none of them
// carries either secret, and neither do the logs or the chat
// (noKiteSecrets). The service also learns the access token for its own
// log scrubber.
func TestHostileDeskHuntsForKiteSecrets(t *testing.T) {
	t.Parallel()
	s, kt, tr := mustKiteTrading(t, nil)
	// Without bubblewrap (SANDBOX=auto) a desk has no terminal to hunt from.
	if mode := s.main.Sandbox.Mode(); mode != "bwrap" {
		if os.Getenv("DESKBOT_REQUIRE_BWRAP") == "1" {
			t.Fatalf("sandbox mode %s: bubblewrap required but not usable", mode)
		}
		t.Skipf("sandbox mode %s: bubblewrap is not usable here, so a desk has no terminal to hunt from (install the bubblewrap package; DESKBOT_REQUIRE_BWRAP=1 fails instead)", mode)
	}
	const hunt = `env; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\0' '\n' <"$f"; echo; done 2>&1 | head -c 20000; ` +
		`timeout 5 grep -rIsh -e KITE -e access_token /etc /tmp /home /root /var /run /work 2>/dev/null | head -c 20000; ` +
		`(exec 3<>/dev/tcp/127.0.0.1/6379 && printf 'KEYS *\r\n' >&3 && timeout 2 cat <&3) 2>&1 | head -c 5000; echo hunted`
	s.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		if last := r.Last(); last.Role == "user" && strings.HasSuffix(last.Text, "hunt") {
			return modeltest.Calls(modeltest.ToolCall{Name: "bash", Arguments: deskbottest.MustJSON(t, map[string]string{"command": hunt})})
		}
		return tr.handle(r)
	})
	s.tg.InjectText(asha, groupID, "/tell main hunt", 0)
	found := tr.mustSee(t, "hunted")
	if !strings.Contains(found, "PATH=") {
		t.Fatalf("the hunt did not run as a desk's command: %q", found)
	}
	secrets := append(kt.AccessTokens(), kiteSecret)
	if len(secrets) < 2 {
		t.Fatal("no access token was made: the login did not happen")
	}
	for _, r := range s.model.Requests() {
		for _, secret := range secrets {
			if strings.Contains(string(r.Raw), secret) {
				t.Errorf("a Kite secret (%.6s…) reached the desk's model in request %d", secret, r.Index)
			}
		}
	}
	for _, token := range kt.AccessTokens() {
		if got := s.main.Redactor.Scrub("token " + token); strings.Contains(got, token) {
			t.Errorf("the service's log scrubber does not know the day's access token (%.6s…)", token)
		}
	}
	if _, err := s.main.Login.Session(t.Context()); err != nil {
		t.Errorf("the session after the hunt: %v", deskbot.ErrorMessage(err))
	}
}
