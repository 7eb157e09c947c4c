package webapp

import "testing"

// TestCheckURL: Telegram opens Mini Apps only over https; plain http is a
// local look at a loopback host, never an address on a network.
func TestCheckURL(t *testing.T) {
	cases := []struct {
		url  string
		ok   bool
		path string
	}{
		{"https://desks.example.com/desks/", true, "/desks/"},
		{"https://desks.example.com", true, "/"},
		{"https://desks.example.com/team/desks", true, "/team/desks/"},
		{"http://127.0.0.1:8080/desks/", true, "/desks/"},
		{"http://localhost/desks/", true, "/desks/"},
		{"http://[::1]/desks/", true, "/desks/"},
		{"http://desks.example.com/desks/", false, ""},
		{"http://10.0.0.5/desks/", false, ""},
		{"ftp://desks.example.com/", false, ""},
		{"https://user:pw@desks.example.com/", false, ""},
		{"https://desks.example.com/desks/?x=1", false, ""},
		{"https://desks.example.com/healthz", false, ""},
		{"https://desks.example.com/metrics/x", false, ""},
		{"desks.example.com/desks", false, ""},
	}
	for _, c := range cases {
		_, err := CheckURL(c.url)
		if got := err == nil; got != c.ok {
			t.Errorf("CheckURL(%q) = %v, want ok %v", c.url, err, c.ok)
			continue
		}
		if !c.ok {
			continue
		}
		s, err := New(Config{URL: c.url}, Deps{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Path(); got != c.path {
			t.Errorf("%q serves at %q, want %q", c.url, got, c.path)
		}
	}
}
