package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/workers/siyuan"
)

// bridge holds the SiYuan bridge's flags.
type bridge struct {
	url, config, plugin string
}

func (b *bridge) register(fs *flag.FlagSet) {
	fs.StringVar(&b.url, "siyuan", os.Getenv("EXOCORTEX_SIYUAN_URL"),
		"SiYuan kernel to keep the index in step with, such as http://127.0.0.1:6806 (env EXOCORTEX_SIYUAN_URL; the API token from EXOCORTEX_SIYUAN_TOKEN, "+
			"a kernel's access code from EXOCORTEX_SIYUAN_ACCESS_CODE, the reconciliation without /ws every EXOCORTEX_SIYUAN_POLL, default 30s)")
	fs.StringVar(&b.config, "siyuan-config", os.Getenv("EXOCORTEX_SIYUAN_CONFIG"),
		"SiYuan bridge settings, a JSON file (env EXOCORTEX_SIYUAN_CONFIG): url, token_env, include, exclude, plugin_secret_env, plugin_listen, plugin_origins, access_code_env, reconcile, poll")
	fs.StringVar(&b.plugin, "siyuan-plugin-listen", os.Getenv("EXOCORTEX_SIYUAN_PLUGIN_LISTEN"),
		"address of the endpoint the SiYuan plugin forwards events to, such as 127.0.0.1:6808 (needs EXOCORTEX_SIYUAN_PLUGIN_SECRET; "+
			"browser origins allowed to post, comma-separated, from EXOCORTEX_SIYUAN_PLUGIN_ORIGINS, default the kernel URL's)")
}

// bridgeFile is the JSON settings file; secrets come from the environment
// variables it names (token and plugin_secret are read too, for a file
// kept private).
type bridgeFile struct {
	URL             string   `json:"url"`
	Token           string   `json:"token"`
	TokenEnv        string   `json:"token_env"`
	Include         []string `json:"include"`
	Exclude         []string `json:"exclude"`
	PluginSecret    string   `json:"plugin_secret"`
	PluginSecretEnv string   `json:"plugin_secret_env"`
	PluginListen    string   `json:"plugin_listen"`
	PluginOrigins   []string `json:"plugin_origins"`
	AccessCodeEnv   string   `json:"access_code_env"`
	Reconcile       string   `json:"reconcile"`
	Poll            string   `json:"poll"`
}

// apply adds the bridge's configuration to cfg's roles when a kernel is
// configured (up then runs the siyuan role).
func (b *bridge) apply(cfg *system.Config) error {
	sc, err := b.roleConfig()
	if sc != nil {
		cfg.StageConfig = append(cfg.StageConfig, sc)
	}
	return err
}

// roleConfig is the bridge's configuration from the flags, the settings
// file and the environment; nil when no kernel is configured.
func (b *bridge) roleConfig() (*siyuan.RoleConfig, error) {
	var f bridgeFile
	if b.config != "" {
		raw, err := os.ReadFile(b.config)
		if err != nil {
			return nil, fmt.Errorf("--siyuan-config: %w", err)
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, fmt.Errorf("--siyuan-config %s: %w", b.config, err)
		}
	}
	if b.url != "" {
		f.URL = b.url
	}
	if b.plugin != "" {
		f.PluginListen = b.plugin
	}
	if f.URL == "" {
		if b.config != "" {
			return nil, fmt.Errorf("--siyuan-config %s: no url", b.config)
		}
		if b.plugin != "" {
			// The plugin's endpoint is part of the bridge: without it the
			// flag would be silently ignored.
			return nil, fmt.Errorf("--siyuan-plugin-listen %s needs the SiYuan bridge: give --siyuan URL too (the kernel's address, e.g. http://127.0.0.1:6806), or url in --siyuan-config", b.plugin)
		}
		return nil, nil
	}
	sc := &siyuan.RoleConfig{Config: siyuan.Config{URL: f.URL, Token: f.Token, Include: f.Include, Exclude: f.Exclude,
		PluginSecret: f.PluginSecret}, PluginListen: f.PluginListen}
	if f.TokenEnv != "" {
		sc.Token = os.Getenv(f.TokenEnv)
	}
	if sc.Token == "" {
		sc.Token = os.Getenv("EXOCORTEX_SIYUAN_TOKEN")
	}
	if f.PluginSecretEnv != "" {
		sc.PluginSecret = os.Getenv(f.PluginSecretEnv)
	}
	if sc.PluginSecret == "" {
		sc.PluginSecret = os.Getenv("EXOCORTEX_SIYUAN_PLUGIN_SECRET")
	}
	if f.AccessCodeEnv != "" {
		sc.AccessCode = os.Getenv(f.AccessCodeEnv)
	}
	if sc.AccessCode == "" {
		sc.AccessCode = os.Getenv("EXOCORTEX_SIYUAN_ACCESS_CODE")
	}
	sc.PluginOrigins = f.PluginOrigins
	if env := os.Getenv("EXOCORTEX_SIYUAN_PLUGIN_ORIGINS"); env != "" {
		sc.PluginOrigins = strings.Split(env, ",")
	}
	if f.Poll == "" {
		f.Poll = os.Getenv("EXOCORTEX_SIYUAN_POLL")
	}
	if f.Poll != "" {
		d, err := time.ParseDuration(f.Poll)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("SiYuan poll interval %q (poll in the settings file or EXOCORTEX_SIYUAN_POLL) is not a duration such as 30s", f.Poll)
		}
		sc.Poll = d
	}
	if sc.PluginListen != "" && sc.PluginSecret == "" {
		return nil, fmt.Errorf("the SiYuan plugin endpoint needs a shared secret: set EXOCORTEX_SIYUAN_PLUGIN_SECRET (or plugin_secret_env in the settings file)")
	}
	if f.Reconcile != "" {
		d, err := time.ParseDuration(f.Reconcile)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("--siyuan-config %s: reconcile %q is not a duration such as 3m", b.config, f.Reconcile)
		}
		sc.Reconcile = d
	}
	return sc, nil
}
