package tasks

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxProcessLen is the longest Config.Process a worker takes, in bytes:
// the name goes in a header of every record the worker writes, and
// CheckTask counts it at this length.
const MaxProcessLen = 256

// holder is who holds a task: a worker's lease, which changes with every
// Serve, and the process it runs in, which names it for people.
type holder struct {
	worker  string // the lease's identity, a token of the record's subject
	process string // Config.Process
}

// DefaultProcess returns the name a worker's process goes by when
// Config.Process is empty: "<app>@<host>/<pid>", without "<app>@" when
// app is empty, and without "<host>/" when os.Hostname fails. A part
// that Validate would refuse is made to pass: each byte that is not
// UTF-8 text and each control character becomes '?', white space at
// either end is trimmed, and app, then the host, is cut so that the name
// is at most MaxProcessLen bytes. It asks the operating system each
// time.
func DefaultProcess(app string) string {
	name := strconv.Itoa(os.Getpid())
	if host, err := os.Hostname(); err == nil {
		if host = fitText(host, MaxProcessLen-len(name)-1); host != "" {
			name = host + "/" + name
		}
	}
	if app = fitText(app, MaxProcessLen-len(name)-1); app != "" {
		name = app + "@" + name
	}
	return name
}

// fitText is s as text checkProcess takes, cut to at most n bytes.
func fitText(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = strings.TrimSpace(head(s, max(n, 0)))
	}
	return s
}

// checkProcess returns nil when name can be Config.Process: at most
// MaxProcessLen bytes of UTF-8 text without control characters or white
// space at either end (nats.go trims it from a header value); empty
// stands for DefaultProcess.
func checkProcess(name string) error {
	if len(name) > MaxProcessLen {
		return fmt.Errorf("%q… is %d bytes, the limit is %d", head(name, quoted), len(name), MaxProcessLen)
	}
	if reason := textProblem(name); reason != "" {
		return fmt.Errorf("%q %s", name, reason)
	}
	return nil
}

// textProblem says why s is not text a header carries as it is: not
// UTF-8, with a control character, or with white space at either end
// (nats.go trims ASCII white space from a header value; other white
// space is refused alike, for one rule). It returns "" for text that is.
func textProblem(s string) string {
	if !utf8.ValidString(s) {
		return "is not UTF-8 text"
	}
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		return fmt.Sprintf("has a control character at byte %d", i)
	}
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	if s != "" && (unicode.IsSpace(first) || unicode.IsSpace(last)) {
		return "begins or ends with white space"
	}
	return ""
}
