package main_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"gopkg.in/yaml.v3"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/bus/bustest"
	"github.com/exocortex/exocortex/internal/system"
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
			stages := append(system.StageNames(), "siyuan", "gateway")
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

// checkNATSConf checks ops/cluster/nats.conf with a node's environment:
// nats-server's configuration test (-t) passes, and nats-server's own
// parser (server.ProcessConfigFile) reads a node locked like the single
// machine: clients over TLS with a user and password, routes over mutual
// TLS asking for the route user and password that the node's route URLs
// carry, monitoring on loopback. The certificate files the environment
// names are stood in for by ones made here.
func checkNATSConf(t *testing.T, server, where string, env map[string]string) {
	t.Helper()
	env = maps.Clone(env)
	ca := bustest.NewCA(t, "placeholder CA")
	env["NATS_TLS_CERT"], env["NATS_TLS_KEY"] = ca.Issue(t, "placeholder-"+env["NATS_NAME"], env["NATS_NAME"], "localhost", "127.0.0.1")
	env["NATS_TLS_CA"] = ca.File
	cmd := exec.Command(server, "-t", "-c", filepath.Join(opsCluster, "nats.conf"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s: nats-server -t on ops/cluster/nats.conf: %v\n%s", where, err, out)
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	opts, err := natsserver.ProcessConfigFile(filepath.Join(opsCluster, "nats.conf"))
	if err != nil {
		t.Errorf("%s: nats.conf: %v", where, err)
		return
	}
	for _, problem := range natsConfProblems(opts) {
		t.Errorf("%s: nats.conf: %s", where, problem)
	}
}

// natsConfProblems are the ways a node's parsed configuration falls short
// of the single machine's rules.
func natsConfProblems(o *natsserver.Options) []string {
	var out []string
	if o.TLSConfig == nil || len(o.TLSConfig.Certificates) == 0 {
		out = append(out, "clients connect without TLS")
	}
	// authorization { user, password } is the single user of Username.
	if o.Username == "" || o.Password == "" || len(o.Users) > 0 || len(o.Nkeys) > 0 || o.Authorization != "" {
		out = append(out, "clients are not asked for one user and password")
	}
	if o.Cluster.Port == 0 || len(o.Routes) != 3 {
		out = append(out, fmt.Sprintf("the cluster listens on port %d with %d routes, want three", o.Cluster.Port, len(o.Routes)))
	}
	if o.Cluster.Username == "" || o.Cluster.Password == "" {
		out = append(out, "routes are not asked for a user and password")
	}
	if o.Cluster.TLSConfig == nil || o.Cluster.TLSConfig.ClientAuth != tls.RequireAndVerifyClientCert || o.Cluster.TLSConfig.RootCAs == nil {
		out = append(out, "routes do not speak mutual TLS with the CA")
	}
	for _, r := range o.Routes {
		pass, _ := r.User.Password()
		if r.User == nil || r.User.Username() != o.Cluster.Username || pass != o.Cluster.Password {
			out = append(out, fmt.Sprintf("route %s does not carry the route user and password the nodes ask for", r.Redacted()))
		}
	}
	if o.HTTPPort == 0 || !bus.IsLoopbackListen(net.JoinHostPort(o.HTTPHost, strconv.Itoa(o.HTTPPort))) {
		out = append(out, fmt.Sprintf("monitoring listens on %s:%d, want loopback", o.HTTPHost, o.HTTPPort))
	}
	if o.HTTPSPort != 0 {
		out = append(out, "monitoring listens on an HTTPS port too")
	}
	return out
}

// TestNATSConfProblemsSeeAnOpenNode makes sure the checks above can fail:
// the cluster file as it was before TLS and route authentication, and a
// monitoring port beyond loopback.
func TestOpsNATSConfProblemsSeeAnOpenNode(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "open.conf")
	write(t, conf, `server_name: n1
listen: 0.0.0.0:4222
authorization { user: exocortex, password: secret0 }
cluster { name: exocortex, listen: 0.0.0.0:6222, routes: [nats://nats-1:6222, nats://nats-2:6222, nats://nats-3:6222] }
http: 0.0.0.0:8222
`)
	opts, err := natsserver.ProcessConfigFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(natsConfProblems(opts), "\n")
	for _, want := range []string{"clients connect without TLS", "routes are not asked for a user and password", "routes do not speak mutual TLS",
		"does not carry the route user", "monitoring listens on 0.0.0.0:8222"} {
		if !strings.Contains(got, want) {
			t.Errorf("an open node: problems %q, want one saying %q", got, want)
		}
	}
}

// isSecret reports whether a variable holds a password, token or key.
func isSecret(name string) bool {
	return strings.Contains(name, "PASSWORD") || strings.HasSuffix(name, "_TOKEN") || strings.HasSuffix(name, "_API_KEY")
}

// checkSecretsInterpolated fails a docker compose environment that writes
// a secret into the file rather than taking it from the operator's
// environment: each secret, and each route URL's password, is ${VAR...}.
func checkSecretsInterpolated(t *testing.T, where string, env map[string]string) {
	t.Helper()
	for k, v := range env {
		if isSecret(k) && !regexp.MustCompile(`^\$\{[A-Z0-9_]+(:[?-][^}]*)?\}$`).MatchString(v) {
			t.Errorf("%s: %s is %q, not ${VARIABLE} from the operator's environment", where, k, v)
		}
		if strings.HasPrefix(k, "NATS_ROUTE_") && strings.Contains(v, "@") && !strings.Contains(v, ":${NATS_ROUTE_PASSWORD") {
			t.Errorf("%s: %s = %q does not take its password from ${NATS_ROUTE_PASSWORD}", where, k, v)
		}
	}
}

// checkTLSClient fails Exocortex settings that reach NATS beyond loopback
// without TLS or without the CA that signed the nodes' certificates.
func checkTLSClient(t *testing.T, where, urls, ca string) {
	t.Helper()
	for _, u := range strings.Split(urls, ",") {
		if !strings.HasPrefix(u, "tls://") {
			t.Errorf("%s: EXOCORTEX_NATS names %s, want tls://", where, u)
		}
	}
	if ca == "" {
		t.Errorf("%s: EXOCORTEX_NATS_TLS_CA is not set: the processes would not trust the nodes' certificates", where)
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
	if len(confVars) < 13 {
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
			Volumes     []string          `yaml:"volumes"`
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
			// Each node's certificate, key and the CA are mounted from
			// make-certs.sh's folder, and no other node's key.
			for k, file := range map[string]string{"NATS_TLS_CERT": name + ".pem", "NATS_TLS_KEY": name + "-key.pem", "NATS_TLS_CA": "ca.pem"} {
				if mount := "./certs/" + file + ":" + svc.Environment[k] + ":ro"; !slices.Contains(svc.Volumes, mount) {
					t.Errorf("%s: %s is %q, but no volume %s", where, k, svc.Environment[k], mount)
				}
			}
			for _, v := range svc.Volumes {
				if strings.Contains(v, "-key.pem") && !strings.HasPrefix(v, "./certs/"+name+"-key.pem:") {
					t.Errorf("%s: mounts another node's key: %s", where, v)
				}
			}
			checkSecretsInterpolated(t, where, svc.Environment)
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
			if urls, ok := svc.Environment["EXOCORTEX_NATS"]; ok {
				checkTLSClient(t, where, urls, svc.Environment["EXOCORTEX_NATS_TLS_CA"])
				if mount := "./certs/ca.pem:" + svc.Environment["EXOCORTEX_NATS_TLS_CA"] + ":ro"; !slices.Contains(svc.Volumes, mount) {
					t.Errorf("%s: EXOCORTEX_NATS_TLS_CA %q is not mounted (want volume %s)", where, svc.Environment["EXOCORTEX_NATS_TLS_CA"], mount)
				}
			}
			checkSecretsInterpolated(t, where, svc.Environment)
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
	checkTLSClient(t, "exocortex.env.example", exoEnvFile["EXOCORTEX_NATS"], exoEnvFile["EXOCORTEX_NATS_TLS_CA"])
	node := readEnv("nats-node.env.example")
	node["NATS_STORE"] = t.TempDir()
	checkNATSConf(t, server, "nats-node.env.example", node)
	for file, vars := range map[string]map[string]string{"exocortex.env.example": exoEnvFile, "nats-node.env.example": node} {
		for k, v := range vars {
			if isSecret(k) && !strings.HasPrefix(v, "changeMe") {
				t.Errorf("%s: %s=%q is not a changeMe... placeholder", file, k, v)
			}
			if u, err := url.Parse(v); strings.HasPrefix(k, "NATS_ROUTE_") && err == nil && u.User != nil {
				if pass, _ := u.User.Password(); pass != node["NATS_ROUTE_PASSWORD"] {
					t.Errorf("%s: %s carries a password other than NATS_ROUTE_PASSWORD", file, k)
				}
			}
		}
	}
	if node["EXOCORTEX_NATS_PASSWORD"] != exoEnvFile["EXOCORTEX_NATS_PASSWORD"] {
		t.Errorf("the node's client password placeholder is not the processes' one")
	}
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

// dockerInstructions are a Dockerfile's instructions, continuation lines
// joined and comments left out.
func dockerInstructions(text string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur.Len() == 0) {
			continue
		}
		if body, more := strings.CutSuffix(trimmed, "\\"); more {
			cur.WriteString(body + " ")
			continue
		}
		cur.WriteString(trimmed)
		out = append(out, strings.TrimSpace(cur.String()))
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, strings.TrimSpace(cur.String()))
	}
	return out
}

var (
	shellSeparators = regexp.MustCompile(`;|&&|\|\||\n`)
	curlOutput      = regexp.MustCompile(`(?:\s-o|--output)\s+"?([^\s"]+)"?`)
	wgetOutput      = regexp.MustCompile(`(?:\s-O|--output-document)\s+"?([^\s"]+)"?`)
	checksumCheck   = regexp.MustCompile(`\bsha(256|384|512)sum\b.*\s(-c|--check)\b`)
	// A command that starts a shell command (or a $(...)), not a package
	// name in apt-get install.
	downloadCommand = regexp.MustCompile(`(^\s*|\$\(\s*|\b(?:then|do|else)\s+)(curl|wget|git\s+clone)\s`)
)

// uncheckedDownloads are a Dockerfile's downloads that nothing checks: an
// ADD from a URL without --checksum=sha256:, and in RUN a curl or wget
// whose output is piped on, or saved to a file that is used before a
// sha256sum/sha512sum -c checks it (or never checked), and git clone.
// Package managers that check signatures or sums of their own (apt-get, go
// mod download against go.sum) are not downloads here.
func uncheckedDownloads(dockerfile string) []string {
	var out []string
	for _, ins := range dockerInstructions(dockerfile) {
		verb, rest, _ := strings.Cut(ins, " ")
		switch strings.ToUpper(verb) {
		case "ADD":
			if strings.Contains(rest, "://") && !strings.Contains(rest, "--checksum=sha256:") {
				out = append(out, "ADD without --checksum=sha256: "+ins)
			}
		case "RUN":
			segments := shellSeparators.Split(rest, -1)
			for i, seg := range segments {
				m := downloadCommand.FindStringSubmatch(seg)
				if m == nil {
					continue
				}
				tool := m[2]
				if strings.HasPrefix(tool, "git") {
					out = append(out, "git clone (no checksum): "+strings.TrimSpace(seg))
					continue
				}
				pipe := strings.Index(seg, "|")
				if pipe > strings.Index(seg, tool) {
					out = append(out, tool+" piped on before any checksum: "+strings.TrimSpace(seg))
					continue
				}
				re := curlOutput
				if tool == "wget" {
					re = wgetOutput
				}
				file := re.FindStringSubmatch(seg)
				if file == nil {
					out = append(out, tool+" without an output file to check: "+strings.TrimSpace(seg))
					continue
				}
				checked := false
				for _, later := range segments[i+1:] {
					if strings.Contains(later, file[1]) {
						checked = checksumCheck.MatchString(later)
						break
					}
				}
				if !checked {
					out = append(out, tool+" to "+file[1]+" used before a checksum check (or never checked): "+strings.TrimSpace(seg))
				}
			}
		}
	}
	return out
}

func TestOpsUncheckedDownloadsFindsEveryDownloadWithoutAChecksum(t *testing.T) {
	for _, tc := range []struct {
		name, dockerfile string
		want             int
	}{
		{"curl piped into tar is unchecked (the Dockerfile before)",
			"RUN apt-get update \\\n && curl -fsSL \"https://github.com/x/ort.tgz\" \\\n    | tar -xz -C /tmp\n", 1},
		{"curl to a file checked with sha256sum -c before use is checked",
			"RUN curl -fsSL -o /tmp/a.tgz https://x/a.tgz; \\\n echo \"abc  /tmp/a.tgz\" | sha256sum -c -; tar -xzf /tmp/a.tgz\n", 0},
		{"curl to a file unpacked before its check is unchecked",
			"RUN curl -fsSL -o /tmp/a.tgz https://x/a.tgz && tar -xzf /tmp/a.tgz && echo \"abc  /tmp/a.tgz\" | sha256sum -c -\n", 1},
		{"wget never checked is unchecked", "RUN wget -O /tmp/b https://x/b && chmod +x /tmp/b\n", 1},
		{"wget checked with sha512sum is checked", "RUN wget -O /tmp/b https://x/b && echo \"abc  /tmp/b\" | sha512sum --check && chmod +x /tmp/b\n", 0},
		{"ADD from a URL without a checksum is unchecked", "ADD https://x/c.tgz /tmp/\n", 1},
		{"ADD from a URL with --checksum is checked", "ADD --checksum=sha256:abc https://x/c.tgz /tmp/\n", 0},
		{"git clone is unchecked", "RUN git clone https://x/repo /src\n", 1},
		{"installing curl with apt-get is not a download", "RUN apt-get install -y ca-certificates curl \\\n && true\n", 0},
		{"a download inside $(...) is one", "RUN v=$(curl -fsSL https://x/v) && echo $v\n", 1},
		{"comments mentioning curl are not downloads", "# curl https://x | sh\nRUN true\n", 0},
		{"apt-get and go mod download check their own", "RUN apt-get update && apt-get install -y curl\nRUN go mod download && go mod verify\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := uncheckedDownloads(tc.dockerfile); len(got) != tc.want {
				t.Errorf("unchecked downloads %q, want %d", got, tc.want)
			}
		})
	}
}

