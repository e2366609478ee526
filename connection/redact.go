package connection

import "strings"

// Redact returns a server URL safe to log: everything between "://" and
// the last "@" is replaced, whatever it holds (user and password, a token,
// or a secret with characters that confuse URL parsing), keeping only a
// plain user name. Without "://" the part before the last "@" is replaced.
func Redact(s string) string {
	at := strings.LastIndex(s, "@")
	if at < 0 {
		return s
	}
	start := 0
	if i := strings.Index(s, "://"); i >= 0 && i < at {
		start = i + len("://")
	}
	userinfo := s[start:at]
	user, _, hasPassword := strings.Cut(userinfo, ":")
	if hasPassword && user != "" && !strings.ContainsAny(user, "/?#") {
		return s[:start] + user + ":redacted" + s[at:]
	}
	return s[:start] + "redacted" + s[at:]
}

// RedactAll redacts every URL in urls.
func RedactAll(urls []string) []string {
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = Redact(u)
	}
	return out
}
