package audit_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/audit"
	"github.com/deskbot/deskbot/store/storetest"
)

// A desk's text reaches the export (a tool's name it made up, its
// arguments, a refusal's detail): no cell of it starts as a formula, and
// no line break in it starts a row.
func TestExportNeutralisesFormulas(t *testing.T) {
	s := storetest.MustOpen(t)
	ctx := t.Context()
	at := time.Now()
	day := deskbot.OrderDay(at)
	hostile := []string{"=HYPERLINK(\"http://evil\",\"x\")", "+1+2", "-2+3", "@SUM(A1)", "\t=1", "\r=1"}
	for i, h := range hostile {
		e := deskbot.AuditEntry{Action: "refuse", Desk: "alpha", Tool: h, By: h, At: at.Add(time.Duration(i) * time.Millisecond), Detail: h + "\n=cmd|' /C calc'!A0"}
		if err := s.Audit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// A held call whose arguments are not an order's words.
	if err := s.Audit(ctx, deskbot.AuditEntry{Action: "hold", Desk: "alpha", Tool: "place_order", RequestID: "r1", By: "desk alpha", At: at, Detail: `{"symbol":"=1+1"}`}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := audit.Export(ctx, audit.Deps{Ledger: s, Orders: s}, day, &out); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(rows), 1+len(hostile)+1; got != want {
		t.Fatalf("%d rows; want %d (a line break in a desk's text is no new row)", got, want)
	}
	for _, r := range rows {
		for _, c := range r {
			if c != "" && strings.ContainsRune("=+-@\t\r", rune(c[0])) {
				t.Errorf("cell %q starts as a formula", c)
			}
		}
	}
	if got, want := rows[1][2], "'"+hostile[0]; got != want {
		t.Errorf("tool cell = %q; want the text kept after a quote, %q", got, want)
	}
}

// Verify's words: the chain holds, or the entry it breaks at.
func TestVerifyWords(t *testing.T) {
	s := storetest.MustOpen(t)
	ctx := t.Context()
	var out bytes.Buffer
	ok, err := audit.Verify(ctx, s, &out)
	if err != nil || !ok || out.String() != "The audit chain holds: it has no entries yet.\n" {
		t.Errorf("an empty trail: %v, %v, %q", ok, err, out.String())
	}
	for range 3 {
		if err := s.Audit(ctx, deskbot.AuditEntry{Action: "pause", Desk: "alpha", By: "Asha (42)", At: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	out.Reset()
	if ok, err := audit.Verify(ctx, s, &out); err != nil || !ok || !strings.HasPrefix(out.String(), "The audit chain holds: 3 entries checked, from ") {
		t.Errorf("three entries: %v, %v, %q", ok, err, out.String())
	}
	last, err := s.Client().XRevRangeN(ctx, s.Key("audit"), "+", "-", 1).Result()
	if err != nil || len(last) != 1 {
		t.Fatal(last, err)
	}
	s.Client().XDel(ctx, s.Key("audit"), last[0].ID)
	out.Reset()
	if ok, err := audit.Verify(ctx, s, &out); err != nil || ok || !strings.Contains(out.String(), "Paused, desk alpha, by Asha (42)): its hash ") {
		t.Errorf("the last entry removed: %v, %v, %q", ok, err, out.String())
	}
}

// loggedOrder is an order log that holds one order, for every tag.
type loggedOrder struct {
	deskbot.OrderStore
	po deskbot.PlacedOrder
}

func (l loggedOrder) LoggedOrder(context.Context, string, string, string) (deskbot.PlacedOrder, error) {
	return l.po, nil
}

// An allowed order's row carries what the broker did with it, the algo id
// it was sent with included.
func TestExportNamesTheAlgoID(t *testing.T) {
	s := storetest.MustOpen(t)
	ctx := t.Context()
	at := time.Now()
	for i, e := range []deskbot.AuditEntry{
		{Action: "hold", Desk: "alpha", Tool: "place_order", RequestID: "r1", By: "desk alpha", Detail: `{"symbol":"INFY","side":"buy","quantity":10}`},
		{Action: "allow_once", Desk: "alpha", Tool: "place_order", RequestID: "r1", By: "Ravi (102)"},
		{Action: "ran", Desk: "alpha", Tool: "place_order", RequestID: "r1", By: "Ravi (102)"},
	} {
		e.At = at.Add(time.Duration(i) * time.Millisecond)
		if err := s.Audit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	po := deskbot.PlacedOrder{ID: "2512060001", Desk: "alpha", State: deskbot.OrderComplete, Filled: 10, AvgPrice: 1500, AlgoID: "ALGO1"}
	var out bytes.Buffer
	if err := audit.Export(ctx, audit.Deps{Ledger: s, Orders: loggedOrder{s, po}}, deskbot.OrderDay(at), &out); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("rows %q; want the header and the held call", rows)
	}
	got := map[string]string{}
	for i, h := range rows[0] {
		got[h] = rows[1][i]
	}
	if got["broker order id"] != "2512060001" || got["algo id"] != "ALGO1" {
		t.Errorf("broker order id %q, algo id %q; want 2512060001 and ALGO1", got["broker order id"], got["algo id"])
	}
}