// TestOpsDockerfileChecksEveryDownload: the container build verifies what
// it downloads, and its ONNX Runtime is the version and tarball digest that
// ops/install-onnxruntime.sh pins.
func TestOpsDockerfileChecksEveryDownload(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(opsCluster, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if bad := uncheckedDownloads(string(raw)); len(bad) > 0 {
		t.Errorf("ops/cluster/Dockerfile downloads without a checksum check:\n%s", strings.Join(bad, "\n"))
	}
	script, err := os.ReadFile(filepath.Join("..", "..", "ops", "install-onnxruntime.sh"))
	if err != nil {
		t.Fatal(err)
	}
	pin := func(re, text string) string {
		m := regexp.MustCompile(re).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("no %s", re)
		}
		return m[1]
	}
	if v, want := pin(`(?m)^ARG ORT_VERSION=(\S+)`, string(raw)), pin(`(?m)^readonly DEFAULT_VERSION=(\S+)`, string(script)); v != want {
		t.Errorf("the Dockerfile's ONNX Runtime %s is not install-onnxruntime.sh's %s", v, want)
	}
	if sum, want := pin(`(?m)^ARG ORT_SHA256=(\S+)`, string(raw)), pin(`(?m)^readonly DEFAULT_SHA256=(\S+)`, string(script)); sum != want {
		t.Errorf("the Dockerfile's ONNX Runtime sha256 %s is not install-onnxruntime.sh's %s", sum, want)
	}
	if !strings.Contains(string(raw), "go mod verify") {
		t.Error("the Dockerfile does not run go mod verify after go mod download")
	}
}

