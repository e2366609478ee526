package connection

import (
	"net/url"
	"slices"
	"strings"
)

// Redact returns a server URL safe to log: everything between "://" and
// the last "@" is replaced, whatever it holds (user and password, a token,
// or a secret with characters that confuse URL parsing), keeping only a
// plain user name. Without "://" the part before the last "@" is replaced.
func Redact(s string) string {
	start, at := userinfoBounds(s)
	if at < 0 {
		return s
	}
	userinfo := s[start:at]
	user, _, hasPassword := strings.Cut(userinfo, ":")
	if hasPassword && user != "" && !strings.ContainsAny(user, "/?#") {
		return s[:start] + user + ":redacted" + s[at:]
	}
	return s[:start] + "redacted" + s[at:]
}

// withoutUserinfo returns a server URL with none of its userinfo, not
// even the user name: nats://127.0.0.1:4222. Status holds URLs so, since
// it is served by the ops endpoints, which have no authentication of
// their own; events and logs keep the user name (Redact).
func withoutUserinfo(s string) string {
	start, at := userinfoBounds(s)
	if at < 0 {
		return s
	}
	return s[:start] + s[at+1:]
}

// allWithoutUserinfo is withoutUserinfo of every URL in urls.
func allWithoutUserinfo(urls []string) []string {
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = withoutUserinfo(u)
	}
	return out
}

// userinfoBounds returns where s's credentials lie, s[start:at]: between
// "://" (or the start) and the last "@". at is -1 when s has no "@".
func userinfoBounds(s string) (start, at int) {
	at = strings.LastIndex(s, "@")
	if at < 0 {
		return 0, -1
	}
	if i := strings.Index(s, "://"); i >= 0 && i < at {
		start = i + len("://")
	}
	return start, at
}

// RedactAll redacts every URL in urls.
func RedactAll(urls []string) []string {
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = Redact(u)
	}
	return out
}

// secrets returns the credentials cfg holds: the password, or the token,
// of every server URL as written and decoded, and Auth's token and
// password. Longest first, so that one holding another is removed whole.
func secrets(cfg Config) []string {
	var out []string
	add := func(s string) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, s := range cfg.Servers {
		start, at := userinfoBounds(s)
		if at < 0 {
			continue
		}
		user, password, ok := strings.Cut(s[start:at], ":")
		if !ok {
			password = user // a token alone
		}
		add(password)
		if p, err := url.PathUnescape(password); err == nil {
			add(p)
		}
		if u, err := url.Parse(s); err == nil && u.User != nil {
			if p, ok := u.User.Password(); ok {
				add(p)
			} else {
				add(u.User.Username())
			}
		}
	}
	add(cfg.Auth.Token)
	add(cfg.Auth.Password)
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// redactErr returns err, or when its text holds one of the configured
// secrets an error reading the same with each replaced by "redacted",
// which unwraps to err so that errors.Is and errors.As still match.
func (s *Supervisor) redactErr(err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	for _, secret := range s.secrets {
		text = strings.ReplaceAll(text, secret, "redacted")
	}
	if text == err.Error() {
		return err
	}
	return &redactedError{text: text, err: err}
}

// redactedError is an error whose text has had its credentials removed.
type redactedError struct {
	text string
	err  error
}

func (e *redactedError) Error() string { return e.text }
func (e *redactedError) Unwrap() error { return e.err }
