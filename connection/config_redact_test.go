package connection_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.yaml.in/yaml/v3"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/supervisor"
)

// Every way a Config leaves the program, JSON, YAML or a zap field,
// redacts the credentials of its server URLs and its Auth.
func TestConfigOutputIsRedacted(t *testing.T) {
	cfg := connection.Config{
		Servers: []string{"nats://alice:Pa,ssW0rd@host1:4222", "nats://s3cr3tT0ken@host2:4222"},
		Auth:    connection.AuthConfig{User: "bob", Password: "pw-ABC", Token: "tok-XYZ"},
		Events:  supervisor.Events{Hook: func(supervisor.Event) {}},
	}
	secrets := []string{"Pa,ssW0rd", "Pa%2CssW0rd", "s3cr3tT0ken", "pw-ABC", "tok-XYZ"}
	type holder struct{ Connection connection.Config }

	encodings := map[string]func() (string, error){
		"json":        func() (string, error) { return str(json.Marshal(cfg)) },
		"json ptr":    func() (string, error) { return str(json.Marshal(&cfg)) },
		"json nested": func() (string, error) { return str(json.Marshal(holder{cfg})) },
		"yaml":        func() (string, error) { return str(yaml.Marshal(cfg)) },
		"yaml ptr":    func() (string, error) { return str(yaml.Marshal(&cfg)) },
		"yaml nested": func() (string, error) { return str(yaml.Marshal(holder{cfg})) },
	}
	for name, field := range map[string]zap.Field{
		"zap.Any": zap.Any("cfg", cfg), "zap.Any ptr": zap.Any("cfg", &cfg), "zap.Object": zap.Object("cfg", cfg),
		"zap.Reflect": zap.Reflect("cfg", cfg), "zap.Reflect nested": zap.Reflect("cfg", holder{cfg}),
	} {
		for enc, newEnc := range map[string]func(zapcore.EncoderConfig) zapcore.Encoder{
			"json": zapcore.NewJSONEncoder, "console": zapcore.NewConsoleEncoder,
		} {
			encodings[name+" "+enc] = func() (string, error) {
				var buf bytes.Buffer
				core := zapcore.NewCore(newEnc(zap.NewProductionEncoderConfig()), zapcore.AddSync(&buf), zap.InfoLevel)
				zap.New(core).Info("config", field)
				return buf.String(), nil
			}
		}
	}
	for name, encode := range encodings {
		out, err := encode()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s shows the secret %q:\n%s", name, s, out)
			}
		}
		// The rest is still there, so that redaction is not an error's.
		for _, want := range []string{"alice", "host1:4222", "host2:4222", "bob", "redacted"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s lacks %q:\n%s", name, want, out)
			}
		}
	}

	for name, encode := range map[string]func() (string, error){
		"auth json": func() (string, error) { return str(json.Marshal(cfg.Auth)) },
		"auth yaml": func() (string, error) { return str(yaml.Marshal(cfg.Auth)) },
	} {
		out, err := encode()
		if err != nil || strings.Contains(out, "pw-ABC") || strings.Contains(out, "tok-XYZ") || !strings.Contains(out, "bob") {
			t.Errorf("%s: %v:\n%s", name, err, out)
		}
	}
}

func str(b []byte, err error) (string, error) { return string(b), err }
