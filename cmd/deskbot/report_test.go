package main

import (
	"bytes"
	"image/png"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot/config"
	"github.com/deskbot/deskbot/config/configtest"
)

// REPORT_AT is a time of day, HH:MM India time; anything else stops the
// start with a line saying so.
func TestLoadConfigReportAt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		want    string
		wantErr string
	}{
		{"default", nil, "15:45", ""},
		{"set", map[string]string{"REPORT_AT": "16:05"}, "16:05", ""},
		{"no minutes", map[string]string{"REPORT_AT": "15"}, "", "REPORT_AT: must be a time of day as HH:MM"},
		{"past midnight", map[string]string{"REPORT_AT": "24:00"}, "", "REPORT_AT: must be a time of day as HH:MM"},
		{"a cron line", map[string]string{"REPORT_AT": "45 15 * * 1-5"}, "", "REPORT_AT: must be a time of day as HH:MM"},
		// caarlos0/env takes an empty variable as unset.
		{"empty", map[string]string{"REPORT_AT": ""}, "15:45", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := configtest.MinimalEnv()
			maps.Copy(env, tt.env)
			cfg, err := config.Load(env)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if got := cfg.ReportAt; got != tt.want {
					t.Errorf("REPORT_AT = %q, want %q", got, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

// The report's picture on the page is the page's data: a stranger, or a
// request without a sign-in, is refused and gets no picture; a member of
// the group gets a PNG; the desk view links it.
func TestDesksPageReportPicture(t *testing.T) {
	t.Parallel()
	s := startWithPage(t, nil)
	for _, path := range []string{"r/pnl/main", "r/pnl/main/week"} {
		for _, c := range []struct {
			name, initData string
			want           int
		}{
			{"no sign-in", "", 401},
			{"a stranger outside the group", initDataFor(stranger, time.Now()), 403},
		} {
			code, body, h := s.pageCall(t, "GET", path, c.initData, nil)
			if code != c.want || strings.HasPrefix(body, "\x89PNG") || h.Get("Content-Type") == "image/png" {
				t.Errorf("%s, %s: %d %s %.40q; want %d and no picture", path, c.name, code, h.Get("Content-Type"), body, c.want)
			}
		}
		code, body, h := s.pageCall(t, "GET", path, initDataFor(vik, time.Now()), nil)
		if code != 200 || h.Get("Content-Type") != "image/png" {
			t.Fatalf("%s for a member: %d %s %.80q", path, code, h.Get("Content-Type"), body)
		}
		cfg, err := png.DecodeConfig(bytes.NewReader([]byte(body)))
		if err != nil || cfg.Width < 800 {
			t.Errorf("%s: %v, %d px wide; want a PNG at least 800 wide", path, err, cfg.Width)
		}
		if got := h.Get("Cache-Control"); got != "no-store" {
			t.Errorf("%s: Cache-Control %q, want no-store", path, got)
		}
	}
	if code, body, _ := s.pageCall(t, "GET", "r/pnl/omega", initDataFor(vik, time.Now()), nil); code != 404 || !strings.Contains(body, "no desk named") {
		t.Errorf("an unknown desk: %d %q", code, body)
	}
	_, view, _ := s.pageCall(t, "GET", "v/desk/main", initDataFor(vik, time.Now()), nil)
	for _, want := range []string{`data-picture="r/pnl/main"`, `data-picture="r/pnl/main/week"`} {
		if !strings.Contains(view, want) {
			t.Errorf("the desk view lacks the link %s", want)
		}
	}
}
