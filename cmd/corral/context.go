package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// natsContext is what corral reads of a context of the nats command: a
// JSON file in its context directory.
type natsContext struct {
	URL      string `json:"url"`
	Token    string `json:"token"`
	User     string `json:"user"`
	Password string `json:"password"`
	Creds    string `json:"creds"`
	NKey     string `json:"nkey"`
	Cert     string `json:"cert"`
	Key      string `json:"key"`
	CA       string `json:"ca"`
	// JSDomain and JSAPIPrefix are the JetStream the context reaches.
	JSDomain    string `json:"jetstream_domain"`
	JSAPIPrefix string `json:"jetstream_api_prefix"`
}

// configDir is the nats command's configuration directory.
func configDir(env func(string) string) string {
	if dir := env("XDG_CONFIG_HOME"); dir != "" {
		return filepath.Join(dir, "nats")
	}
	if home := env("HOME"); home != "" {
		return filepath.Join(home, ".config", "nats")
	}
	return ""
}

// loadContext reads the context name, or, without a name, the one the
// nats command has selected (none: an empty context).
func loadContext(name string, env func(string) string) (natsContext, error) {
	dir := configDir(env)
	if dir == "" {
		return natsContext{}, nil
	}
	explicit := name != ""
	if !explicit {
		b, err := os.ReadFile(filepath.Join(dir, "context.txt"))
		if err != nil {
			return natsContext{}, nil // none selected
		}
		name = strings.TrimSpace(string(b))
		if name == "" {
			return natsContext{}, nil
		}
	}
	if strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return natsContext{}, fmt.Errorf("context %q: not a context name", name)
	}
	b, err := os.ReadFile(filepath.Join(dir, "context", name+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return natsContext{}, fmt.Errorf("context %q: no such context in %s", name, filepath.Join(dir, "context"))
	}
	if err != nil {
		return natsContext{}, fmt.Errorf("context %q: %w", name, err)
	}
	var c natsContext
	if err := json.Unmarshal(b, &c); err != nil {
		return natsContext{}, fmt.Errorf("context %q: %w", name, err)
	}
	return c, nil
}

// expand expands a leading ~ in a file's path, as the nats command does.
func expand(path string, env func(string) string) string {
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		return filepath.Join(env("HOME"), rest)
	}
	return path
}
