package subject

import "strings"

// Subset reports whether every subject that pattern matches is also
// matched by of: whether a stream with subject of stores all that a
// consumer filtering on pattern can select.
func Subset(pattern, of string) bool {
	p, o := strings.Split(pattern, "."), strings.Split(of, ".")
	for i, t := range p {
		switch {
		case i >= len(o):
			return false
		case o[i] == ">":
			return true
		case t == ">":
			return false
		case o[i] != "*" && o[i] != t:
			return false
		}
	}
	return len(p) == len(o)
}

// Overlap reports whether some subject is matched by both a and b: two
// streams whose subjects overlap cannot both exist.
func Overlap(a, b string) bool {
	x, y := strings.Split(a, "."), strings.Split(b, ".")
	for i := range min(len(x), len(y)) {
		switch {
		case x[i] == ">" || y[i] == ">":
			return true
		case x[i] != "*" && y[i] != "*" && x[i] != y[i]:
			return false
		}
	}
	return len(x) == len(y)
}
