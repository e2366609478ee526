package connection

import (
	"encoding/json"
	"reflect"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
)

// Every way out of a Config redacts its credentials: Format (fmt),
// MarshalJSON (encoding/json, and zap's reflected fields), MarshalYAML
// and MarshalLogObject (zap.Any, zap.Object). Each goes through a view
// without the methods, so that encoding it does not come back here.

// configView is a Config as it may be shown: its server URLs' credentials
// redacted; its Auth redacts itself, and the fields set in code are
// tagged out.
type configView Config

func (c Config) view() configView {
	v := configView(c)
	v.Servers = RedactAll(c.Servers)
	return v
}

// MarshalJSON encodes c with the credentials of its server URLs and Auth
// redacted; the fields set in code (Events, Options, Embedded) are left
// out.
func (c Config) MarshalJSON() ([]byte, error) { return json.Marshal(c.view()) }

// MarshalYAML encodes c as its yaml tags name its fields, with the
// credentials of its server URLs and Auth redacted.
func (c Config) MarshalYAML() (any, error) { return c.view(), nil }

// MarshalLogObject adds c's fields to a zap log entry, named as in YAML,
// with the credentials of its server URLs and Auth redacted.
func (c Config) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	v := reflect.ValueOf(c.view())
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		var err error
		switch f := v.Field(i).Interface().(type) {
		case time.Duration:
			enc.AddDuration(name, f)
		case zapcore.ObjectMarshaler:
			err = enc.AddObject(name, f)
		default:
			err = enc.AddReflected(name, f)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// authView is an AuthConfig as it may be shown: its token and password
// replaced by "redacted" when set.
type authView AuthConfig

func (a AuthConfig) view() authView {
	v := authView(a)
	v.Token, v.Password = redactSecret(a.Token), redactSecret(a.Password)
	return v
}

// MarshalJSON encodes a with its token and password redacted.
func (a AuthConfig) MarshalJSON() ([]byte, error) { return json.Marshal(a.view()) }

// MarshalYAML encodes a with its token and password redacted.
func (a AuthConfig) MarshalYAML() (any, error) { return a.view(), nil }

// MarshalLogObject adds a's fields to a zap log entry, its token and
// password redacted.
func (a AuthConfig) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	v := a.view()
	enc.AddString("token", v.Token)
	enc.AddString("user", v.User)
	enc.AddString("password", v.Password)
	enc.AddString("nkey_seed_file", v.NKeySeedFile)
	enc.AddString("creds_file", v.CredsFile)
	return nil
}
