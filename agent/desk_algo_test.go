package agent_test

import (
	"strings"
	"testing"

	"github.com/deskbot/deskbot/agent"
)

// A desk's algo_id in DESKS_FILE is its own algo id at Kite, overriding
// KITE_ALGO_ID; one that is empty or malformed stops the start naming the
// desk.
func TestDeskAlgoID(t *testing.T) {
	tests := []struct {
		name, line string
		want       map[string]string
		wantErr    string
	}{
		{"left out", "", map[string]string{}, ""},
		{"set", `algo_id = "ALGO-7"`, map[string]string{"main": "ALGO-7"}, ""},
		{"empty", `algo_id = ""`, nil, `desk "main": algo_id must be`},
		{"a second form field", `algo_id = "7&tag=x"`, nil, `desk "main": algo_id must be`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustDeskFile(t, "[[desk]]\nname = \"main\"\n"+tt.line+"\n\n[[desk]]\nname = \"research\"\n")
			desks, err := agent.LoadDesks(nil, p, defaultChain)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := agent.AlgoIDs(desks)
			if len(got) != len(tt.want) || got["main"] != tt.want["main"] {
				t.Errorf("AlgoIDs = %v, want %v", got, tt.want)
			}
		})
	}
}
