package main_test

import (
	"bufio"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/exocortex/exocortex/internal/pipeline"
)

var opsCluster = filepath.Join("..", "..", "ops", "cluster")

// knownEnv is every EXOCORTEX_* variable the program's source names.
func knownEnv(t *testing.T) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`"(EXOCORTEX_[A-Z0-9_]+)"`)
	out := map[string]bool{}
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllStringSubmatch(string(raw), -1) {
			out[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// cliChecker checks command lines against the binary's own help.
type cliChecker struct {
	t    *testing.T
	help map[string]string
}

func (c *cliChecker) check(where string, args []string) {
	t := c.t
	t.Helper()
	if len(args) == 0 {
		t.Errorf("%s: no command", where)
		return
	}
	name := args[0]
	help, ok := c.help[name]
	if !ok {
		out, err := exec.Command(binary, name, "--help").CombinedOutput()
		if err != nil {
			t.Errorf("%s: exocortex %s --help: %v (not a command?)\n%s", where, name, err, out)
			return
		}
		help = string(out)
		c.help[name] = help
	}
	for i, a := range args[1:] {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		flag, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.Contains(help, "\n  --"+flag+" ") && !strings.Contains(help, "\n  --"+flag+"\n") {
			t.Errorf("%s: exocortex %s has no flag --%s", where, name, flag)
		}
		if flag == "stage" && i+2 < len(args) {
			stages := append(pipeline.StageNames(), "siyuan", "gateway")
			if v := args[i+2]; !slices.Contains(stages, v) && v != "%i" {
				t.Errorf("%s: --stage %s is not a stage (%v)", where, v, stages)
			}
		}
	}
}

// natsConfVars are the variables ops/cluster/nats.conf takes from the
// environment.
func natsConfVars(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(opsCluster, "nats.conf"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		for _, m := range regexp.MustCompile(`\$([A-Z0-9_]+)`).FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// checkNATSConf runs nats-server's configuration test (-t) on
// ops/cluster/nats.conf with env.
func checkNATSConf(t *testing.T, server, where string, env map[string]string) {
	t.Helper()
	cmd := exec.Command(server, "-t", "-c", filepath.Join(opsCluster, "nats.conf"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s: nats-server -t on ops/cluster/nats.conf: %v\n%s", where, err, out)
	}
}

// composeValue stands in for ${VAR:?message} and ${VAR:-default} the way
// docker compose fills them when VAR is set to a token.
func composeValue(v string) string {
	return regexp.MustCompile(`\$\{[A-Z0-9_]+(:[?-][^}]*)?\}`).ReplaceAllString(v, "composeTestValue0")
}

// TestOpsClusterFilesUseRealCommandsFlagsAndSettings checks what cannot be
// run here: every command line of docker-compose.yml and the systemd units
// is a command and flags of this binary, every EXOCORTEX_* variable is one
// the program reads, the images are the versions go.mod pins, and
// nats.conf is valid for nats-server with each node's environment (the
// failover test runs nodes from it).
func TestOpsClusterFilesUseRealCommandsFlagsAndSettings(t *testing.T) {
	env := knownEnv(t)
	cli := &cliChecker{t: t, help: map[string]string{}}
	server := buildNATSServer(t)
	confVars := natsConfVars(t)
	if len(confVars) < 8 {
		t.Fatalf("nats.conf takes %v from the environment", confVars)
	}

	// docker-compose.yml
	raw, err := os.ReadFile(filepath.Join(opsCluster, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
			Build       *struct {
				Context    string `yaml:"context"`
				Dockerfile string `yaml:"dockerfile"`
			} `yaml:"build"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	natsImage := "nats:" + strings.TrimPrefix(moduleVersion(t, "github.com/nats-io/nats-server/v2"), "v") + "-alpine"
	qdrantImage := "qdrant/qdrant:" + moduleVersion(t, "github.com/qdrant/go-client")
	var natsNodes, exoRoles []string
	for name, svc := range compose.Services {
		where := "docker-compose.yml service " + name
		switch {
		case strings.HasPrefix(svc.Image, "nats:"):
			natsNodes = append(natsNodes, name)
			if svc.Image != natsImage {
				t.Errorf("%s: image %s, want %s (go.mod's nats-server)", where, svc.Image, natsImage)
			}
			vals := map[string]string{}
			for _, v := range confVars {
				val, ok := svc.Environment[v]
				if !ok {
					t.Errorf("%s: no %s for nats.conf", where, v)
				}
				vals[v] = composeValue(val)
			}
			if vals["NATS_NAME"] != name {
				t.Errorf("%s: NATS_NAME %q", where, vals["NATS_NAME"])
			}
			vals["NATS_STORE"] = t.TempDir()
			checkNATSConf(t, server, where, vals)
		case strings.HasPrefix(svc.Image, "qdrant/"):
			if svc.Image != qdrantImage {
				t.Errorf("%s: image %s, want %s (go.mod's Qdrant client)", where, svc.Image, qdrantImage)
			}
		case svc.Image == "exocortex":
			exoRoles = append(exoRoles, name)
			if svc.Build == nil {
				t.Errorf("%s: no build", where)
			} else if _, err := os.Stat(filepath.Join(opsCluster, svc.Build.Context, svc.Build.Dockerfile)); err != nil {
				t.Errorf("%s: build: %v", where, err)
			}
			cli.check(where, svc.Command)
			for k, v := range svc.Environment {
				if strings.HasPrefix(k, "EXOCORTEX_") && !env[k] {
					t.Errorf("%s: the program reads no %s", where, k)
				}
				if k == "EXOCORTEX_NATS" && len(strings.Split(v, ",")) != len(natsNodes) && len(strings.Split(v, ",")) != 3 {
					t.Errorf("%s: EXOCORTEX_NATS %q does not name all three nodes", where, v)
				}
			}
			if _, ok := svc.Environment["EXOCORTEX_NATS"]; ok && svc.Environment["EXOCORTEX_REPLICAS"] != "3" {
				t.Errorf("%s: EXOCORTEX_REPLICAS %q, want 3", where, svc.Environment["EXOCORTEX_REPLICAS"])
			}
		default:
			t.Errorf("%s: unexpected image %q", where, svc.Image)
		}
	}
	slices.Sort(natsNodes)
	if !slices.Equal(natsNodes, []string{"nats-1", "nats-2", "nats-3"}) || !slices.Contains(exoRoles, "exocortex") || !slices.Contains(exoRoles, "embed") {
		t.Errorf("docker-compose.yml: NATS nodes %v, Exocortex roles %v", natsNodes, exoRoles)
	}

	// The environment files.
	readEnv := func(file string) map[string]string {
		f, err := os.Open(filepath.Join(opsCluster, file))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		out := map[string]string{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
				out[k] = v
			}
		}
		return out
	}
	exoEnvFile := readEnv("exocortex.env.example")
	for k := range exoEnvFile {
		if !env[k] {
			t.Errorf("exocortex.env.example: the program reads no %s", k)
		}
	}
	node := readEnv("nats-node.env.example")
	node["NATS_STORE"] = t.TempDir()
	checkNATSConf(t, server, "nats-node.env.example", node)
	if node["EXOCORTEX_NATS_USER"] != exoEnvFile["EXOCORTEX_NATS_USER"] {
		t.Errorf("the node's user %q is not the one the processes connect as (%q)", node["EXOCORTEX_NATS_USER"], exoEnvFile["EXOCORTEX_NATS_USER"])
	}

	// The systemd units.
	units, _ := filepath.Glob(filepath.Join(opsCluster, "systemd", "*.service"))
	if len(units) != 3 {
		t.Fatalf("systemd units: %v", units)
	}
	for _, unit := range units {
		raw, err := os.ReadFile(unit)
		if err != nil {
			t.Fatal(err)
		}
		where := filepath.Base(unit)
		var exec string
		for _, line := range strings.Split(string(raw), "\n") {
			if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
				exec = v
			}
		}
		fields := strings.Fields(exec)
		if len(fields) == 0 {
			t.Errorf("%s: no ExecStart", where)
			continue
		}
		switch filepath.Base(fields[0]) {
		case "exocortex":
			if !strings.Contains(string(raw), "EnvironmentFile=/etc/exocortex/exocortex.env") {
				t.Errorf("%s: does not read /etc/exocortex/exocortex.env", where)
			}
			var args []string
			for _, f := range fields[1:] {
				if v, ok := strings.CutPrefix(f, "${"); ok {
					name := strings.TrimSuffix(v, "}")
					if _, ok := exoEnvFile[name]; !ok {
						t.Errorf("%s: ExecStart uses ${%s}, which exocortex.env.example does not set", where, name)
					}
					f = "value"
				}
				if strings.HasPrefix(f, "$") {
					continue // optional flags, split by systemd
				}
				args = append(args, f)
			}
			cli.check(where, args)
		case "nats-server":
			if !strings.Contains(exec, "/etc/exocortex/nats.conf") || !strings.Contains(string(raw), "EnvironmentFile=/etc/exocortex/nats.env") {
				t.Errorf("%s: ExecStart %q", where, exec)
			}
		default:
			t.Errorf("%s: ExecStart runs %s", where, fields[0])
		}
	}
}
