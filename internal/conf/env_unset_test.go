package conf

import (
	"errors"
	"strings"
	"testing"
	"time"
)

type shortPolicy struct {
	Mode    string        `yaml:"mode"`
	Backoff time.Duration `yaml:"backoff"`
}

func (shortPolicy) Shorthand() string { return "mode" }

type unsetConfig struct {
	Name    string          `yaml:"name"`
	Wait    time.Duration   `yaml:"wait"`
	Ratio   *float64        `yaml:"ratio"`
	Waits   []time.Duration `yaml:"waits"`
	List    []string        `yaml:"list"`
	Restart shortPolicy     `yaml:"restart"`
}

// An empty, null or element-less value is an error naming the variable,
// and nothing is set; a string takes ~ as text.
func TestApplyEnvNeverUnsets(t *testing.T) {
	r := 0.5
	file := unsetConfig{Name: "n", Wait: time.Second, Ratio: &r, Waits: []time.Duration{time.Second}, List: []string{"a"}}
	for _, env := range []string{"X_NAME=", "X_WAIT=~", "X_WAIT=null", "X_WAIT=  ", "X_RATIO=~", "X_WAITS=~",
		"X_WAITS=1s,~", "X_LIST=", "X_LIST=,", "X_RESTART=", "X_RESTART_BACKOFF=Null"} {
		cfg := file
		_, err := ApplyEnv(&cfg, "X", []string{env})
		name, _, _ := strings.Cut(env, "=")
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), name+":") {
			t.Errorf("%s: got %v, want an error naming %s", env, err, name)
		}
		if cfg.Name != "n" || cfg.Wait != time.Second || cfg.Ratio != &r || len(cfg.Waits) != 1 || len(cfg.List) != 1 {
			t.Errorf("%s: set despite the error: %+v", env, cfg)
		}
	}
	cfg := file
	if _, err := ApplyEnv(&cfg, "X", []string{"X_NAME=~", "X_LIST=~,null"}); err != nil || cfg.Name != "~" || strings.Join(cfg.List, ",") != "~,null" {
		t.Errorf("strings: got %+v, %v; want ~ and null as text", cfg, err)
	}
}

// A section's shorthand variable sets its field and keeps the others; it
// and the field's own variable together are an error.
func TestApplyEnvShorthand(t *testing.T) {
	cfg := unsetConfig{Restart: shortPolicy{Backoff: time.Second}}
	keys, err := ApplyEnv(&cfg, "X", []string{"X_RESTART=temporary"})
	if err != nil || cfg.Restart != (shortPolicy{Mode: "temporary", Backoff: time.Second}) || !keys["restart.mode"] {
		t.Fatalf("got %+v, %v, keys %v; want mode temporary, backoff kept, restart.mode set", cfg.Restart, err, keys)
	}
	_, err = ApplyEnv(&cfg, "X", []string{"X_RESTART=temporary", "X_RESTART_MODE=transient"})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "X_RESTART_MODE") || !strings.Contains(err.Error(), "X_RESTART ") {
		t.Errorf("both: got %v, want an error naming both", err)
	}
}

// An empty element of a list is an error naming the variable and the
// element, never dropped: a value cut at a comma it held reads so.
func TestApplyEnvRefusesAnEmptyListElement(t *testing.T) {
	for env, element := range map[string]string{
		"X_LIST=a,,b": "element 2 of 3", "X_LIST=a,": "element 2 of 2", "X_LIST= ,a": "element 1 of 2",
		"X_WAITS=1s, ,2s": "element 2 of 3",
	} {
		cfg := unsetConfig{List: []string{"file"}}
		_, err := ApplyEnv(&cfg, "X", []string{env})
		name, _, _ := strings.Cut(env, "=")
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), name+": "+element+" is empty") {
			t.Errorf("%s: got %v, want an error naming %s and its %s", env, err, name, element)
		}
		if len(cfg.List) != 1 || cfg.Waits != nil {
			t.Errorf("%s: set despite the error: %+v", env, cfg)
		}
	}
}
