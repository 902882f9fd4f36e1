package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cks-dev/cks/internal/config"
)

const packagingDir = "../../packaging"

// unitExecArgs are the cks arguments of a unit's ExecStart, before "--".
func unitExecArgs(t testing.TB, unit string) []string {
	t.Helper()
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	var args []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			sections[line] = true
		}
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			f := strings.Fields(v)
			if len(f) == 0 || f[0] != "/usr/local/bin/cks" {
				t.Fatalf("%s: ExecStart %q does not run /usr/local/bin/cks", unit, v)
			}
			args = f[1:]
			if i := slices.Index(args, "--"); i >= 0 {
				args = args[:i]
			}
		}
	}
	for _, s := range []string{"[Unit]", "[Service]", "[Install]"} {
		if !sections[s] {
			t.Errorf("%s lacks %s", unit, s)
		}
	}
	if args == nil {
		t.Fatalf("%s has no ExecStart", unit)
	}
	return args
}

// TestSystemdUnits: there is a unit for a hub and for every agent kind
// (the template cks-agent@.service for each kind but exec, whose unit
// names its command); every ExecStart is a cks command that exists (its
// --help exits 0); the environment file names only variables of the
// configuration table; and systemd-analyze verify, where installed, finds
// nothing to say about any unit (pointed at this test's binary).
func TestSystemdUnits(t *testing.T) {
	units, err := filepath.Glob(filepath.Join(packagingDir, "systemd", "*.service"))
	if err != nil || len(units) == 0 {
		t.Fatalf("no units: %v", err)
	}
	var commands [][]string
	for _, u := range units {
		args := unitExecArgs(t, u)
		if strings.Contains(strings.Join(args, " "), "%i") {
			for _, k := range agentKinds() {
				if k != "exec" {
					commands = append(commands, strings.Fields(strings.ReplaceAll(strings.Join(args, " "), "%i", k)))
				}
			}
			continue
		}
		commands = append(commands, args)
	}
	covered := map[string]bool{}
	for _, c := range commands {
		if res := runCKS(t, nil, append(slices.Clone(c), "--help")...); res.code != 0 {
			t.Errorf("cks %s --help: exit %d %s", strings.Join(c, " "), res.code, res.stderr)
		}
		covered[strings.Join(c[:min(2, len(c))], " ")] = true
	}
	for _, want := range append([]string{"serve"}, agentWords(agentKinds()...)...) {
		if !covered[want] && !covered[strings.Fields(want)[0]] {
			t.Errorf("no unit runs cks %s", want)
		}
	}

	env, err := os.ReadFile(filepath.Join(packagingDir, "systemd", "cks.env"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, s := range config.Table() {
		known[s.Env] = true
	}
	for _, m := range regexp.MustCompile(`(?m)^#? ?(CKS_[A-Z0-9_]+)=`).FindAllStringSubmatch(string(env), -1) {
		if !known[m[1]] {
			t.Errorf("cks.env sets %s, which is not in the configuration table", m[1])
		}
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("no systemd-analyze: the structural checks only")
		return
	}
	dir := t.TempDir()
	envFile, err := filepath.Abs(filepath.Join(packagingDir, "systemd", "cks.env"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, u := range units {
		b, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		// This host has no /usr/local/bin/cks, no user cks and no
		// /etc/cks: the unit as installed, pointed at what exists here.
		s := strings.NewReplacer("/usr/local/bin/cks", cksBin, "/usr/local/libexec/cks/run-task", "/bin/true",
			"/etc/cks/cks.env", envFile, "User=cks", "User=root", "Group=cks", "Group=root").
			Replace(string(b))
		name := filepath.Base(u)
		if strings.HasSuffix(name, "@.service") {
			name = strings.Replace(name, "@.service", "@critic.service", 1)
		}
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	out, err := exec.Command(analyze, append([]string{"verify", "--man=no"}, files...)...).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestDockerfile: the Dockerfile is multi-stage, builds ./cmd/cks static
// (CGO_ENABLED=0) with a Go at least go.mod's, copies only files that
// exist, runs as a non-root user with the data directory a volume, and
// sets only variables of the configuration table. (No image is built: no
// docker daemon where the tests run.)
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(packagingDir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVer := regexp.MustCompile(`(?m)^go (\d+)\.(\d+)`).FindStringSubmatch(string(gomod))
	img := regexp.MustCompile(`(?m)^FROM golang:(\d+)\.(\d+)\S* AS build$`).FindStringSubmatch(df)
	if img == nil || goVer == nil {
		t.Fatalf("no FROM golang:X.Y AS build (%v) or no go directive in go.mod (%v)", img, goVer)
	}
	num := func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x*1000 + y }
	if num(img[1], img[2]) < num(goVer[1], goVer[2]) {
		t.Errorf("the build image's Go %s.%s is older than go.mod's %s.%s", img[1], img[2], goVer[1], goVer[2])
	}
	if n := len(regexp.MustCompile(`(?m)^FROM `).FindAllString(df, -1)); n < 2 {
		t.Errorf("%d stages, want a build stage and a small final one", n)
	}
	for _, want := range []string{"CGO_ENABLED=0 go build", "./cmd/cks", "VOLUME", "EXPOSE 7433", "ENTRYPOINT [\"/usr/local/bin/cks\"]"} {
		if !strings.Contains(df, want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
	if _, err := os.Stat("../../cmd/cks/main.go"); err != nil {
		t.Error(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^COPY (.+)$`).FindAllStringSubmatch(df, -1) {
		f := strings.Fields(m[1])
		if strings.HasPrefix(f[0], "--from=") {
			continue
		}
		for _, src := range f[:len(f)-1] {
			if _, err := os.Stat(filepath.Join("../..", src)); err != nil {
				t.Errorf("COPY %s: %v", src, err)
			}
		}
	}
	user := regexp.MustCompile(`(?m)^USER (\S+)`).FindStringSubmatch(df)
	if user == nil || user[1] == "root" || strings.HasPrefix(user[1], "0") {
		t.Errorf("USER %v: want a non-root user", user)
	}
	known := map[string]bool{}
	for _, s := range config.Table() {
		known[s.Env] = true
	}
	for _, m := range regexp.MustCompile(`(CKS_[A-Z0-9_]+)=`).FindAllStringSubmatch(df, -1) {
		if !known[m[1]] {
			t.Errorf("the Dockerfile sets %s, which is not in the configuration table", m[1])
		}
	}
}
