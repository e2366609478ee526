package corral_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/objectstore"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// A whole Config, its hooks, loggers and clocks set as corral.New sets
// them, marshals to JSON and logs as a zap field, and neither shows a
// secret: both failed with "unsupported type: supervisor.Hook".
func TestConfigMarshalsWithoutSecrets(t *testing.T) {
	t.Parallel()
	secrets := []string{"Pa,ssW0rd", "s3cr3t-token", "hunter2"}
	ev := supervisor.Events{Logger: zap.NewNop(), Hook: func(supervisor.Event) {}, Clock: time.Now}
	sc := stream.Config{Subjects: []string{"orders.>"}, MaxAge: time.Hour}
	cfg := corral.Config{
		Name: "shop",
		Connection: connection.Config{
			Servers: []string{"nats://alice:Pa,ssW0rd@nats-1:4222", "nats://s3cr3t-token@nats-2:4222"},
			Auth:    connection.AuthConfig{User: "bob", Password: "hunter2"},
			Events:  ev,
			Options: []nats.Option{nats.Name("x")},
		},
		Server:  corral.ServerConfig{Port: 4222, Events: ev},
		Streams: map[string]stream.Config{"ORDERS": sc},
		Publisher: publisher.Config{BufferMsgs: 10, Streams: map[string]stream.Config{"ORDERS": sc}, Events: ev,
			OnUndelivered: func(*nats.Msg, error) {}},
		Handlers:     map[string]consumer.Config{"fulfil": {Subject: "orders.new", Workers: 4}},
		KV:           map[string]kv.Config{"carts": {History: 5, Events: ev}},
		ObjectStores: map[string]objectstore.Config{"images": {TTL: time.Hour, Events: ev}},
		Tasks:        map[string]tasks.Config{"emails": {MaxConcurrency: 2, Events: ev}},
		Locks:        map[string]kv.LockConfig{"leader": {Bucket: "locks", Events: ev}},
	}

	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	core, logs := observer.New(zapcore.InfoLevel)
	zap.New(core).Info("config", zap.Any("config", cfg))
	line, err := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()).EncodeEntry(logs.All()[0].Entry, logs.All()[0].Context)
	if err != nil {
		t.Fatalf("zap.Any: %v", err)
	}
	for name, out := range map[string]string{"json": string(data), "zap": line.String()} {
		if strings.Contains(out, "configError") {
			t.Errorf("%s: %s: the config did not encode", name, out)
		}
		if !strings.Contains(out, "nats-1:4222") || !strings.Contains(out, "orders.new") || !strings.Contains(out, "emails") {
			t.Errorf("%s: %s: want the servers, handlers and tasks shown", name, out)
		}
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s shows the secret %q: %s", name, s, out)
			}
		}
	}
}