// TestOpsMakeCertsMakesACAAndNodeCertificatesOnceAndKeepsThem runs
// ops/cluster/make-certs.sh (it needs openssl, as operators' machines have)
// twice: the first run makes a CA and node certificates good for client
// TLS and mutual route TLS under the node names, localhost, 127.0.0.1 and
// the extra addresses given, keys readable by their owner alone; the second
// keeps every file as it was; asking for a name a certificate lacks stops
// with advice.
func TestOpsMakeCertsMakesACAAndNodeCertificatesOnceAndKeepsThem(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl is not installed")
	}
	dir := filepath.Join(t.TempDir(), "certs")
	run := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(opsCluster, "make-certs.sh"), args...)
		cmd.Env = append(os.Environ(), "CERTS_DIR="+dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	nodes := []string{"nats-1=10.0.0.11,nats-1.lan", "nats-2", "nats-3"}
	out, err := run(nodes...)
	if err != nil {
		t.Fatalf("make-certs.sh: %v\n%s", err, out)
	}
	if !strings.Contains(out, "made the CA") || strings.Count(out, "made node") != 3 {
		t.Errorf("make-certs.sh does not say what it made:\n%s", out)
	}
	before := map[string][]byte{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.pem"))
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		before[filepath.Base(f)] = raw
		st, _ := os.Stat(f)
		if strings.HasSuffix(f, "-key.pem") && st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", filepath.Base(f), st.Mode().Perm())
		}
	}
	if len(before) != 8 {
		t.Fatalf("make-certs.sh wrote %d files, want the CA, three certificates and four keys", len(before))
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(before["ca.pem"]) {
		t.Fatal("ca.pem holds no certificate")
	}
	for _, tc := range []struct{ node, host string }{
		{"nats-1", "nats-1"}, {"nats-1", "nats-1.lan"}, {"nats-1", "10.0.0.11"}, {"nats-1", "127.0.0.1"},
		{"nats-2", "nats-2"}, {"nats-2", "localhost"}, {"nats-3", "127.0.0.1"},
	} {
		pair, err := tls.LoadX509KeyPair(filepath.Join(dir, tc.node+".pem"), filepath.Join(dir, tc.node+"-key.pem"))
		if err != nil {
			t.Fatalf("%s: %v", tc.node, err)
		}
		cert, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if _, err := cert.Verify(x509.VerifyOptions{DNSName: tc.host, Roots: pool, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
				t.Errorf("%s's certificate for %s (usage %v): %v", tc.node, tc.host, usage, err)
			}
		}
	}
	if _, err := natsserver.GenTLSConfig(&natsserver.TLSConfigOpts{CertFile: filepath.Join(dir, "nats-2.pem"), KeyFile: filepath.Join(dir, "nats-2-key.pem"),
		CaFile: filepath.Join(dir, "ca.pem"), Verify: true}); err != nil {
		t.Errorf("nats-server does not load make-certs.sh's files: %v", err)
	}

	out, err = run(nodes...)
	if err != nil || !strings.Contains(out, "kept the CA") || strings.Count(out, "kept node") != 3 || strings.Contains(out, "made") {
		t.Errorf("a second run: %v\n%s", err, out)
	}
	for name, raw := range before {
		if now, _ := os.ReadFile(filepath.Join(dir, name)); !bytes.Equal(now, raw) {
			t.Errorf("a second run changed %s", name)
		}
	}
	out, err = run("nats-2=10.0.0.12")
	if err == nil || !strings.Contains(out, "does not name IP:10.0.0.12") || !strings.Contains(out, "delete") {
		t.Errorf("asking for an address nats-2's certificate lacks: %v\n%s", err, out)
	}
}
