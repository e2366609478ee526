package subject

import "testing"

func TestValidate(t *testing.T) {
	tests := []struct {
		s         string
		wildcards bool
		ok        bool
	}{
		{"orders", false, true}, {"orders.created", false, true}, {"orders.*", true, true},
		{"orders.>", true, true}, {"*.x.>", true, true}, {"orders.*", false, false},
		{"", true, false}, {"a..b", true, false}, {".a", true, false}, {"a.", true, false},
		{"a.>.b", true, false}, {"a.b*", true, false}, {"a b", true, false}, {"a\tb", false, false},
	}
	for _, tt := range tests {
		if err := Validate(tt.s, tt.wildcards); (err == nil) != tt.ok {
			t.Errorf("Validate(%q, %v): got %v", tt.s, tt.wildcards, err)
		}
	}
	for q, ok := range map[string]bool{"workers": true, "": false, "a b": false, "q.*": false} {
		if err := ValidateQueue(q); (err == nil) != ok {
			t.Errorf("ValidateQueue(%q): got %v", q, err)
		}
	}
}

func TestValidBucket(t *testing.T) {
	for name, ok := range map[string]bool{
		"settings": true, "a-b_C9": true, "": false, "a.b": false, "a b": false, "a*": false, "a>": false, "ü": false,
	} {
		if err := ValidBucket(name); (err == nil) != ok {
			t.Errorf("ValidBucket(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}
