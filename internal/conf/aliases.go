package conf

import "go.yaml.in/yaml/v3"

// MaxAliasNodes bounds the nodes that aliases (*name) and merge keys
// (<<) may add to a YAML document: each alias read adds the nodes below
// its anchor. yaml.v3 keeps an alias as a pointer, so a few hundred
// bytes of aliases of aliases stand for billions of nodes, and an alias
// inside its own anchor for infinitely many; every walk of the document,
// Corral's checks and the decoding alike, would visit them all. Sharing
// a defaults mapping among a thousand entries adds tens of thousands.
const MaxAliasNodes = 1 << 16

// aliasProblem returns an error naming the alias whose expansion takes
// the nodes aliases add to n past MaxAliasNodes, or nil when they stay
// within it. It visits each node of n once, and at most MaxAliasNodes
// more.
func aliasProblem(n *yaml.Node) error {
	left := MaxAliasNodes
	var over *yaml.Node
	// via is the outermost alias being expanded, nil outside any.
	var walk func(n, via *yaml.Node) bool
	walk = func(n, via *yaml.Node) bool {
		if via != nil {
			if left--; left < 0 {
				over = via
				return false
			}
		}
		if n.Kind == yaml.AliasNode {
			if via == nil {
				via = n
			}
			return n.Alias == nil || walk(n.Alias, via)
		}
		for _, c := range n.Content {
			if !walk(c, via) {
				return false
			}
		}
		return true
	}
	if walk(n, nil) {
		return nil
	}
	p := NewProblems("")
	p.AddLinef("", over.Line, "the alias *%s adds more than %d nodes through aliases and merge keys "+
		"(aliases of aliases, or an alias inside its own anchor): write those values out", over.Value, MaxAliasNodes)
	return p.Err()
}
