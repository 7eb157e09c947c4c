package sandbox_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/sandbox"
)

// bubblewrap's /dev is a tmpfs of half the host's memory, writable by the
// desk: a desk that writes there, or into /dev/shm, would keep that memory
// until its sandbox ends, far past the bound of its /tmp. /dev must be
// read-only and /dev/shm as bounded as /tmp.
func TestHostileDevFill(t *testing.T) {
	needBwrap(t)
	cfg := testConfig(t, sandbox.ModeBwrap)
	cfg.Limits.Tmp = 4 << 20
	s := mustSession(t, mustManager(t, cfg), "main")
	// Each file stays within the file size limit; together they do not.
	fill := func(dir string) int {
		got := mustOutput(t, s, "for i in 1 2 3 4 5 6 7 8; do head -c 900000 /dev/zero > "+dir+"/f$i 2>/dev/null; done; du -sk "+dir+" 2>/dev/null | cut -f1")
		kb, _ := strconv.Atoi(strings.TrimSpace(got))
		return kb
	}
	for _, dir := range []string{"/dev", "/dev/shm"} {
		if kb := fill(dir); kb > 4<<10 {
			t.Errorf("the desk wrote %d kB into %s, more than its %d kB of /tmp", kb, dir, 4<<10)
		}
	}
	// What programs need of /dev still works: the devices, and a shared
	// memory segment that fits.
	if got := mustOutput(t, s, "rm -f /dev/shm/f*; echo x > /dev/null && head -c 4 /dev/zero | wc -c && head -c 1000 /dev/zero > /dev/shm/seg && echo shm"); got != "4\nshm\n" {
		t.Errorf("devices or /dev/shm unusable: %q", got)
	}
}
