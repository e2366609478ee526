package connection

import (
	"net/url"
	"strings"
)

// Redact returns a server URL safe to log: a password becomes "redacted",
// and so does a lone user part, which nats URLs use for tokens. A string
// that does not parse is replaced whole, since it may hold anything.
func Redact(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "redacted-url"
	}
	if u.User == nil {
		return u.String()
	}
	if _, hasPassword := u.User.Password(); hasPassword {
		u.User = url.UserPassword(u.User.Username(), "redacted")
	} else {
		u.User = url.User("redacted")
	}
	return u.String()
}

// RedactAll redacts every URL in urls.
func RedactAll(urls []string) []string {
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = Redact(u)
	}
	return out
}
