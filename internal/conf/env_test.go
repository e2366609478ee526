package conf

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type envConfig struct {
	Name    string             `yaml:"name"`
	Wait    time.Duration      `yaml:"wait"`
	Size    ByteSize           `yaml:"size"`
	List    []string           `yaml:"list"`
	Entries map[string]section `yaml:"entries"`
}

func TestApplyEnvSetsFieldsAndKeys(t *testing.T) {
	cfg := envConfig{Entries: map[string]section{"a-b": {Workers: 1}}}
	keys, err := ApplyEnv(&cfg, "X", []string{
		"X_NAME=one", "X_NAME=two", "X_WAIT=2s", "X_SIZE=1KiB", "X_LIST=a, b", "X_ENTRIES_A_B_WORKERS=4",
		"X_ENTRIES_A_B_RESTART_BACKOFF=1s", "Y_NAME=other", "X=",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := envConfig{Name: "two", Wait: 2 * time.Second, Size: 1024, List: []string{"a", "b"},
		Entries: map[string]section{"a-b": {Workers: 4, Restart: policy{Backoff: time.Second}}}}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("got %+v, want %+v", cfg, want)
	}
	for _, k := range []string{"name", "wait", "entries", "entries.a-b", "entries.a-b.workers", "entries.a-b.restart.backoff"} {
		if !keys[k] {
			t.Errorf("key %s not recorded: %v", k, keys)
		}
	}
}

// With any mistake every one is reported and nothing is set.
func TestApplyEnvReportsEveryMistakeAndSetsNothing(t *testing.T) {
	cfg := envConfig{Entries: map[string]section{"a": {Workers: 1}}}
	_, err := ApplyEnv(&cfg, "X", []string{
		"X_NAME=set", "X_WAIT=soon", "X_SIZE=lots", "X_ENTRIES=x", "X_ENTRIES_A_EXTRA=x", "X_ENTRIES_NEWNAME_WORKERS=2", "X_NAEM=x",
	})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("got %v, want ErrInvalid", err)
	}
	for _, s := range []string{
		"X_WAIT: want a duration", `X_SIZE: size "lots"`, "X_ENTRIES: names entries, whose entries' fields are set one by one",
		"X_ENTRIES_A_EXTRA: this field cannot be set from the environment", "X_ENTRIES_NEWNAME_WORKERS: names no field, nor an entry of entries",
		"X_NAEM: names no field (did you mean X_NAME?)",
	} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if cfg.Name != "" || len(cfg.Entries) != 1 {
		t.Errorf("set despite mistakes: %+v", cfg)
	}
}

// The variables Kubernetes sets for a Service named like the prefix are
// passed over, not reported as names of no field.
func TestApplyEnvPassesOverServiceLinks(t *testing.T) {
	var cfg envConfig
	_, err := ApplyEnv(&cfg, "X", []string{
		"X_SERVICE_HOST=10.0.0.1", "X_SERVICE_PORT=4222", "X_SERVICE_PORT_CLIENT=4222", "X_PORT=tcp://10.0.0.1:4222",
		"X_PORT_4222_TCP=tcp://10.0.0.1:4222", "X_PORT_4222_TCP_PROTO=tcp", "X_NAME=set",
	})
	if err != nil || cfg.Name != "set" {
		t.Fatalf("ApplyEnv: %v, name %q: want the service links passed over and X_NAME set", err, cfg.Name)
	}
}
