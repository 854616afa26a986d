package lru

import (
	"hash/maphash"
	"testing"
	"time"
)

// TestPartKeepsTheMostRecent: a part of 2 keeps the two most recently put
// or touched keys, counts what it drops, and updates a key in place.
func TestPartKeepsTheMostRecent(t *testing.T) {
	var p Part[string, int]
	p.Init(2)
	t0 := time.Unix(1796040000, 0)
	p.Put("a", 1, t0)
	p.Put("b", 2, t0)
	p.Touch(p.Find("a"))
	p.Put("c", 3, t0.Add(time.Second)) // drops b, the least recent
	if p.Find("b") != nil || p.Find("a") == nil || p.Find("c") == nil || p.Len() != 2 || p.Evicted() != 1 {
		t.Fatalf("after a, b, touch a, c: b %v, a %v, c %v, len %d, evicted %d", p.Find("b"), p.Find("a"), p.Find("c"), p.Len(), p.Evicted())
	}
	if e := p.Put("a", 10, t0.Add(2*time.Second)); e.Val != 10 || !e.At.Equal(t0.Add(2*time.Second)) || p.Len() != 2 {
		t.Fatalf("update in place: %+v, len %d", e, p.Len())
	}
	var order []string
	p.Each(func(e *Entry[string, int]) { order = append(order, e.Key) })
	if len(order) != 2 || order[0] != "a" || order[1] != "c" {
		t.Fatalf("Each: %v, want [a c]", order)
	}
	p.Remove(p.Find("a"))
	if p.Find("a") != nil || p.Len() != 1 {
		t.Fatalf("after Remove: len %d", p.Len())
	}
	p.Init(p.Max())
	if p.Len() != 0 || p.Evicted() != 1 {
		t.Fatalf("after Init: len %d, evicted %d", p.Len(), p.Evicted())
	}
}

// TestPartOfNothing: a part bounded to 0 keeps nothing.
func TestPartOfNothing(t *testing.T) {
	var p Part[string, int]
	p.Init(PerPart(0, 4))
	if e := p.Put("a", 1, time.Time{}); e != nil || p.Len() != 0 {
		t.Fatalf("a part of 0 kept %v", e)
	}
}

func TestPerPart(t *testing.T) {
	for _, c := range []struct{ total, n, want int }{{0, 32, 0}, {-1, 32, 0}, {1, 32, 1}, {10_000, 32, 313}, {64, 32, 2}} {
		if got := PerPart(c.total, c.n); got != c.want {
			t.Errorf("PerPart(%d, %d) = %d, want %d", c.total, c.n, got, c.want)
		}
	}
}

// TestHashSeparatesThePair: the separator keeps ("ab", "c") and ("a",
// "bc") apart; one seed hashes a pair alike every time.
func TestHashSeparatesThePair(t *testing.T) {
	seed := maphash.MakeSeed()
	if Hash(seed, "ab", "c") == Hash(seed, "a", "bc") {
		t.Error("the pair's halves run together")
	}
	first := Hash(seed, "a", "b")
	if again := Hash(seed, "a", "b"); again != first {
		t.Error("one seed hashes a pair two ways")
	}
}
