package redistest_test

import (
	"testing"

	"github.com/lockctl/lockctl/internal/redistest"
)

func TestStartStop(t *testing.T) {
	s, err := redistest.Start(&redistest.Options{Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Do("SET", "k", "v"); err != nil || got != "OK" {
		t.Fatalf("SET: %q %v", got, err)
	}
	if got, _ := s.Do("CONFIG", "GET", "save"); got != "2" {
		t.Fatalf("CONFIG GET save array header = %q", got)
	}
	if got, err := s.Do("GET", "k"); err != nil || got != "v" {
		t.Fatalf("GET: %q %v", got, err)
	}
	s.Stop()
	if _, err := s.Do("PING"); err == nil {
		t.Fatal("server still answers after Stop")
	}
}
