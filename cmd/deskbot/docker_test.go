package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v4"
)

// Docker cannot run here, so the container files are linted: they must
// parse, build this binary statically, run it as a non-root user with
// bash, bubblewrap and time zone data, and expose the port /healthz is on.

type instruction struct{ cmd, args string }

// mustParseDockerfile joins continuation lines and splits instructions.
func mustParseDockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur string
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if body, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur += body + " "
			continue
		}
		cur += trimmed
		cmd, args, _ := strings.Cut(cur, " ")
		if cmd != strings.ToUpper(cmd) {
			t.Fatalf("%s: %q is not an instruction", path, cmd)
		}
		out = append(out, instruction{cmd, strings.TrimSpace(args)})
		cur = ""
	}
	if cur != "" {
		t.Fatalf("%s ends inside a continued line", path)
	}
	return out
}

func TestDockerfile(t *testing.T) {
	t.Parallel()
	ins := mustParseDockerfile(t, "../../Dockerfile")
	var stages []int
	for i, in := range ins {
		if in.cmd == "FROM" {
			stages = append(stages, i)
		}
	}
	if len(stages) < 2 {
		t.Fatalf("want a multi-stage build, got %d stages", len(stages))
	}
	build, runtime := ins[:stages[len(stages)-1]], ins[stages[len(stages)-1]:]
	find := func(in []instruction, cmd string) []string {
		var out []string
		for _, i := range in {
			if i.cmd == cmd {
				out = append(out, i.args)
			}
		}
		return out
	}
	runs := strings.Join(find(build, "RUN"), "\n")
	if !regexp.MustCompile(`CGO_ENABLED=0 go build .*-o (\S+)/deskbot \./cmd/deskbot`).MatchString(runs) {
		t.Errorf("build stage does not build a static ./cmd/deskbot named deskbot:\n%s", runs)
	}
	copies := strings.Join(find(runtime, "COPY"), "\n")
	if !strings.Contains(copies, "--from=build") || !strings.Contains(copies, "/usr/local/bin/deskbot") {
		t.Errorf("runtime stage does not copy the binary to /usr/local/bin/deskbot: %s", copies)
	}
	if ep := find(runtime, "ENTRYPOINT"); len(ep) != 1 || !strings.Contains(ep[0], "/usr/local/bin/deskbot") {
		t.Errorf("ENTRYPOINT = %v, want the deskbot binary", ep)
	}
	rrun := strings.Join(find(runtime, "RUN"), "\n")
	for _, pkg := range []string{"bash", "bubblewrap", "tzdata"} {
		if !regexp.MustCompile(`apt-get install[^\n]*\b` + pkg + `\b`).MatchString(rrun) {
			t.Errorf("runtime image does not install %s", pkg)
		}
	}
	users := find(runtime, "USER")
	if len(users) == 0 || slices.Contains([]string{"root", "0", "0:0"}, users[len(users)-1]) {
		t.Errorf("runtime runs as %v, want a non-root user", users)
	}
	if u := users[len(users)-1]; !strings.Contains(rrun, "useradd") || !strings.Contains(rrun, u) {
		t.Errorf("USER %s is never created", u)
	}
	env := strings.Join(find(runtime, "ENV"), " ")
	port := regexp.MustCompile(`HTTP_ADDR=0\.0\.0\.0:(\d+)`).FindStringSubmatch(env)
	if port == nil {
		t.Fatalf("runtime ENV does not set HTTP_ADDR to listen beyond loopback: %s", env)
	}
	if !slices.Contains(find(runtime, "EXPOSE"), port[1]) {
		t.Errorf("EXPOSE %v, want %s (HTTP_ADDR)", find(runtime, "EXPOSE"), port[1])
	}
	if hc := strings.Join(find(runtime, "HEALTHCHECK"), ""); !strings.Contains(hc, "127.0.0.1:"+port[1]+"/healthz") {
		t.Errorf("HEALTHCHECK does not ask /healthz on port %s: %s", port[1], hc)
	}
	if !strings.Contains(rrun, "curl") {
		t.Error("HEALTHCHECK uses curl, which the runtime image does not install")
	}
}

