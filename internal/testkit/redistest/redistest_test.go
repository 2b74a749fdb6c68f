package redistest_test

import (
	"testing"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
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

func TestRestart(t *testing.T) {
	s, err := redistest.Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if _, err := s.Do("SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Do("GET", "k"); err != nil || got != "" {
		t.Fatalf("after a restart without persistence: GET %q %v", got, err)
	}
	for _, args := range [][]string{{"CONFIG", "SET", "appendfsync", "always"}, {"CONFIG", "SET", "appendonly", "yes"}, {"SET", "k", "kept"}} {
		if got, err := s.Do(args...); err != nil || got != "OK" {
			t.Fatalf("%v: %q %v", args, got, err)
		}
	}
	if err := s.Restart("--appendonly", "yes"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Do("GET", "k"); err != nil || got != "kept" {
		t.Fatalf("after a restart with AOF: GET %q %v", got, err)
	}
}

func TestStartReplica(t *testing.T) {
	m, err := redistest.Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	if _, err := m.Do("SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	r, err := redistest.StartReplica(m)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	if got, err := r.Do("GET", "k"); err != nil || got != "v" {
		t.Fatalf("replica GET %q %v", got, err)
	}
}
