package subject

import (
	"strings"
	"testing"
	"unicode"
)

// FuzzValidate checks what Validate accepts: it never panics; an accepted
// subject is at most MaxLen bytes, has no whitespace and no empty token;
// a literal one has no wildcard token ("a.b*" is a literal), and with
// wildcards '>' is only ever last and '*' and '>' are whole tokens. The
// subject is pad bytes of 'a' before s, so that small inputs reach the
// length limit (large ones make the fuzzer spend its time minimising).
func FuzzValidate(f *testing.F) {
	for _, s := range []string{"orders", "orders.created", "orders.*", "orders.>", "*.x.>", "a..b", ".a", "a.",
		"a.>.b", "a.b*", "a b", "a\tb", ">", "*", "$KV.settings.feature", "ü.🚀", "a.\x00.b"} {
		f.Add(s, true, uint16(0))
		f.Add(s, false, uint16(0))
	}
	f.Add("", false, uint16(MaxLen))
	f.Add("x", true, uint16(MaxLen))
	f.Add(".>", true, uint16(MaxLen-2))
	f.Fuzz(func(t *testing.T, s string, wildcards bool, pad uint16) {
		s = strings.Repeat("a", int(pad)%(MaxLen+64)) + s
		if Validate(s, wildcards) != nil {
			return
		}
		if len(s) > MaxLen {
			t.Fatalf("accepted %d bytes, over MaxLen %d", len(s), MaxLen)
		}
		if strings.ContainsAny(s, " \t\r\n") {
			t.Fatalf("accepted %q with whitespace", s)
		}
		tokens := strings.Split(s, ".")
		for i, tok := range tokens {
			switch {
			case tok == "":
				t.Fatalf("accepted %q with an empty token", s)
			case !wildcards && (tok == "*" || tok == ">"):
				t.Fatalf("accepted literal %q with a wildcard", s)
			case tok == ">" && i != len(tokens)-1:
				t.Fatalf("accepted %q with '>' before its last token", s)
			case wildcards && tok != "*" && tok != ">" && strings.ContainsAny(tok, "*>"):
				t.Fatalf("accepted %q with a wildcard inside token %q", s, tok)
			}
		}
	})
}

// FuzzValidateQueue checks that an accepted queue group is one token of
// at most MaxLen bytes with no whitespace or wildcard; pad as in
// FuzzValidate.
func FuzzValidateQueue(f *testing.F) {
	for _, q := range []string{"workers", "", "a b", "q.*", "q>", "\r"} {
		f.Add(q, uint16(0))
	}
	f.Add("q", uint16(MaxLen))
	f.Fuzz(func(t *testing.T, q string, pad uint16) {
		q = strings.Repeat("q", int(pad)%(MaxLen+64)) + q
		if ValidateQueue(q) != nil {
			return
		}
		if q == "" || len(q) > MaxLen || strings.ContainsAny(q, " \t\r\n*>") {
			t.Fatalf("accepted queue group %q (%d bytes)", head(q), len(q))
		}
	})
}

// FuzzNames checks that ValidBucket accepts only letters, digits, - and _
// up to MaxBucketLen bytes, and ValidName only names of at most MaxNameLen
// bytes without the characters a stream or consumer name may not hold.
func FuzzNames(f *testing.F) {
	for _, n := range []string{"settings", "a-b_C9", "", "a.b", "a b", "a*", "a>", "ü", "a/b", `a\b`,
		strings.Repeat("n", MaxBucketLen), strings.Repeat("n", MaxNameLen+1)} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if ValidBucket(name) == nil {
			if name == "" || len(name) > MaxBucketLen {
				t.Fatalf("bucket %q of %d bytes accepted", head(name), len(name))
			}
			for _, r := range name {
				if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
					t.Fatalf("bucket %q with %q accepted", name, r)
				}
			}
			if ValidName(name) != nil {
				t.Fatalf("bucket %q accepted but not as a name", name)
			}
		}
		if ValidName(name) == nil && (name == "" || len(name) > MaxNameLen || strings.ContainsAny(name, ".*>/\\") ||
			strings.ContainsFunc(name, unicode.IsSpace)) {
			t.Fatalf("name %q of %d bytes accepted", head(name), len(name))
		}
	})
}
