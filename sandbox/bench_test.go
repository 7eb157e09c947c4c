package sandbox_test

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/deskbot/deskbot/sandbox"
)

// BenchmarkThousandCommands runs, per iteration, 1,000 trivial commands
// each way (the floor and the sessions in turn, one command each) and
// reports the time per command and the ratios:
//
//	floor:   a bare pipe round trip to a running bash (write "echo x", read the line)
//	session: Session.Run("echo x") in fallback mode (the shell's command loop, marker, reader)
//	bwrap:   the same inside bubblewrap (when usable)
//	spawn:   exec of `bash -c "echo x"` per command, what a session saves
//
// go test -run '^$' -bench ThousandCommands -benchtime 3x ./sandbox/
func BenchmarkThousandCommands(b *testing.B) {
	const n = 1000
	floor := newPipeFloor(b)
	sess := benchSession(b, sandbox.ModeNone)
	var bw *sandbox.Session
	if bwrapUsable() == nil {
		bw = benchSession(b, sandbox.ModeBwrap)
	}
	ctx := b.Context()
	var tFloor, tSess, tBwrap, tSpawn time.Duration
	timed := func(total *time.Duration, one func()) {
		start := time.Now()
		one()
		*total += time.Since(start)
	}
	iters := 0
	for b.Loop() {
		iters++
		// The floor and the sessions take turns command by command, so
		// that a burst of load on the shared machine falls on all of them
		// alike: their ratio is the figure, the times move with the load.
		for range n {
			timed(&tFloor, floor.roundTrip)
			timed(&tSess, func() {
				if r, err := sess.Run(ctx, "echo x"); err != nil || r.Text != "x\n" {
					b.Fatalf("session: %q, %v", r.Text, err)
				}
			})
			if bw != nil {
				timed(&tBwrap, func() {
					if r, err := bw.Run(ctx, "echo x"); err != nil || r.Text != "x\n" {
						b.Fatalf("bwrap session: %q, %v", r.Text, err)
					}
				})
			}
		}
		start := time.Now()
		for range n {
			if out, err := exec.Command("bash", "-c", "echo x").Output(); err != nil || string(out) != "x\n" {
				b.Fatalf("spawn: %q, %v", out, err)
			}
		}
		tSpawn += time.Since(start)
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(iters*n) }
	b.ReportMetric(per(tFloor), "floor-µs/cmd")
	b.ReportMetric(per(tSess), "session-µs/cmd")
	b.ReportMetric(per(tSpawn), "spawn-µs/cmd")
	b.ReportMetric(float64(tSess)/float64(tFloor), "session/floor")
	b.ReportMetric(float64(tSpawn)/float64(tFloor), "spawn/floor")
	b.ReportMetric(float64(tSpawn)/float64(tSess), "spawn/session")
	if bw != nil {
		b.ReportMetric(per(tBwrap), "bwrap-µs/cmd")
		b.ReportMetric(float64(tBwrap)/float64(tFloor), "bwrap/floor")
	}
}

func benchSession(b *testing.B, mode string) *sandbox.Session {
	b.Helper()
	dir := b.TempDir()
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil { // the desks' user passes through
		b.Fatal(err)
	}
	cfg := sandbox.Config{DataDir: dir, Mode: mode, Network: true}
	m, err := sandbox.NewManager(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	s, err := m.Session("bench")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Run(b.Context(), "true"); err != nil { // start the shell outside the timing
		b.Fatal(err)
	}
	return s
}

// pipeFloor is the least a persistent shell can cost per command: one write
// to a running bash and one line read back.
type pipeFloor struct {
	b   *testing.B
	in  io.Writer
	out *bufio.Reader
}

func newPipeFloor(b *testing.B) *pipeFloor {
	b.Helper()
	cmd := exec.Command("bash", "--noprofile", "--norc")
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); cmd.Wait() })
	return &pipeFloor{b: b, in: in, out: bufio.NewReader(out)}
}

func (p *pipeFloor) roundTrip() {
	if _, err := io.WriteString(p.in, "echo x\n"); err != nil {
		p.b.Fatal(err)
	}
	if line, err := p.out.ReadString('\n'); err != nil || line != "x\n" {
		p.b.Fatalf("floor: %q, %v", line, err)
	}
}