func TestCompose(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Build       any               `yaml:"build"`
			Command     []string          `yaml:"command"`
			EnvFile     any               `yaml:"env_file"`
			Environment map[string]string `yaml:"environment"`
			Volumes     []string          `yaml:"volumes"`
			Ports       []string          `yaml:"ports"`
			DependsOn   any               `yaml:"depends_on"`
			SecurityOpt []string          `yaml:"security_opt"`
			Devices     []string          `yaml:"devices"`
		} `yaml:"services"`
		Volumes map[string]any `yaml:"volumes"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("docker-compose.yml does not parse: %v", err)
	}
	redis, ok := c.Services["redis"]
	if !ok {
		t.Fatal("no redis service")
	}
	cmd := strings.Join(redis.Command, " ")
	if !strings.Contains(cmd, "--appendonly yes") || !strings.Contains(cmd, "--requirepass") {
		t.Errorf("redis command %q: want the append-only file on and a password", cmd)
	}
	if len(redis.Volumes) == 0 || !strings.HasSuffix(redis.Volumes[0], ":/data") {
		t.Errorf("redis volumes %v: want a volume on /data", redis.Volumes)
	}
	if _, ok := c.Volumes[strings.Split(redis.Volumes[0], ":")[0]]; !ok {
		t.Errorf("redis volume %q is not declared", redis.Volumes[0])
	}
	d, ok := c.Services["deskbot"]
	if !ok {
		t.Fatal("no deskbot service")
	}
	if d.Build == nil || d.EnvFile != ".env" || d.DependsOn == nil {
		t.Errorf("deskbot service: want build, env_file .env and depends_on redis")
	}
	// The password goes as REDIS_PASSWORD (from .env): inside the URL a
	// "/", "+" or "#" of a random password would break it.
	if u := d.Environment["REDIS_URL"]; !regexp.MustCompile(`^redis://redis:6379(/\d+)?$`).MatchString(u) {
		t.Errorf("REDIS_URL %q: want the redis service, with no password in it", u)
	}
	if _, ok := d.Environment["REDIS_PASSWORD"]; ok {
		t.Errorf("deskbot's REDIS_PASSWORD is set in the compose file; it comes from .env")
	}
	// Docker's default seccomp and AppArmor profiles stop bubblewrap's
	// namespaces; slirp4netns needs the tun device.
	for _, want := range []string{"seccomp=unconfined", "apparmor=unconfined"} {
		if !slices.Contains(d.SecurityOpt, want) {
			t.Errorf("deskbot security_opt %v lacks %s: desks would have no terminal", d.SecurityOpt, want)
		}
	}
	if !slices.ContainsFunc(d.Devices, func(s string) bool { return strings.HasPrefix(s, "/dev/net/tun") }) {
		t.Errorf("deskbot devices %v lack /dev/net/tun: desks would have no network", d.Devices)
	}
	if !strings.Contains(string(data), "# Desks' terminals are bubblewrap sandboxes") {
		t.Errorf("security_opt has no comment saying why")
	}
	addr := d.Environment["HTTP_ADDR"]
	port := addr[strings.LastIndex(addr, ":")+1:]
	if len(d.Ports) == 0 || !strings.HasSuffix(d.Ports[0], ":"+port) {
		t.Errorf("ports %v do not publish HTTP_ADDR's port %s", d.Ports, port)
	}
}

// The compose file's deskbot reaches a model on the host: localhost is the
// container itself, so host.docker.internal must resolve (host-gateway on
// Linux); or a model in an Ollama service of its own, started only with
// its profile and published nowhere.
func TestComposeReachesAModel(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			Image      string   `yaml:"image"`
			Profiles   []string `yaml:"profiles"`
			ExtraHosts []string `yaml:"extra_hosts"`
			Ports      []string `yaml:"ports"`
			Volumes    []string `yaml:"volumes"`
		} `yaml:"services"`
		Volumes map[string]any `yaml:"volumes"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("docker-compose.yml does not parse: %v", err)
	}
	if hosts := c.Services["deskbot"].ExtraHosts; !slices.Contains(hosts, "host.docker.internal:host-gateway") {
		t.Errorf("deskbot extra_hosts %v: want host.docker.internal:host-gateway, or a model on the host is unreachable", hosts)
	}
	o, ok := c.Services["ollama"]
	if !ok {
		t.Fatal("no ollama service")
	}
	if !strings.HasPrefix(o.Image, "ollama/ollama") || !slices.Contains(o.Profiles, "ollama") {
		t.Errorf("ollama service: image %q, profiles %v; want ollama/ollama under the profile ollama (off by default)", o.Image, o.Profiles)
	}
	if len(o.Ports) != 0 {
		t.Errorf("ollama publishes %v: the model needs no port outside the compose network", o.Ports)
	}
	if len(o.Volumes) == 0 || !strings.HasSuffix(o.Volumes[0], ":/root/.ollama") {
		t.Errorf("ollama volumes %v: want the models kept in a volume", o.Volumes)
	} else if _, ok := c.Volumes[strings.Split(o.Volumes[0], ":")[0]]; !ok {
		t.Errorf("ollama volume %q is not declared", o.Volumes[0])
	}
	example, err := os.ReadFile("../../.env.example")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"http://host.docker.internal:11434/v1", "http://ollama:11434/v1"} {
		if !strings.Contains(string(example), want) {
			t.Errorf(".env.example does not say %s", want)
		}
	}
}
