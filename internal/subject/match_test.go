package subject

import "testing"

func TestSubset(t *testing.T) {
	for _, tc := range []struct {
		pattern, of string
		want        bool
	}{
		{"orders.new", "orders.>", true},
		{"orders.*", "orders.>", true},
		{"orders.>", "orders.>", true},
		{"orders.>", "orders.*", false},
		{"orders.a.b", "orders.*", false},
		{"orders.a", "orders.*", true},
		{"orders.*", "orders.a", false},
		{"orders", "orders.>", false},
		{"orders.a", "orders.a.b", false},
		{"billing.a", "orders.>", false},
		{"*.a", "orders.a", false},
		{">", ">", true},
		{"a.b", ">", true},
	} {
		if got := Subset(tc.pattern, tc.of); got != tc.want {
			t.Errorf("Subset(%q, %q) = %v, want %v", tc.pattern, tc.of, got, tc.want)
		}
	}
}

func TestOverlap(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"orders.>", "orders.new", true},
		{"orders.*", "orders.new", true},
		{"orders.*", "orders.a.b", false},
		{"orders.>", "billing.>", false},
		{"*.new", "orders.*", true},
		{"orders", "orders.>", false},
		{">", "x", true},
		{"a.b", "a.b", true},
		{"a.b", "a.c", false},
	} {
		if got := Overlap(tc.a, tc.b); got != tc.want {
			t.Errorf("Overlap(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := Overlap(tc.b, tc.a); got != tc.want {
			t.Errorf("Overlap(%q, %q) = %v, want %v", tc.b, tc.a, got, tc.want)
		}
	}
}
